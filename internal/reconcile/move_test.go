package reconcile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// Moves between hosts on fake hosts: the control flow of cold and live moves, and a kill at
// every call of a drain converging on the next apply. The cold path runs end to end on real
// daemons in the acceptance tests; the live path's refusals are only reachable here.

// movedGroup is a group of four running members over h2 and default (db-1 and db-3 on h2), each
// member's data volume holding bytes of its own, and the reconciler with the hosts' URIs.
func movedGroup(t *testing.T) (*Reconciler, map[string]*fake.Backend, engine.GroupState) {
	t.Helper()
	r, fakes := threeHosts()
	r.URIs = map[string]string{"default": "fake:///default", "h2": "fake:///h2", "h3": "fake:///h3"}
	for h, f := range fakes {
		f.HostID = "uuid-" + h
		f.Peers = map[string]*fake.Backend{}
		for other, g := range fakes {
			if other != h {
				f.Peers[r.URIs[other]] = g
			}
		}
	}
	s := spec(4)
	s.Group.Hosts = []string{"h2", "default"}
	s = change(t, r, s)
	if err := r.Apply(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	for _, f := range fakes {
		for key, v := range f.Volumes {
			if strings.HasSuffix(key, "-data.qcow2") {
				v.Data = "the bytes of " + key
			}
		}
	}
	if got := domainsOn(fakes["h2"]); got != "db-1 db-3" {
		t.Fatalf("h2 has %q", got)
	}
	return r, fakes, s
}

// where is, for each member, the hosts that define it and the UUID and data bytes of each copy.
func where(fakes map[string]*fake.Backend) map[string][]string {
	out := map[string][]string{}
	for _, h := range []string{"default", "h2", "h3"} {
		for name, d := range fakes[h].Domains {
			state := "stopped"
			if d.ID >= 0 {
				state = "running"
			}
			data := ""
			if v := fakes[h].Volumes["p/"+name+"-data.qcow2"]; v != nil {
				data = v.Data
			}
			out[name] = append(out[name], fmt.Sprintf("%s %s %s %q", h, d.UUID, state, data))
		}
	}
	return out
}

// leftovers are the member volumes on host that no domain of that host holds.
func leftovers(f *fake.Backend) []string {
	var out []string
	for key := range f.Volumes {
		name := strings.TrimPrefix(key, "p/")
		member := name
		if i := strings.Index(strings.TrimPrefix(name, "db-"), "-"); i >= 0 {
			member = name[:len("db-")+i]
		}
		if _, ok := f.Domains[member]; !ok && strings.HasPrefix(name, "db-") {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// checkDrained checks that every member is on default alone, running, with its UUID and bytes of
// before, no marker in its record, and nothing of it left on h2.
func checkDrained(t *testing.T, fakes map[string]*fake.Backend, before map[string][]string) {
	t.Helper()
	for name, copies := range where(fakes) {
		if len(copies) != 1 || !strings.HasPrefix(copies[0], "default ") {
			t.Errorf("%s is defined on %v, want on default alone", name, copies)
			continue
		}
		was := before[name][0]
		_, wasRest, _ := strings.Cut(was, " ")
		_, rest, _ := strings.Cut(copies[0], " ")
		if strings.Replace(rest, "stopped", "running", 1) != strings.Replace(wasRest, "stopped", "running", 1) || !strings.Contains(rest, "running") {
			t.Errorf("%s is %s, was %s", name, copies[0], was)
		}
		if rec := fakes["default"].Domains[name].Spec.Record.Instance; rec.Move != nil {
			t.Errorf("%s still carries the move %v", name, *rec.Move)
		}
	}
	if got := domainsOn(fakes["h2"]); got != "" {
		t.Errorf("h2 still defines %q", got)
	}
	for _, f := range []string{"h2", "default"} {
		if l := leftovers(fakes[f]); len(l) > 0 {
			t.Errorf("%s has volumes no member holds: %v", f, l)
		}
	}
}

// reloaded is s as the group's record now keeps it: what a new run reads.
func reloaded(t *testing.T, r *Reconciler, s engine.GroupState) engine.GroupState {
	t.Helper()
	st, err := r.Load(context.Background(), s.Group.Name)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func drain(t *testing.T, r *Reconciler, s engine.GroupState, live bool) engine.GroupState {
	t.Helper()
	s.Group.Drain, s.Group.ColdMoves = []string{"h2"}, !live
	return change(t, r, s)
}

func TestApply_drainMovesColdKeepingEveryByte(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, fakes, s := movedGroup(t)
	before := where(fakes)
	s = drain(t, r, s, false)
	p, _, err := r.Preview(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range p.Final {
		if want := "MOVE: h2 -> default (cold)"; (m.Name == "db-1" || m.Name == "db-3") && m.Planned.String() != want {
			t.Errorf("%s planned %q, want %q", m.Name, m.Planned, want)
		}
	}
	if err := r.Apply(ctx, s); err != nil {
		t.Fatal(err)
	}
	checkDrained(t, fakes, before)
	if slices.Contains(fakes["h2"].Log, "migrate db-1") {
		t.Errorf("a cold move migrated: %v", fakes["h2"].Log)
	}
	p, _, err = r.Preview(ctx, s)
	if err != nil || p.Ops() != 0 {
		t.Fatalf("the plan after the drain has %d operations (%v): %v", p.Ops(), err, p.Final)
	}
	s, err = r.Load(ctx, "db")
	if err != nil || s.Placement["db-1"] != "default" || s.Placement["db-3"] != "default" {
		t.Fatalf("placement %v (%v)", s.Placement, err)
	}
}

func TestApply_drainMovesLive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, fakes, s := movedGroup(t)
	before := where(fakes)
	// The seed drive is not migrated: the move copies it. No seed here, so only the disks go.
	s = drain(t, r, s, true)
	if err := r.Apply(ctx, s); err != nil {
		t.Fatal(err)
	}
	checkDrained(t, fakes, before)
	for _, name := range []string{"db-1", "db-3"} {
		if !slices.Contains(fakes["h2"].Log, "migrate "+name) || slices.Contains(fakes["h2"].Log, "shutdown "+name) {
			t.Errorf("%s was not moved live: %v", name, fakes["h2"].Log)
		}
	}
}

// libvirt refuses the live migration (the source's daemon cannot open the target's URI): the
// member moves cold in the same apply, and nothing of it is lost.
func TestApply_liveMoveRefusedGoesCold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, fakes, s := movedGroup(t)
	before := where(fakes)
	refused := errors.New("internal error: unexpected qemu URI path '/system', try qemu:///session")
	fakes["h2"].FailOn["migrate db-1"] = refused
	s = drain(t, r, s, true)
	var warnings []string
	warn := WithWarnings(ctx, func(summary, detail string) { warnings = append(warnings, summary+": "+detail) })
	if err := r.Apply(warn, s); err != nil {
		t.Fatal(err)
	}
	checkDrained(t, fakes, before)
	if len(warnings) != 1 || !strings.Contains(warnings[0], "db-1: live move to host default not possible") || !strings.Contains(warnings[0], refused.Error()) {
		t.Errorf("warnings %q, want one naming db-1 and libvirt's message", warnings)
	}
	if !slices.Contains(fakes["h2"].Log, "shutdown db-1") || slices.Contains(fakes["h2"].Log, "shutdown db-3") {
		t.Errorf("db-1 should have moved cold and db-3 live: %v", fakes["h2"].Log)
	}
}

// A migration whose outcome is unknown (the connection was lost during the call) is not followed
// by a cold copy: the apply stops, and the next one finds the member where it is.
func TestApply_liveMoveOfUnknownOutcomeStops(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, fakes, s := movedGroup(t)
	before := where(fakes)
	lost := &lostMigration{Backend: fakes["h2"]}
	r.Hosts["h2"] = lost
	s = drain(t, r, s, true)
	err := r.Apply(ctx, s)
	if err == nil || !strings.Contains(err.Error(), "outcome is unknown") {
		t.Fatalf("apply: %v", err)
	}
	if slices.Contains(fakes["h2"].Log, "shutdown db-1") {
		t.Fatalf("a cold copy followed a migration of unknown outcome: %v", fakes["h2"].Log)
	}
	r.Hosts["h2"] = fakes["h2"]
	if err := r.Apply(ctx, reloaded(t, r, s)); err != nil {
		t.Fatal(err)
	}
	checkDrained(t, fakes, before)
}

// lostMigration is a host whose migration call loses its connection, the migration having
// happened or not.
type lostMigration struct{ *fake.Backend }

func (l *lostMigration) MigrateLive(ctx context.Context, name string, m backend.Migration) error {
	return errors.New("migrate domain " + name + ": the connection was lost during the migration, whose outcome is unknown")
}

// A kill of the apply at any call of a drain (every later call fails: the process is gone) leaves
// each member whole on one host, and the next apply finishes the drain with every byte kept.
func TestApply_drainKilledAtEveryCallConverges(t *testing.T) {
	t.Parallel()
	for _, live := range []bool{false, true} {
		t.Run(fmt.Sprintf("live=%t", live), func(t *testing.T) { drainKilledAtEveryCall(t, live) })
	}
}

func drainKilledAtEveryCall(t *testing.T, live bool) {
	ctx := context.Background()
	// How many calls an uninterrupted drain makes.
	r, fakes, s := movedGroup(t)
	var mu sync.Mutex
	calls := 0
	count := func(string, string) error { mu.Lock(); calls++; mu.Unlock(); return nil }
	fakes["h2"].Hook, fakes["default"].Hook = count, count
	if err := r.Apply(ctx, drain(t, r, s, live)); err != nil {
		t.Fatal(err)
	}
	total := calls
	if total < 20 {
		t.Fatalf("a drain made only %d calls", total)
	}
	for n := 1; n <= total; n++ {
		r, fakes, s := movedGroup(t)
		before := where(fakes)
		s = drain(t, r, s, live)
		calls, dead := 0, false
		kill := func(op, obj string) error {
			mu.Lock()
			defer mu.Unlock()
			calls++
			if calls >= n {
				dead = true
			}
			if dead {
				return errors.New("killed")
			}
			return nil
		}
		fakes["h2"].Hook, fakes["default"].Hook = kill, kill
		_ = r.Apply(ctx, s)
		fakes["h2"].Hook, fakes["default"].Hook = nil, nil
		// Whole on one host after the kill: no member runs twice, and one copy of it has every
		// byte.
		for name, copies := range where(fakes) {
			running, whole := 0, 0
			for _, c := range copies {
				if strings.Contains(c, " running ") {
					running++
				}
				if strings.HasSuffix(c, fmt.Sprintf("%q", "the bytes of p/"+name+"-data.qcow2")) {
					whole++
				}
			}
			if running > 1 || whole == 0 {
				t.Fatalf("killed at call %d of %d: %s is %v", n, total, name, copies)
			}
		}
		// The next apply is a new run: it reads the group's record, with what the killed run
		// wrote of its inventory.
		if err := r.Apply(ctx, reloaded(t, r, s)); err != nil {
			t.Fatalf("killed at call %d of %d, the next apply: %v", n, total, err)
		}
		checkDrained(t, fakes, before)
		if t.Failed() {
			t.Fatalf("killed at call %d of %d", n, total)
		}
	}
}

// The member's copy on the source of a move was started after the move had checked its copy on
// the target: which copy is the member is the user's to say, and nothing is touched.
func TestApply_finishRefusesARunningSourceCopy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, fakes, s := movedGroup(t)
	s = drain(t, r, s, false)
	// Killed just after db-1's definition on default (its undefinition on h2 never happens).
	dead := false
	fakes["h2"].Hook = func(op, obj string) error {
		if dead || (op == "undefine" && obj == "db-1") {
			dead = true
			return errors.New("killed")
		}
		return nil
	}
	fakes["default"].Hook = func(string, string) error {
		if dead {
			return errors.New("killed")
		}
		return nil
	}
	_ = r.Apply(ctx, s)
	fakes["h2"].Hook, fakes["default"].Hook = nil, nil
	if err := fakes["h2"].StartDomain(ctx, "db-1"); err != nil {
		t.Fatal(err)
	}
	before := where(fakes)
	if len(before["db-1"]) != 2 {
		t.Fatalf("db-1 is %v, want defined on both hosts", before["db-1"])
	}
	err := r.Apply(ctx, s)
	if err == nil || !strings.Contains(err.Error(), "which copy is the member is yours to say") {
		t.Fatalf("apply: %v", err)
	}
	if after := where(fakes); !slices.Equal(after["db-1"], before["db-1"]) {
		t.Fatalf("db-1 was %v, is %v", before["db-1"], after["db-1"])
	}
}

// A live move that a cut-off apply left migrating goes on in libvirt's daemons: the next apply
// reads the group only once the migration ended, so that its plan is made from where the member
// is, not from a member between its hosts.
func TestObserve_waitsForAMigrationACutOffApplyLeft(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, fakes, s := movedGroup(t)
	var slept []time.Duration
	r.Sleep = func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }
	// db-1 carries its live move's marker, and libvirt says it migrates for three more looks.
	d := fakes["h2"].Domains["db-1"]
	d.Spec.Record.Instance.Move = &engine.Move{From: "h2", To: "default", Live: true}
	fakes["h2"].MigrationPolls = map[string]int{"db-1": 3}
	if _, err := r.Observe(ctx, s); err != nil {
		t.Fatal(err)
	}
	if got := fakes["h2"].Calls["migration-running"]; got != 4 || len(slept) != 3 {
		t.Fatalf("asked %d times and slept %v; want 4 asks, 3 waits", got, slept)
	}
	// A member without a live move's marker is never asked.
	if fakes["default"].Calls["migration-running"] != 0 {
		t.Fatalf("default was asked: %v", fakes["default"].Calls)
	}
}

// A download that fails (or ends short) is tried again within the move, twice at most; a third
// failure fails the move with the download's own error, the member whole on its source.
func TestApply_copyTriesAFailedDownloadAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, failures := range []int{2, 3} {
		t.Run(fmt.Sprint(failures, " failures"), func(t *testing.T) {
			r, fakes, s := movedGroup(t)
			before := where(fakes)
			left := failures
			fakes["h2"].Hook = func(op, obj string) error {
				if op == "download-volume" && obj == "db-1-data.qcow2" && left > 0 {
					left--
					return errors.New("stream ended")
				}
				return nil
			}
			err := r.Apply(ctx, drain(t, r, s, false))
			if failures < 3 {
				if err != nil {
					t.Fatal(err)
				}
				checkDrained(t, fakes, before)
				return
			}
			if err == nil || !strings.Contains(err.Error(), "download from the source") || !strings.Contains(err.Error(), "stream ended") {
				t.Fatalf("apply: %v", err)
			}
			if got := where(fakes)["db-1"]; len(got) != 1 || !strings.HasPrefix(got[0], "h2 ") {
				t.Fatalf("db-1 is %v, want whole on h2", got)
			}
			if _, ok := fakes["default"].Volumes["p/db-1-data.qcow2"]; ok {
				t.Fatalf("a failed copy is on default")
			}
		})
	}
}

// A volume stream that passes no byte for the stall bound (go-libvirt has been seen to hang in
// one) is cut off and the copy made again: the move goes on, every byte kept. Not parallel: its
// stall bound is 20 ms of wall time, and the other tests' load could stall its good copies too.
func TestApply_stalledCopyIsMadeAgain(t *testing.T) {
	ctx := context.Background()
	r, fakes, s := movedGroup(t)
	before := where(fakes)
	r.StallBound = 20 * time.Millisecond
	r.Hosts["h2"] = &stallingHost{Backend: fakes["h2"], stall: "db-1-data.qcow2"}
	if err := r.Apply(ctx, drain(t, r, s, false)); err != nil {
		t.Fatal(err)
	}
	r.Hosts["h2"] = fakes["h2"]
	checkDrained(t, fakes, before)
}

// stallingHost's first download of the volume stall passes no byte until it is cut off.
type stallingHost struct {
	*fake.Backend
	stall   string
	stalled bool
}

func (h *stallingHost) DownloadVolume(ctx context.Context, pool, name string, w io.Writer) (int64, error) {
	if name == h.stall && !h.stalled {
		h.stalled = true
		<-ctx.Done()
		return 0, ctx.Err()
	}
	return h.Backend.DownloadVolume(ctx, pool, name, w)
}
