// Command chaos measures how the provider survives being killed during a rolling REPLACE. It
// builds a stateful group of small stopped-then-running QEMU domains with a preserved data disk
// (delete_rule NEVER), writes a byte pattern into each data disk, then flips the group's boot
// image back and forth under `terraform apply`, SIGKILLing terraform and its provider plugin at
// random points of the rollout. After each kill it reruns apply and plan and checks on the host
// that nothing was lost, orphaned or doubled. Two optional scenarios restart libvirtd under an
// apply and run two Terraform states against one group at once, and one kills applies inside
// the rollback of a rollout whose members never become healthy (update_policy.on_failure). Its teardown kills a first
// `terraform destroy` inside the group's deletion, then checks that the next one finishes and keeps
// every preserved data disk's bytes. It prints a Markdown summary and exits non-zero when an
// invariant broke.
//
// Run it with `make chaos` (50 kills) or `make chaos-short`; everything it creates on libvirt is
// named tfchaos-… and removed at the end.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// shutdownTimeout is what the configuration sets as the group's shutdown_timeout. The guests boot
// no operating system, so they ignore the ACPI power button: without a short timeout every
// member would wait out the 60 s default before it is powered off, and one rollout would take
// minutes. -no-shutdown-timeout leaves the attribute out, for providers that lack it.
const shutdownTimeout = "1s"

// prefix names everything the harness creates on libvirt, so that its sweep can never touch
// anybody else's objects (the acceptance tests use tfacc-). -run-name makes it tfchaos-NAME-, so
// that two runs on one machine never share an object (setNames).
var prefix = "tfchaos-"

// groupName is the group under test; its members are groupName-1 … groupName-M.
var groupName = prefix + "roll"

type options struct {
	kills             int
	rollbackKills     int
	snapshotKills     int
	seed              uint64
	members           int
	skipLibvirtd      bool
	skipWriters       bool
	writerTrials      int
	libvirtdRounds    int
	bin               string
	out               string
	noShutdownTimeout bool
	repo              string
	timeout           time.Duration
	keep              bool
	// The moves scenario (moves.go).
	moveKills   int
	moveMembers int
	moveH2URI   string
	movesOnly   bool
	moveTimeout time.Duration
	// The wire-faults scenario (wire.go).
	wireFaults int
	wireOnly   bool
	wireBudget time.Duration
	wireOps    string // the operations trials draw from, comma-separated ("" is every one)
	// runName tells this run's objects from another run's on the same machine (setNames).
	runName string
}

