//go:build linux

package providerdata

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// terraformCommands finds the Terraform processes this provider serves. Terraform starts its
// providers as its children (go-plugin sets TF_PLUGIN_MAGIC_COOKIE for them): the parent. A
// provider Terraform attaches to instead (TF_REATTACH_PROVIDERS: a debugger, or the acceptance
// tests, where the provider runs in the test process) is served to every process whose
// TF_REATTACH_PROVIDERS names addr, the address it serves on.
func terraformCommands(addr string) []command {
	if os.Getenv("TF_PLUGIN_MAGIC_COOKIE") != "" || addr == "" {
		if c, ok := readCommand(os.Getppid()); ok {
			return []command{c}
		}
		return nil
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []command
	needle := []byte(strconv.Quote(addr))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil || !bytes.Contains(env, []byte("TF_REATTACH_PROVIDERS=")) || !bytes.Contains(env, needle) {
			continue
		}
		if c, ok := readCommand(pid); ok {
			out = append(out, c)
		}
	}
	return out
}

// readCommand reads a process's arguments and environment from /proc.
func readCommand(pid int) (command, bool) {
	args, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return command{}, false
	}
	env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	return command{args: nulSplit(args), env: nulSplit(env)}, true
}

func nulSplit(b []byte) []string {
	s := strings.TrimRight(string(b), "\x00")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\x00")
}
