package reconcile

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

var readyStart = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

// onClock is a reconciler of b with one worker (the fake clock is exact for one) whose clock and
// waits are b's fake clock.
func onClock(b *fake.Backend) *Reconciler {
	b.Clock = fake.NewClock(readyStart)
	r := New(b)
	r.Workers, r.Now, r.Sleep = 1, b.Clock.Now, b.Clock.Sleep
	return r
}

// probeByImage makes every member healthy while its boot volume backs onto good, and fails its
// probe as the tiny guest's service does otherwise.
func probeByImage(b *fake.Backend, good string, members ...string) {
	b.Probes = map[string]func(context.Context, backend.ProbeSpec) (backend.ProbeResult, error){}
	for _, n := range members {
		b.Probes[n] = func(context.Context, backend.ProbeSpec) (backend.ProbeResult, error) {
			if v, ok := b.VolumeNow("p", n+"-boot.qcow2"); ok && v.Backing == good {
				return backend.ProbeResult{OK: true}, nil
			}
			return backend.ProbeResult{Reason: "exit status 1: tiny-service: stopped"}, nil
		}
	}
}

func withHealthCheck(s engine.GroupState, onFailure string) engine.GroupState {
	s.Group.HealthCheck = &engine.HealthCheck{Probe: engine.Probe{Kind: engine.ProbeExec, Command: []string{"/bin/tiny-service", "status"}}, Interval: 10 * time.Second, Timeout: 5 * time.Second}
	s.Group.Policy.ReadyTimeout = time.Minute
	s.Group.Policy.OnFailure = onFailure
	return s
}