func parseFlags() options {
	var o options
	flag.IntVar(&o.kills, "kills", 50, "kill points: applies SIGKILLed at a random moment of a rolling REPLACE")
	flag.IntVar(&o.rollbackKills, "rollback-kills", 10, "kill points inside a rollback (update_policy.on_failure = \"ROLLBACK\"); 0 skips the scenario")
	flag.IntVar(&o.snapshotKills, "snapshot-kills", 0, "kill points inside update_policy.snapshot's snapshot, revert, rollback and retention deletion, in turn; 0 skips the scenario")
	seed := flag.Uint64("seed", 0, "random seed (default: time-based, printed)")
	flag.IntVar(&o.members, "members", 3, "members of the group (target_size)")
	flag.BoolVar(&o.skipLibvirtd, "skip-libvirtd", false, "skip the scenario that kills and restarts libvirtd mid-apply")
	flag.BoolVar(&o.skipWriters, "skip-writers", false, "skip the scenario of two Terraform states applying to one group at once")
	flag.IntVar(&o.writerTrials, "writer-trials", 10, "races of two Terraform states applying to one group at once")
	flag.IntVar(&o.libvirtdRounds, "libvirtd-rounds", 3, "repetitions of the libvirtd-restart scenario")
	flag.StringVar(&o.bin, "bin", "./bin", "directory holding the built terraform-provider-virt")
	flag.StringVar(&o.out, "out", "/tmp/virt-chaos.md", "file the Markdown summary is written to")
	flag.BoolVar(&o.noShutdownTimeout, "no-shutdown-timeout", false, "leave shutdown_timeout out of the configuration (for providers without it)")
	flag.StringVar(&o.repo, "repo", ".", "the repository root (for tools/libvirt-up.sh)")
	flag.DurationVar(&o.timeout, "timeout", 15*time.Minute, "longest a single terraform command may run before it is killed and reported")
	flag.BoolVar(&o.keep, "keep", false, "keep the scratch directory (logs, state) even when every check passed")
	flag.IntVar(&o.moveKills, "move-kills", 10, "kill points of the moves scenario: drains between two hosts SIGKILLed at a random moment; 0 skips the scenario")
	flag.IntVar(&o.moveMembers, "move-members", 4, "members of the moves scenario's group")
	flag.StringVar(&o.moveH2URI, "move-h2-uri", "qemu+unix:///session?socket=/run/virt-session/libvirt/libvirt-sock", "URI of the second host of the moves scenario (the harness's session daemon h2), with a pool of the same name as the default host's")
	flag.DurationVar(&o.moveTimeout, "move-timeout", 5*time.Minute, "longest a terraform command of the moves scenario may run before it is killed and reported (a drain of its tiny members takes seconds: one that hangs fails the run sooner than -timeout)")
	flag.BoolVar(&o.movesOnly, "moves-only", false, "run the moves scenario alone (no rolling replace, rollback, libvirtd or writers scenario)")
	flag.IntVar(&o.wireFaults, "wire-faults", 0, "trials of the wire-faults scenario: a fault (stall, timed stall, cut, trickle) injected by a proxy on the provider's libvirt socket under a random operation; 0 skips the scenario")
	flag.DurationVar(&o.wireBudget, "wire-budget", 0, "start no wire-faults trial after this long into the scenario (0: no limit); the summary says how many of -wire-faults ran")
	flag.BoolVar(&o.wireOnly, "wire-only", false, "run the wire-faults scenario alone (no rolling replace, rollback, libvirtd, writers or moves scenario)")
	flag.StringVar(&o.wireOps, "wire-ops", "", "the operations wire-faults trials draw from, comma-separated (default: every one: "+strings.Join(wireOps, ",")+")")
	flag.StringVar(&o.runName, "run-name", "", "name this run's libvirt objects tfchaos-NAME-… instead of tfchaos-…, so that it can run beside another run (1-3 lower-case letters or digits, not img); each run checks and sweeps only its own objects")
	flag.Parse()
	if err := setNames(o.runName); err != nil {
		fatalf("%v", err)
	}
	if _, err := drawnOps(o.wireOps); err != nil {
		fatalf("%v", err)
	}
	o.seed = *seed
	if o.seed == 0 {
		o.seed = uint64(time.Now().UnixNano())
	}
	return o
}

func main() {
	o := parseFlags()
	if o.members < 1 || o.kills < 0 || o.libvirtdRounds < 0 || o.rollbackKills < 0 || o.snapshotKills < 0 || o.moveKills < 0 || o.moveMembers < 1 || o.wireFaults < 0 {
		fatalf("-members and -move-members must be at least 1, -kills, -rollback-kills, -snapshot-kills, -libvirtd-rounds, -move-kills and -wire-faults at least 0")
	}
	var err error
	if o.bin, err = filepath.Abs(o.bin); err != nil {
		fatalf("%v", err)
	}
	if o.repo, err = filepath.Abs(o.repo); err != nil {
		fatalf("%v", err)
	}
	if _, err := os.Stat(filepath.Join(o.bin, "terraform-provider-virt")); err != nil {
		fatalf("no provider binary in %s (run `make build`): %v", o.bin, err)
	}
	logf("seed %d (rerun with -seed %d), %d members, %d kill points", o.seed, o.seed, o.members, o.kills)

	h, err := newChaos(o)
	if err != nil {
		fatalf("%v", err)
	}
	// The terraform processes run in their own process groups, so a Ctrl-C at the terminal does
	// not reach them: the harness kills them and sweeps what they made before it exits.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		logf("%v: killing running terraform processes and sweeping this run's objects (%s)", s, strings.Join(ownNames(), ", "))
		killAll()
		h.sweepAll()
		os.Exit(130)
	}()

	res := h.run()
	report := res.markdown()
	fmt.Println()
	fmt.Print(report)
	if err := os.WriteFile(o.out, []byte(report), 0o644); err != nil {
		logf("cannot write the summary to %s: %v", o.out, err)
	} else {
		logf("summary written to %s", o.out)
	}
	if res.setupErr != "" {
		os.Exit(2)
	}
	if fails := res.failures(); len(fails) > 0 {
		logf("FAIL: %d invariant violations (see the summary)", len(fails))
		os.Exit(1)
	}
	logf("PASS")
}

