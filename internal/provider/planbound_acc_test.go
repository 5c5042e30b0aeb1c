// This file holds the acceptance tests of issue 43's provider side: a plan with a host that
// accepts and never answers, and the plugin ending when the Terraform that started it is killed.

package provider

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// stalledSocket is a unix socket that accepts every connection and reads what it is sent, and
// never answers: a libvirt daemon (or a proxy in front of one) that stopped forwarding. It is
// closed, with its connections, when the test ends.
func stalledSocket(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "stalled.sock")
	l, err := net.Listen("unix", p)
	if err != nil {
		t.Fatalf("listen on %s: %v", p, err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return // closed
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() { _, _ = io.Copy(io.Discard, c) }()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return p
}

// stalledH3Provider is the multi-host tests' provider block with h3 reached through a socket that
// never answers (stalledSocket), and a host_timeout of 2s.
func stalledH3Provider(socket string) string {
	return fmt.Sprintf(`
provider "virt" {
  host_timeout = "2s"
  host {
    name = "h2"
    uri  = %q
  }
  host {
    name = "h3"
    uri  = %q
  }
}
`, testHostH2URI, "qemu+unix:///session?socket="+socket)
}

// TestAccStatefulGroup_planWithStalledHost is issue 43's third report: with h3 behind a socket
// that accepts and never answers, the refresh and plan of a group over the default host and h3
// return (before, they waited for ever: the socket never answers, so a step that returns is one
// that gave up on h3 within host_timeout), h3's member is UNKNOWN and nothing is planned for it,
// and the default host's members are read and planned as usual: a scale-out places its new
// member there. Once h3 answers again its member is there as it was.
//
// It runs in the serial phase, as TestAccStatefulGroup_applyAfterPlanWithStalledHost does: its
// host_timeout of 2s bounds the default host's readings too, and beside the parallel tests'
// guests booting under TCG the default host once took longer than that to answer (its member
// read UNKNOWN in step 2; a clean clone's testacc, 2026-11-29).
func TestAccStatefulGroup_planWithStalledHost(t *testing.T) {
	name := testPrefix + "stalled"
	socket := stalledSocket(t)
	h3Unknown := map[string]string{"default": "STOPPED", "h3": "UNKNOWN"}
	h3Back := map[string]string{"default": "STOPPED", "h3": "STOPPED"}
	group := func(size int) string {
		return dataPolicyAndInstances + groupConfig(name, size, diskBlocks(8, "data"), `
  running = false
  distribution_policy {
    hosts = ["default", "h3"]
  }
`)
	}
	stalled := func(size int) string { return stalledH3Provider(socket) + group(size) }
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeftOn(t, name, testHostDefault, testHostH3),
		Steps: []resource.TestStep{
			{
				Config: hostsProvider() + group(2),
				Check:  onHosts(t, name, map[string][]string{"default": {name + "-1"}, "h3": {name + "-2"}}),
			},
			{
				// h3 stalls: the refresh reads its member UNKNOWN, and the plan changes nothing.
				Config: stalled(2),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionNoop),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(groupAddr, tfjsonpath.New("instances"), hostsOf(name, h3Unknown, "default", "h3")),
				},
			},
			{
				Config:   stalled(2),
				PlanOnly: true,
			},
			{
				// The default host plans as usual: a scale-out to 3 places member 3 there.
				Config: stalled(3),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(groupAddr, tfjsonpath.New("instances"), hostsOf(name, h3Unknown, "default", "h3", "default")),
				},
				Check: onHosts(t, name, map[string][]string{"default": {name + "-1", name + "-3"}, "h3": {name + "-2"}}),
			},
			{
				// h3 answers again: its member is there as it was.
				Config: hostsProvider() + group(3),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(groupAddr, tfjsonpath.New("instances"), hostsOf(name, h3Back, "default", "h3", "default")),
				},
				Check: onHosts(t, name, map[string][]string{"default": {name + "-1", name + "-3"}, "h3": {name + "-2"}}),
			},
		},
	})
}

