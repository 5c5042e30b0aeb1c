package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// workdir is one Terraform working directory: its own configuration and state file, sharing
// the CLI configuration that points terraform at the provider just built.
type workdir struct {
	name string // for log file names: "roll", "writer2"
	dir  string
	env  []string
	mu   sync.Mutex
	seq  int
	// timeout, when set, bounds each command of this directory instead of the one its caller
	// gives (the moves scenario's -move-timeout).
	timeout time.Duration
}

// tfResult is how one terraform command ended. exit is the process's exit code, or -1 when the
// harness killed it (killed) or it ran past -timeout (timedOut, then also killed).
type tfResult struct {
	args     []string
	exit     int
	killed   bool
	timedOut bool
	out      string
	dur      time.Duration
	log      string
	// survivors are processes of the apply (the provider plugin) that outlived the SIGKILL of
	// its process group and had to be killed one by one: the plugin left the group.
	survivors []string
}

// tfRun is a terraform command under way.
type tfRun struct {
	cmd   *exec.Cmd
	args  []string
	log   string
	start time.Time
	done  chan struct{}
	err   error
	mu    sync.Mutex
	res   *tfResult
}

// running holds the process groups of the terraform commands under way, so that a Ctrl-C of the
// harness can kill them: they are in process groups of their own, which the terminal's signal
// does not reach.
var running = struct {
	sync.Mutex
	pgids map[int]bool
}{pgids: map[int]bool{}}

func killAll() {
	running.Lock()
	defer running.Unlock()
	for pgid := range running.pgids {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}

// start runs terraform with args in the directory. Output goes to a log file rather than a pipe:
// a pipe would make Wait wait for every process holding its write end, and the provider plugin is
// such a process until it dies too.
func (w *workdir) start(label string, args ...string) (*tfRun, error) {
	w.mu.Lock()
	w.seq++
	log := filepath.Join(w.dir, "logs", fmt.Sprintf("%03d-%s-%s.log", w.seq, args[0], label))
	w.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(log), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command("terraform", args...)
	cmd.Dir = w.dir
	cmd.Env = w.env
	cmd.Stdout, cmd.Stderr = f, f
	// A process group of its own: SIGKILL to -pgid reaches terraform and the provider plugin it
	// started (go-plugin does not move its plugins to another group), the way a crash of the
	// machine running terraform would take both at once.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r := &tfRun{cmd: cmd, args: args, log: log, start: time.Now(), done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start terraform %s: %w", strings.Join(args, " "), err)
	}
	running.Lock()
	running.pgids[cmd.Process.Pid] = true
	running.Unlock()
	go func() {
		r.err = cmd.Wait()
		running.Lock()
		delete(running.pgids, cmd.Process.Pid)
		running.Unlock()
		close(r.done)
	}()
	return r, nil
}

// finish waits for the command, killing it after timeout, and returns how it ended.
func (r *tfRun) finish(timeout time.Duration) tfResult {
	select {
	case <-r.done:
	case <-time.After(timeout):
		res := r.kill()
		res.timedOut = true
		return res
	}
	return r.result(false, nil)
}