// run is the whole program after the flags: setup, the kill loop, the scenarios, teardown. A
// failure of setup stops it (nothing can be measured), a failed check never does.
func (c *chaos) run() *results {
	start := time.Now()
	res := &results{opts: c.o, shutdownTimeout: !c.o.noShutdownTimeout}
	defer func() { res.total = time.Since(start) }()
	if c.o.movesOnly {
		if err := c.makeScratch(res); err != nil {
			res.setupErr = err.Error()
			return res
		}
		c.movesScenario(res, rand.New(rand.NewPCG(c.o.seed, c.o.seed^0x5851f42d4c957f2d)))
		c.teardown(res, rand.New(rand.NewPCG(c.o.seed, c.o.seed)))
		return res
	}
	if c.o.wireOnly {
		// The wire group boots no image: its REPLACEs flip the user data.
		if err := c.makeScratch(res); err != nil {
			res.setupErr = err.Error()
			return res
		}
		c.wireScenario(res, rand.New(rand.NewPCG(c.o.seed, c.o.seed^0x2545f4914f6cdd1d)))
		c.teardown(res, rand.New(rand.NewPCG(c.o.seed, c.o.seed)))
		return res
	}
	if err := c.setup(res); err != nil {
		res.setupErr = err.Error()
		logf("setup failed: %v", err)
		c.teardown(res, rand.New(rand.NewPCG(c.o.seed, c.o.seed)))
		return res
	}
	rng := rand.New(rand.NewPCG(c.o.seed, c.o.seed^0x9e3779b97f4a7c15))
	c.killLoop(res, rng)
	if c.o.rollbackKills > 0 {
		c.rollbackScenario(res, rng)
	}
	if c.o.snapshotKills > 0 {
		c.snapshotScenario(res, rng)
	}
	if !c.o.skipLibvirtd {
		c.libvirtdScenario(res, rng)
	}
	if !c.o.skipWriters {
		c.writersScenario(res)
	}
	if c.o.moveKills > 0 {
		c.movesScenario(res, rng)
	}
	if c.o.wireFaults > 0 {
		c.wireScenario(res, rng)
	}
	c.teardown(res, rng)
	return res
}

func logf(format string, args ...any) {
	fmt.Printf("%s chaos: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "chaos: "+format+"\n", args...)
	os.Exit(2)
}

// withTimeout is the context for one round of libvirt inspection calls.
func withTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

// setNames derives every name the run gives libvirt objects from its -run-name. The sweeps and
// checks work by name prefix, so two runs are kept apart only if no name of one begins with a
// name of the other: the default run's names are tfchaos-roll, -move, -wire and -img-, and a
// named run's all begin with tfchaos-NAME-, which none of those begins, nor any other NAME's.
//
// A named run's groups are tfchaos-NAME-r, -m and -w, no longer than the default's: libvirt
// puts a domain's guest agent socket at <daemon's directory>/channel/target/domain-ID-NAME/…, a
// unix socket path has at most 107 bytes, and under the session daemon h2 a member named
// tfchaos-hw-wire-1 broke that limit once domain IDs had two digits ("UNIX socket path … too
// long": it could not start). Hence also at most 3 characters.
func setNames(run string) error {
	if run == "" {
		return nil
	}
	if !runNameRE.MatchString(run) {
		return fmt.Errorf("-run-name %q: want 1-3 lower-case letters or digits (a longer name makes the members' guest agent socket paths too long for libvirt)", run)
	}
	for _, own := range []string{"roll", "move", "wire", "img"} {
		if strings.HasPrefix(run, own) {
			return fmt.Errorf("-run-name %q: it begins with %q, and the default run's sweep of tfchaos-%s… would take this run's objects", run, own, own)
		}
	}
	prefix = "tfchaos-" + run + "-"
	groupName, moveGroup, wireGroup = prefix+"r", prefix+"m", prefix+"w"
	imageNames = [2]string{prefix + "i-a.qcow2", prefix + "i-b.qcow2"}
	return nil
}

var runNameRE = regexp.MustCompile(`^[a-z0-9]{1,3}$`)

// ownNames are the name prefixes of everything this run creates: what its sweeps remove.
func ownNames() []string {
	return []string{groupName, moveGroup, wireGroup, strings.TrimSuffix(imageNames[0], "a.qcow2")}
}
