package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// libvirtdRound is one apply under which libvirtd was killed and brought back.
type libvirtdRound struct {
	n             int
	delay         time.Duration
	finishedFirst bool
	killed        []int // libvirtd pids killed
	restart       string
	// during* are the apply libvirtd was killed under; the embedded outcome is the rerun's.
	duringExit int
	duringErr  string
	duringDur  time.Duration
	outcome
}

func (l libvirtdRound) line() string {
	s := fmt.Sprintf("libvirtd round %d, delay %s: ", l.n, round(l.delay))
	if l.finishedFirst {
		s += "the apply finished before libvirtd was killed; "
	} else {
		s += fmt.Sprintf("killed libvirtd %v, %s; ", l.killed, l.restart)
	}
	s += fmt.Sprintf("the apply exited %d after %s", l.duringExit, round(l.duringDur))
	if l.duringErr != "" {
		s += " [" + l.duringErr + "]"
	}
	return s + "; " + l.outcome.line()
}

// libvirtdScenario kills libvirtd under a rolling replace, brings it back after 3 s, lets the
// apply end as it will, then reruns apply and plan and checks the host. The guests' QEMU
// processes outlive libvirtd; what is measured is how the provider's connection and its
// half-done operations fare.
func (c *chaos) libvirtdScenario(res *results, rng *rand.Rand) {
	for i := 1; i <= c.o.libvirtdRounds; i++ {
		cfg := c.flip()
		label := fmt.Sprintf("libvirtd%d", i)
		l := libvirtdRound{n: i, delay: time.Duration(rng.Int64N(int64(c.rollout) + 1))}
		if err := c.writeConfig(c.roll, cfg); err != nil {
			res.setupErr = err.Error()
			return
		}
		run, err := c.roll.start(label, applyArgs...)
		if err != nil {
			res.setupErr = err.Error()
			return
		}
		select {
		case <-run.done:
			l.finishedFirst = true
		case <-time.After(l.delay):
			killed, zombies := killLibvirtd()
			l.killed = killed
			time.Sleep(3 * time.Second)
			l.restart = c.restartLibvirtd(label)
			if len(zombies) > 0 {
				l.restart = fmt.Sprintf("killed libvirtd %v stayed a zombie (its parent does not reap it), which "+
					"tools/libvirt-up.sh's pgrep may take for a running daemon; %s", zombies, l.restart)
			}
			if len(l.killed) == 0 {
				// A host running libvirt's modular daemons (virtqemud) has no libvirtd to kill:
				// the round then measures nothing and says so.
				l.restart = "no libvirtd process was found to kill; " + l.restart
			}
		}
		r := run.finish(c.o.timeout)
		l.duringExit, l.duringErr, l.duringDur = r.exit, errorText(r.out, 6), r.dur
		if r.timedOut {
			l.duringErr = fmt.Sprintf("killed after %s: %s", c.o.timeout, l.duringErr)
		}
		if err := c.h.reconnect(time.Minute); err != nil {
			l.restart += "; the harness cannot reconnect: " + err.Error()
		}
		rerun := c.roll.apply(c.o.timeout, label+"-rerun")
		l.outcome = c.converge(rerun, "", label, expectation{members: c.o.members})
		res.libvirtd = append(res.libvirtd, l)
		logf("%s", l.line())
	}
}

// killLibvirtd SIGKILLs the libvirtd daemon, found by its pid file and by its exact process name
// (what `pkill -9 -x libvirtd` would match), and waits until it is gone. It kills by pid, never by
// pattern. zombies are killed daemons still in the process table after 5 s.
func killLibvirtd() (killed, zombies []int) {
	pids := map[int]bool{}
	if b, err := os.ReadFile("/var/run/libvirtd.pid"); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			if p, _, ok := readProc(pid); ok && p.comm == "libvirtd" {
				pids[pid] = true
			}
		}
	}
	for _, p := range allProcs() {
		if p.comm == "libvirtd" {
			pids[p.pid] = true
		}
	}
	for pid := range pids {
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed = append(killed, pid)
		}
	}
	sort.Ints(killed)
	// Gone means gone from /proc, not merely dead: tools/libvirt-up.sh asks pgrep whether a
	// libvirtd runs, and pgrep also lists a zombie nobody has reaped yet.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		zombies = nil
		for _, pid := range killed {
			if _, _, ok := readProc(pid); ok {
				zombies = append(zombies, pid)
			}
		}
		if len(zombies) == 0 || time.Now().After(deadline) {
			break
		}
	}
	return killed, zombies
}

// restartLibvirtd runs the harness script, which starts libvirtd when nothing answers. Its output
// goes to a file: the daemons it starts could otherwise hold a pipe open and keep Wait waiting.
func (c *chaos) restartLibvirtd(label string) string {
	log := filepath.Join(c.scratch, label+"-libvirt-up.log")
	f, err := os.Create(log)
	if err != nil {
		return "cannot restart libvirtd: " + err.Error()
	}
	defer f.Close()
	cmd := exec.Command("bash", filepath.Join(c.o.repo, "tools", "libvirt-up.sh"))
	cmd.Env = append(os.Environ(), "VIRT_POOL="+c.pool)
	cmd.Stdout, cmd.Stderr = f, f
	start := time.Now()
	if err := cmd.Run(); err != nil {
		out, _ := os.ReadFile(log)
		return fmt.Sprintf("libvirt-up.sh failed after %s: %v: %s", round(time.Since(start)), err, strings.TrimSpace(string(out)))
	}
	return fmt.Sprintf("libvirtd back after %s", round(time.Since(start)))
}
