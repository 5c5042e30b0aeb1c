package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// tfDir is one Terraform working directory of the CLI bench: its configuration, its state, and
// the logs of every command run in it.
type tfDir struct {
	dir string
	env []string
	seq int
	// profiles, when set (-profile), gets a directory per command, named after its log, which the
	// command's processes write their CPU profiles and times to (VIRT_CPUPROFILE_DIR).
	profiles string
}

// tfResult is how one terraform command ended.
type tfResult struct {
	exit     int // -1 when it was killed (at the timeout, or by an interrupt of the bench)
	timedOut bool
	dur      time.Duration
	log      string
	outBytes int64
	// peakKiB is the largest VmHWM/VmRSS seen of the provider plugin processes the command
	// started, plugins how many of them there were (only when the command was watched).
	peakKiB int64
	plugins int
	// cpu is the terraform process's CPU with that of the plugins it waited for; profile its
	// profile directory (with -profile).
	cpu     time.Duration
	profile string
}

// terraformBin is the terraform the bench runs (-terraform).
var terraformBin = "terraform"

// interrupted is set by the bench's first SIGINT or SIGTERM: the command under way is killed, no
// other starts, and the bench sweeps what it made and exits.
var (
	interrupted    atomic.Bool
	errInterrupted = errors.New("interrupted")
)

// current holds the process group of the terraform command under way, so that an interrupt of
// the bench can kill it (it runs in a process group of its own, with the plugin in it).
var current struct {
	sync.Mutex
	pgid int
}

func killCurrent() {
	current.Lock()
	defer current.Unlock()
	if current.pgid > 0 {
		_ = syscall.Kill(-current.pgid, syscall.SIGKILL)
	}
}

// run runs terraform with args in the directory, with output to a log file (a pipe would make
// Wait wait for the plugin too), and kills its process group after timeout. With watch, it
// polls the provider plugin's /proc status while the command runs and keeps the peak memory.
func (w *tfDir) run(label string, timeout time.Duration, watch bool, extraEnv []string, args ...string) (tfResult, error) {
	if interrupted.Load() {
		return tfResult{}, errInterrupted
	}
	w.seq++
	log := filepath.Join(w.dir, "logs", fmt.Sprintf("%02d-%s.log", w.seq, label))
	if err := os.MkdirAll(filepath.Dir(log), 0o755); err != nil {
		return tfResult{}, err
	}
	f, err := os.Create(log)
	if err != nil {
		return tfResult{}, err
	}
	defer f.Close()
	cmd := exec.Command(terraformBin, args...)
	cmd.Dir = w.dir
	cmd.Env = append(append([]string{}, w.env...), extraEnv...)
	var profile string
	if w.profiles != "" {
		profile = filepath.Join(w.profiles, fmt.Sprintf("%s-%02d-%s", filepath.Base(w.dir), w.seq, label))
		if err := os.MkdirAll(profile, 0o755); err != nil {
			return tfResult{}, err
		}
		cmd.Env = append(cmd.Env, "VIRT_CPUPROFILE_DIR="+profile)
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return tfResult{}, fmt.Errorf("start terraform %s: %w", strings.Join(args, " "), err)
	}
	current.Lock()
	current.pgid = cmd.Process.Pid
	current.Unlock()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var watcher *pluginWatch
	if watch {
		watcher = watchPlugins(cmd.Process.Pid)
	}
	res := tfResult{log: log, profile: profile}
	var waitErr error
	select {
	case waitErr = <-done:
		res.dur = time.Since(start)
	case <-time.After(timeout):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		waitErr = <-done
		res.dur = time.Since(start)
		res.exit, res.timedOut = -1, true
	}
	current.Lock()
	current.pgid = 0
	current.Unlock()
	if cmd.ProcessState != nil {
		res.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	if watcher != nil {
		res.peakKiB, res.plugins = watcher.stop()
	}
	if st, err := os.Stat(log); err == nil {
		res.outBytes = st.Size()
	}
	if interrupted.Load() {
		return res, errInterrupted
	}
	if res.exit == 0 && waitErr != nil {
		var ee *exec.ExitError
		if errors.As(waitErr, &ee) {
			res.exit = ee.ExitCode()
		} else {
			return res, waitErr
		}
	}
	return res, nil
}

// tail is the end of a command's log, for error messages.
func (r tfResult) tail(lines int) string {
	b, err := os.ReadFile(r.log)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// pluginWatch polls the /proc status of the provider plugins a terraform process starts. It is
// measurement only: nothing waits for it.
type pluginWatch struct {
	quit chan struct{}
	done chan struct{}
	peak int64
	pids map[int]bool
}

func watchPlugins(tfPID int) *pluginWatch {
	w := &pluginWatch{quit: make(chan struct{}), done: make(chan struct{}), pids: map[int]bool{}}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			for _, pid := range children(tfPID) {
				if !isPlugin(pid) {
					continue
				}
				w.pids[pid] = true
			}
			for pid := range w.pids {
				if kib := peakKiB(pid); kib > w.peak {
					w.peak = kib
				}
			}
			select {
			case <-w.quit:
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

func (w *pluginWatch) stop() (int64, int) {
	close(w.quit)
	<-w.done
	return w.peak, len(w.pids)
}

// children lists the child processes of pid from /proc/<pid>/task/*/children.
func children(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

func isPlugin(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	// comm is the executable's name cut to 15 characters.
	return err == nil && strings.HasPrefix(string(b), "terraform-provi")
}

// peakKiB is the larger of a process's VmHWM and VmRSS, 0 once it has exited.
func peakKiB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	var peak int64
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "VmHWM:") && !strings.HasPrefix(line, "VmRSS:") {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) >= 2 {
			if n, err := strconv.ParseInt(fs[1], 10, 64); err == nil && n > peak {
				peak = n
			}
		}
	}
	return peak
}