// TestAccPlugin_endsWhenTerraformIsKilled is issue 43's second report: after a SIGKILL of
// terraform alone, in the middle of an apply that holds its group's lease, the provider plugin
// terraform started (the binary built from this tree, run through dev_overrides) gives the
// lease back and exits (before, it served nobody for ever). The apply is caught waiting for a
// running member with no OS to shut down (it ignores ACPI, and shutdown_timeout is 10m), which
// it does under the lease.
func TestAccPlugin_endsWhenTerraformIsKilled(t *testing.T) {
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	testAccPreCheck(t)
	name := testPrefix + "orphan"
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	cli := devOverrides(t, buildProvider(t, root))
	tf := terraformBinary(t)
	work := t.TempDir()
	// command runs terraform in work; with logPath, the provider's log goes there.
	command := func(logPath string, args ...string) *exec.Cmd {
		cmd := exec.Command(tf, append(args, "-no-color")...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+cli, "TF_IN_AUTOMATION=1", "TF_INPUT=0", "CHECKPOINT_DISABLE=1")
		if logPath != "" {
			cmd.Env = append(cmd.Env, "TF_LOG_PROVIDER=INFO", "TF_LOG_PATH="+logPath)
		}
		return cmd
	}
	configure := func(running bool, shutdown string) {
		t.Helper()
		cfg := "terraform {\n  required_providers {\n    virt = { source = \"virtfleet/virt\" }\n  }\n}\nprovider \"virt\" {}\n" + groupConfig(name, 1, "", fmt.Sprintf("  running = %v\n  shutdown_timeout = %q\n", running, shutdown))
		if err := os.WriteFile(filepath.Join(work, "main.tf"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		// The destroy stops the member as the state says: with "10m", a guest that ignores ACPI
		// would hold it ten minutes. An apply to "0s" first (it powers the member off at once).
		configure(false, "0s")
		if out, err := command("", "apply", "-auto-approve").CombinedOutput(); err != nil {
			t.Errorf("cleanup: apply: %v\n%s", err, out)
		}
		if out, err := command("", "destroy", "-auto-approve").CombinedOutput(); err != nil {
			t.Errorf("cleanup: destroy: %v\n%s", err, out)
		}
	})
	configure(true, "10m")
	if out, err := command("", "apply", "-auto-approve").CombinedOutput(); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}

	// The stop: terraform is killed once the provider logs the apply's first wave, which runs
	// under the lease. The log is a pipe read as terraform writes it.
	configure(false, "10m")
	logPath := filepath.Join(work, "provider.log")
	if err := syscall.Mkfifo(logPath, 0o600); err != nil {
		t.Fatal(err)
	}
	waved := readLog(t, logPath, "wave 1 of 1")
	cmd := command(logPath, "apply", "-auto-approve")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !<-waved {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("terraform ended without the apply's first wave:\n%s", out.String())
	}
	plugin := childNamed(t, cmd.Process.Pid, "terraform-provi")
	if _, meta, err := reconcile.New(testLibvirt(t)).LoadRecord(context.Background(), name); err != nil || meta.Lease == nil {
		t.Fatalf("the apply holds no lease when terraform is killed (%v)", err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitExit(t, plugin)

	s, meta, err := reconcile.New(testLibvirt(t)).LoadRecord(context.Background(), name)
	if err != nil {
		t.Fatalf("read the group record: %v", err)
	}
	if meta.Lease != nil {
		t.Fatalf("the plugin exited with the lease of %s held: %+v\nterraform's output:\n%s", s.Group.Name, *meta.Lease, out.String())
	}
}

// readLog reads the named pipe at p as a writer fills it, and sends true once a line holds
// want, or false when the writer closes it first. It reads on to the end, so that the writer
// never blocks on it.
func readLog(t *testing.T, p, want string) <-chan bool {
	t.Helper()
	found := make(chan bool, 1)
	go func() {
		f, err := os.Open(p) // waits for the writer
		if err != nil {
			found <- false
			return
		}
		defer f.Close()
		sent := false
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if !sent && strings.Contains(sc.Text(), want) {
				found <- true
				sent = true
			}
		}
		if !sent {
			found <- false
		}
	}()
	return found
}

// childNamed is the pid of the child of parent whose command name (as /proc shows it, at most 15
// bytes) is comm.
func childNamed(t *testing.T, parent int, comm string) int {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		open, closing := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if open < 0 || closing < open {
			continue
		}
		fields := strings.Fields(string(b[closing+1:]))
		if string(b[open+1:closing]) != comm || len(fields) < 2 || fields[1] != strconv.Itoa(parent) {
			continue
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b[:open])))
		return pid
	}
	t.Fatalf("terraform (pid %d) has no child process %q", parent, comm)
	return 0
}

// waitExit waits until process pid has exited, through a pidfd that becomes readable then. It
// gives up after five minutes, far beyond the plugin's grace (30s), so that a plugin that never
// exits fails the test rather than hangs it.
func waitExit(t *testing.T, pid int) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return // gone already
	}
	if err != nil {
		t.Fatalf("pidfd_open %d: %v", pid, err)
	}
	defer unix.Close(fd)
	for {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int((5 * time.Minute).Milliseconds()))
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			t.Fatalf("poll the plugin's pidfd: %v", err)
		case n == 0:
			t.Fatalf("the provider plugin (pid %d) is still running five minutes after terraform was killed", pid)
		}
		return
	}
}