// TestApply_replaceToAnImageThatNeverBecomesHealthy: 4 running members, max_unavailable 1, a
// REPLACE to an image whose members never become healthy. The first member replaced is not ready
// by ready_timeout, which fails its wave: the other three are untouched. With STOP it stays on the
// new image, its record saying so; with ROLLBACK it is replaced back onto the old image, its
// preserved data volume untouched, and the error says what went back and why.
func TestApply_replaceToAnImageThatNeverBecomesHealthy(t *testing.T) {
	t.Parallel()
	members := []string{"db-1", "db-2", "db-3", "db-4"}
	cases := []struct {
		name      string
		onFailure string
		// image is db-1's boot image after the apply; revision from which template.
		image    string
		mentions []string
	}{
		{"STOP", engine.OnFailureStop, "/images/b.qcow2", []string{"the rollout stopped in wave 1 of 4", `"wait ready"`}},
		{"ROLLBACK", engine.OnFailureRollback, "/images/a.qcow2", []string{"rolled back", "Rolled back: db-1 to template revision ", "The rollback completed"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := fake.New()
			old := withHealthCheck(imageChange(4, "/images/a.qcow2"), c.onFailure)
			probeByImage(b, "/images/a.qcow2", members...)
			if err := onClock(b).Apply(context.Background(), old); err != nil {
				t.Fatal(err)
			}
			b.Volumes["p/db-1-data.qcow2"].Data = "precious"
			before := snap(b)
			r := onClock(b)
			next := withHealthCheck(imageChange(4, "/images/b.qcow2"), c.onFailure)
			err := r.Apply(context.Background(), next)
			var re *RolloutError
			if !errors.As(err, &re) || len(re.Failed) != 1 || re.Failed[0].Op.Name != "db-1" || re.Failed[0].Step != "wait ready" || re.Wave != 1 {
				t.Fatalf("error %v, want db-1 failing at wait ready in wave 1", err)
			}
			var rb *RollbackError
			if rolledBack := errors.As(err, &rb); rolledBack != (c.onFailure == engine.OnFailureRollback) || (rolledBack && !rb.Completed()) {
				t.Fatalf("rollback error %v (rolled back %v)", err, rolledBack)
			}
			for _, want := range append(c.mentions, "db-1 is not ready", "tiny-service: stopped", "ready_timeout (1m0s)") {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
			after := snap(b)
			for _, n := range members[1:] {
				if after[n] != before[n] || b.Volumes["p/"+n+"-boot.qcow2"].Backing != "/images/a.qcow2" {
					t.Errorf("%s was touched: %v -> %v", n, before[n], after[n])
				}
			}
			if after["db-1"][0] == before["db-1"][0] {
				t.Error("db-1 was not replaced")
			}
			wantRev := next.Group.Template.Revision()
			if c.onFailure == engine.OnFailureRollback {
				wantRev = old.Group.Template.Revision()
			}
			got := map[string]string{"image": b.Volumes["p/db-1-boot.qcow2"].Backing, "revision": b.Domains["db-1"].Spec.Record.Instance.TemplateRevision, "data": b.Volumes["p/db-1-data.qcow2"].Data}
			want := map[string]string{"image": c.image, "revision": wantRev, "data": "precious"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("db-1 after the apply (-want +got):\n%s", diff)
			}
			if b.Domains["db-1"].Spec.Record.Instance.InFlight != nil {
				t.Error("db-1's record is left in flight")
			}
			// Waited ready_timeout for db-1 on the new image; the rollback's member was ready at once.
			if got := b.Clock.Now().Sub(readyStart); got != time.Minute {
				t.Errorf("the apply lasted %s on the fake clock, want ready_timeout (1m)", got)
			}
		})
	}
}

// TestApply_rollbackThatFailsIsNotRolledBack: the old image does not become healthy either, so
// the rollback's own wait fails: it stops there, says so, and nothing is rolled back again.
func TestApply_rollbackThatFailsIsNotRolledBack(t *testing.T) {
	t.Parallel()
	b := fake.New()
	old := withHealthCheck(imageChange(2, "/images/a.qcow2"), engine.OnFailureRollback)
	probeByImage(b, "/images/a.qcow2", "db-1", "db-2")
	if err := onClock(b).Apply(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	// Only the domains there before this apply answer: a member replaced, forward or back, never
	// does (and the apply's observation sees every member healthy).
	original := map[string]bool{}
	for _, d := range b.Domains {
		original[d.UUID] = true
	}
	for _, n := range []string{"db-1", "db-2"} {
		b.Probes[n] = func(context.Context, backend.ProbeSpec) (backend.ProbeResult, error) {
			if d, ok := b.DomainNow(n); ok && original[d.UUID] {
				return backend.ProbeResult{OK: true}, nil
			}
			return backend.ProbeResult{Reason: "exit status 1: tiny-service: stopped"}, nil
		}
	}
	b.Log = nil
	err := onClock(b).Apply(context.Background(), withHealthCheck(imageChange(2, "/images/b.qcow2"), engine.OnFailureRollback))
	var rb *RollbackError
	if !errors.As(err, &rb) || rb.Completed() {
		t.Fatalf("error %v, want a rollback that did not complete", err)
	}
	for _, want := range []string{"The rollback itself failed and stopped there", "To roll back: db-1 to template revision"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	var undefined []string
	for _, l := range b.Log {
		if l == "undefine db-1" || l == "undefine db-2" {
			undefined = append(undefined, l)
		}
	}
	if diff := cmp.Diff([]string{"undefine db-1", "undefine db-1"}, undefined); diff != "" {
		t.Errorf("replacements (-want +got): one forward and one back, nothing more:\n%s", diff)
	}
	if b.Volumes["p/db-1-boot.qcow2"].Backing != "/images/a.qcow2" {
		t.Error("db-1 is not back on the old image")
	}
}

// TestApply_minReadyWaitsBeforeTheNextWave: a RESTART of 3 members one per wave, min_ready 30s,
// probes every 10s: each member is probed until it has been healthy for 30s (4 probes), and the
// next member is stopped only then; the rollout lasts 3 × min_ready on the fake clock.
func TestApply_minReadyWaitsBeforeTheNextWave(t *testing.T) {
	t.Parallel()
	b := fake.New()
	s := withHealthCheck(spec(3), engine.OnFailureStop)
	s.Group.ShutdownTimeout = "0s"
	s.Group.Policy.MinReady = 30 * time.Second
	probeByImage(b, "", "db-1", "db-2", "db-3")
	if err := onClock(b).Apply(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	b.Log = nil
	r := onClock(b)
	s.Group.Template.VCPU = 2
	if err := r.Apply(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	// From the first stop: what the apply's observation probed before is not the rollout's.
	var got []string
	for _, l := range b.Log {
		if op, _, _ := strings.Cut(l, " "); (op == "probe" && len(got) > 0) || op == "stop" || op == "start" {
			got = append(got, l)
		}
	}
	var want []string
	for _, n := range []string{"db-1", "db-2", "db-3"} {
		want = append(want, "stop "+n, "start "+n, "probe "+n, "probe "+n, "probe "+n, "probe "+n)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stops, starts and probes (-want +got):\n%s", diff)
	}
	if got := b.Clock.Now().Sub(readyStart); got != 90*time.Second {
		t.Errorf("the rollout lasted %s on the fake clock, want 3 × min_ready (1m30s)", got)
	}
}

// TestApply_waitReadyWithoutHealthCheck: without a health check a started member is ready when
// its domain runs, and still runs after min_ready; one that does not run fails its wave at
// ready_timeout, saying what its domain is.
func TestApply_waitReadyWithoutHealthCheck(t *testing.T) {
	t.Parallel()
	b := fake.New()
	s := spec(2)
	s.Group.ShutdownTimeout = "0s"
	s.Group.Policy.MinReady = 10 * time.Second
	s.Group.Policy.ReadyTimeout = 30 * time.Second
	if err := onClock(b).Apply(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	// The two members wait at once; the fake clock adds up every sleep, and one member's sleep
	// moves the clock the other's wait reads, so the total lies between one min_ready (the waits
	// overlapped wholly) and two (not at all), depending on how the two goroutines interleave.
	if got := b.Clock.Now().Sub(readyStart); got < 10*time.Second || got > 20*time.Second {
		t.Errorf("creating two members lasted %s on the fake clock, want from min_ready (10s) to one per member (20s)", got)
	}
	// db-1 is seen shut off by every look after it is started again.
	b.Hook = func(op, obj string) error {
		if op == "list" && obj == "db-1" && b.Domains["db-1"].ID > 0 {
			b.Domains["db-1"].ID = -1
		}
		return nil
	}
	r := onClock(b)
	s.Group.Template.VCPU = 2
	err := r.Apply(context.Background(), s)
	var re *RolloutError
	if !errors.As(err, &re) || re.Failed[0].Op.Name != "db-1" || re.Failed[0].Step != "wait ready" || re.Failed[0].Down {
		t.Fatalf("error %v, want db-1 not ready", err)
	}
	for _, want := range []string{"not HEALTHY within ready_timeout (30s): the domain is STOPPED", "db-2 (restart)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if got := b.Clock.Now().Sub(readyStart); got != 30*time.Second {
		t.Errorf("the failed wait lasted %s on the fake clock, want ready_timeout (30s)", got)
	}
}

// TestExecute_waitsForReadyGiveTheirPlaceInTheFanOut: with one worker, the members of a wave are
// all started before any is ready: a member's wait does not hold the fan-out's place, so the
// next creation starts while it is waited for. Each member's probe passes only once all three
// have started; were the waits holding the one worker, the first would never pass.
func TestExecute_waitsForReadyGiveTheirPlaceInTheFanOut(t *testing.T) {
	t.Parallel()
	b := fake.New()
	allStarted := make(chan struct{})
	starts := 0
	b.Hook = func(op, _ string) error {
		if op == "start" {
			if starts++; starts == 3 {
				close(allStarted)
			}
		}
		return nil
	}
	b.Probes = map[string]func(context.Context, backend.ProbeSpec) (backend.ProbeResult, error){}
	for _, n := range []string{"db-1", "db-2", "db-3"} {
		b.Probes[n] = func(ctx context.Context, _ backend.ProbeSpec) (backend.ProbeResult, error) {
			select {
			case <-allStarted:
				return backend.ProbeResult{OK: true}, nil
			case <-ctx.Done():
				return backend.ProbeResult{}, ctx.Err()
			case <-time.After(20 * time.Second): // only a broken fan-out gets here: fail, do not hang
				return backend.ProbeResult{Reason: "the other members were never started"}, nil
			}
		}
	}
	r := New(b)
	r.Workers = 1
	if err := r.Apply(context.Background(), withHealthCheck(spec(3), engine.OnFailureStop)); err != nil {
		t.Fatal(err)
	}
}

// TestApply_rollbackLeavesCreatedMembers: a scale-out and a new image, under ROLLBACK, whose new
// member never becomes healthy: the wave of creations fails before any member was replaced, so
// nothing goes back; the new member is left as it is, and the error says so.
func TestApply_rollbackLeavesCreatedMembers(t *testing.T) {
	t.Parallel()
	b := fake.New()
	members := []string{"db-1", "db-2", "db-3"}
	probeByImage(b, "/images/a.qcow2", members...)
	if err := onClock(b).Apply(context.Background(), withHealthCheck(imageChange(2, "/images/a.qcow2"), engine.OnFailureRollback)); err != nil {
		t.Fatal(err)
	}
	before := snap(b)
	err := onClock(b).Apply(context.Background(), withHealthCheck(imageChange(3, "/images/b.qcow2"), engine.OnFailureRollback))
	var rb *RollbackError
	if !errors.As(err, &rb) || rb.Reverted() || !rb.Completed() {
		t.Fatalf("error %v: want a rollback with nothing to put back", err)
	}
	for _, want := range []string{"create of db-3 failed at step \"wait ready\"", "No member needed rolling back", "Created by this apply and left as they are (they had no earlier template): db-3"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	after := snap(b)
	for _, n := range members[:2] {
		if after[n] != before[n] {
			t.Errorf("%s was touched", n)
		}
	}
	if _, ok := b.Domains["db-3"]; !ok {
		t.Error("db-3 was not left")
	}
}