// kill SIGKILLs the command's whole process group, waits until terraform has exited and no
// member of the group is left, and returns how it ended. It is what the chaos is made of.
func (r *tfRun) kill() tfResult {
	pgid := r.cmd.Process.Pid
	// The processes the apply started, taken before the kill, so that one that escaped the
	// process group is still found afterwards.
	before := descendants(pgid)
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-r.done
	var survivors []string
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := groupMembers(pgid)
		for _, p := range before {
			if alive(p.pid) && p.pgid != pgid {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			for _, p := range left {
				survivors = append(survivors, fmt.Sprintf("%s (pid %d) still alive", p.comm, p.pid))
			}
			break
		}
		for _, p := range left {
			if p.pgid != pgid {
				survivors = appendOnce(survivors, fmt.Sprintf("%s (pid %d) was outside the process group", p.comm, p.pid))
			}
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return r.result(true, survivors)
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

func (r *tfRun) result(killed bool, survivors []string) tfResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.res != nil {
		return *r.res
	}
	out, _ := os.ReadFile(r.log)
	res := tfResult{args: r.args, exit: r.cmd.ProcessState.ExitCode(), killed: killed, out: string(out),
		dur: time.Since(r.start), log: r.log, survivors: survivors}
	if killed {
		res.exit = -1
	}
	r.res = &res
	return res
}

// run starts a terraform command and waits for it.
func (w *workdir) run(timeout time.Duration, label string, args ...string) tfResult {
	if w.timeout > 0 {
		timeout = w.timeout
	}
	r, err := w.start(label, args...)
	if err != nil {
		return tfResult{args: args, exit: -1, out: err.Error()}
	}
	return r.finish(timeout)
}

var (
	applyArgs   = []string{"apply", "-auto-approve", "-input=false", "-no-color"}
	destroyArgs = []string{"destroy", "-auto-approve", "-input=false", "-no-color"}
)

func (w *workdir) apply(timeout time.Duration, label string) tfResult {
	return w.run(timeout, label, applyArgs...)
}

func (w *workdir) plan(timeout time.Duration, label string) tfResult {
	return w.run(timeout, label, "plan", "-detailed-exitcode", "-input=false", "-no-color")
}

// applyAfterKill reruns apply after a kill. The local backend locks the state with an OS lock that
// dies with the process, so a stale lock should never block; the lock info file it leaves is
// noted, and if terraform does refuse for a lock, the rerun is repeated with -lock=false (safe
// here: nothing else uses this state) and the note says so.
func (w *workdir) applyAfterKill(timeout time.Duration, label string) (tfResult, string) {
	return w.rerunAfterKill(timeout, label, applyArgs...)
}

// rerunAfterKill runs a terraform command after a kill, as applyAfterKill says.
func (w *workdir) rerunAfterKill(timeout time.Duration, label string, args ...string) (tfResult, string) {
	var notes []string
	if _, err := os.Stat(filepath.Join(w.dir, ".terraform.tfstate.lock.info")); err == nil {
		notes = append(notes, "stale .terraform.tfstate.lock.info left by the kill")
	}
	r := w.run(timeout, label, args...)
	if r.exit != 0 && strings.Contains(r.out, "Error acquiring the state lock") {
		notes = append(notes, "the rerun was refused for the state lock ("+errorText(r.out, 2)+"): reran with -lock=false")
		r = w.run(timeout, label+"-nolock", append(slices.Clone(args), "-lock=false")...)
	} else if len(notes) > 0 {
		notes[0] += ", which did not block the rerun"
	}
	return r, strings.Join(notes, "; ")
}

// sourceLine is terraform's quote of the configuration under a diagnostic ("12: resource …").
var sourceLine = regexp.MustCompile(`^\d+: `)

// errorText is the first Error diagnostic of terraform's output in at most n lines, joined: its
// summary and its detail, without the box drawing around it or the lines that only say where in
// the configuration it points ("with …", "on main.tf line …", the quoted source line).
func errorText(out string, n int) string {
	var lines []string
	in := false
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), "│╷╵"))
		if !in {
			if strings.HasPrefix(l, "Error:") {
				in = true
			} else {
				continue
			}
		}
		if l == "" || strings.HasPrefix(l, "with ") || strings.HasPrefix(l, "on ") && strings.Contains(l, " line ") || sourceLine.MatchString(l) {
			continue
		}
		lines = append(lines, l)
		if len(lines) == n {
			break
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, " / ")
}

// planChanges is what a plan that did not converge wants to change: the resource headers, the
// members' names, the changed attributes and the summary, at most maxLines lines.
func planChanges(out string, maxLines int) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "# (") {
			continue // "# (3 unchanged attributes hidden)"
		}
		if strings.HasPrefix(t, "# ") || strings.HasPrefix(t, "Plan:") || strings.Contains(t, " -> ") || strings.HasPrefix(t, "name ") {
			lines = append(lines, t)
		}
		if len(lines) == maxLines {
			break
		}
	}
	return strings.Join(lines, " / ")
}

// proc is a process as /proc shows it.
type proc struct {
	pid, ppid, pgid int
	comm            string
}

func readProc(pid int) (proc, string, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return proc{}, "", false
	}
	s := string(b)
	// comm is in parentheses and may itself hold spaces or parentheses: the fields after it
	// start after the last ')'.
	lp, rp := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if lp < 0 || rp < lp {
		return proc{}, "", false
	}
	f := strings.Fields(s[rp+1:])
	if len(f) < 3 {
		return proc{}, "", false
	}
	ppid, _ := strconv.Atoi(f[1])
	pgid, _ := strconv.Atoi(f[2])
	return proc{pid: pid, ppid: ppid, pgid: pgid, comm: s[lp+1 : rp]}, f[0], true
}

func allProcs() []proc {
	ents, _ := os.ReadDir("/proc")
	var out []proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		// A zombie is dead and holds nothing; it waits for a parent to reap it.
		if p, state, ok := readProc(pid); ok && state != "Z" {
			out = append(out, p)
		}
	}
	return out
}

func alive(pid int) bool {
	_, state, ok := readProc(pid)
	return ok && state != "Z"
}

func groupMembers(pgid int) []proc {
	var out []proc
	for _, p := range allProcs() {
		if p.pgid == pgid {
			out = append(out, p)
		}
	}
	return out
}

// descendants are the live processes below pid.
func descendants(pid int) []proc {
	procs := allProcs()
	in := map[int]bool{pid: true}
	var out []proc
	for changed := true; changed; {
		changed = false
		for _, p := range procs {
			if in[p.ppid] && !in[p.pid] {
				in[p.pid] = true
				out = append(out, p)
				changed = true
			}
		}
	}
	return out
}
