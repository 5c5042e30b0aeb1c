package reconcile

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

var probeStart = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

type probeFunc = func(context.Context, backend.ProbeSpec) (backend.ProbeResult, error)

func passing(context.Context, backend.ProbeSpec) (backend.ProbeResult, error) {
	return backend.ProbeResult{OK: true}, nil
}

func failing(why string) probeFunc {
	return func(context.Context, backend.ProbeSpec) (backend.ProbeResult, error) {
		return backend.ProbeResult{Reason: why}, nil
	}
}

// withCheck is s with an exec health check of the given unhealthy_threshold, interval 10s.
func withCheck(s engine.GroupState, unhealthy int) engine.GroupState {
	s.Group.HealthCheck = &engine.HealthCheck{Probe: engine.Probe{Kind: engine.ProbeExec, Command: []string{"/bin/tiny-service", "status"}},
		Interval: 10 * time.Second, Timeout: 5 * time.Second, UnhealthyThreshold: unhealthy}
	return s
}

// probeRig is a group of n members applied on one fake host, with a reconciler on a fake clock.
func probeRig(t *testing.T, n int) (*Reconciler, *fake.Backend, *fake.Clock, engine.GroupState) {
	t.Helper()
	b := fake.New()
	s := spec(n)
	clock := fake.NewClock(probeStart)
	r := New(b)
	r.Now, r.Sleep, r.After, r.Workers = clock.Now, clock.Sleep, clock.After, n
	if err := r.Apply(context.Background(), s); err != nil {
		t.Fatalf("apply: %v", err)
	}
	b.Probes = map[string]probeFunc{}
	return r, b, clock, s
}

// healthOf judges every observed member as the plan would, by name.
func healthOf(s engine.GroupState, o Observation, now time.Time) map[string]engine.MemberHealth {
	out := map[string]engine.MemberHealth{}
	for _, ob := range o.Observed {
		out[ob.Name] = s.Group.HealthOf(ob, now)
	}
	return out
}

// TestObserve_noProbeWithoutCheckOrRunningMember: a group with no health check, or with no
// running member, costs no probe call at all.
func TestObserve_noProbeWithoutCheckOrRunningMember(t *testing.T) {
	t.Parallel()
	r, b, _, s := probeRig(t, 3)
	if _, err := r.Observe(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if got := b.Calls["probe"]; got != 0 {
		t.Errorf("no health check: %d probes", got)
	}
	s.Group.Running = false
	apply(t, b, s)
	o, err := r.Observe(context.Background(), withCheck(s, 3))
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Calls["probe"]; got != 0 {
		t.Errorf("no running member: %d probes", got)
	}
	for _, ob := range o.Observed {
		if ob.Probe != nil {
			t.Errorf("%s: probe outcome %+v", ob.Name, ob.Probe)
		}
	}
}

// TestObserve_probesRunningMembers: a healthy member costs one probe; a failing one is probed
// every interval until unhealthy_threshold failures in a row, and quoted.
func TestObserve_probesRunningMembers(t *testing.T) {
	t.Parallel()
	for _, threshold := range []int{1, 2, 3} {
		t.Run("unhealthy_threshold "+string(rune('0'+threshold)), func(t *testing.T) {
			r, b, clock, s := probeRig(t, 3)
			s = withCheck(s, threshold)
			var mu sync.Mutex
			calls := map[string]int{}
			counted := func(name string, f probeFunc) probeFunc {
				return func(ctx context.Context, spec backend.ProbeSpec) (backend.ProbeResult, error) {
					mu.Lock()
					calls[name]++
					mu.Unlock()
					if spec.Timeout != 5*time.Second || spec.Kind != "exec" {
						t.Errorf("probe spec %+v", spec)
					}
					return f(ctx, spec)
				}
			}
			b.Probes["db-1"] = counted("db-1", passing)
			b.Probes["db-2"] = counted("db-2", failing("exit status 1: tiny-service: stopped"))
			b.Probes["db-3"] = counted("db-3", passing)
			// db-2's interval waits move the clock on (fake.Clock.Sleep).
			o, err := r.Observe(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(map[string]int{"db-1": 1, "db-2": threshold, "db-3": 1}, calls); d != "" {
				t.Errorf("probes per member (-want +got):\n%s", d)
			}
			want := map[string]engine.MemberHealth{
				"db-1": {Health: engine.HealthHealthy},
				"db-2": {Health: engine.HealthUnhealthy, Reason: "exit status 1: tiny-service: stopped", ConsecutiveFailures: threshold},
				"db-3": {Health: engine.HealthHealthy},
			}
			if d := cmp.Diff(want, healthOf(s, o, clock.Now())); d != "" {
				t.Errorf("health (-want +got):\n%s", d)
			}
			if got := clock.Now().Sub(probeStart); got != time.Duration(threshold-1)*10*time.Second {
				t.Errorf("the observation took %s on the clock", got)
			}
		})
	}
}

// TestObserve_boundCutsAFailingSequenceShort: a sequence whose next probe could not start before
// the bound ends there, judged on its last result.
func TestObserve_boundCutsAFailingSequenceShort(t *testing.T) {
	t.Parallel()
	r, b, clock, s := probeRig(t, 1)
	r.ProbeBound = 15 * time.Second
	s = withCheck(s, 3)
	b.Probes["db-1"] = failing("exit status 1: stopped")
	o, err := r.Observe(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Calls["probe"]; got != 2 {
		t.Errorf("%d probes, want 2 (at 0s and 10s; the third would start at the bound)", got)
	}
	want := engine.MemberHealth{Health: engine.HealthUnhealthy, ConsecutiveFailures: 2,
		Reason: "exit status 1: stopped (judged on its last probe: the observation's time bound cut the check short)"}
	if d := cmp.Diff(want, healthOf(s, o, clock.Now())["db-1"]); d != "" {
		t.Errorf("health (-want +got):\n%s", d)
	}
}

// TestObserve_aStuckProbeDoesNotStallTheObservation: a member whose probe never answers (it
// blocks until its context ends) is cut at the bound, UNKNOWN; the others are judged as usual.
func TestObserve_aStuckProbeDoesNotStallTheObservation(t *testing.T) {
	t.Parallel()
	r, b, clock, s := probeRig(t, 3)
	s = withCheck(s, 3)
	entered := make(chan struct{})
	var others sync.WaitGroup
	others.Add(2)
	b.Probes["db-1"] = func(ctx context.Context, spec backend.ProbeSpec) (backend.ProbeResult, error) {
		defer others.Done()
		return passing(ctx, spec)
	}
	b.Probes["db-2"] = func(ctx context.Context, _ backend.ProbeSpec) (backend.ProbeResult, error) {
		close(entered)
		<-ctx.Done()
		return backend.ProbeResult{}, ctx.Err()
	}
	b.Probes["db-3"] = b.Probes["db-1"]
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-entered
		others.Wait()
		// Only the bound's timer waits: the bound passes.
		clock.WaitTimers(1)
		clock.Advance(DefaultProbeBound)
	}()
	o, err := r.Observe(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	<-done
	want := map[string]engine.MemberHealth{
		"db-1": {Health: engine.HealthHealthy},
		"db-2": {Health: engine.HealthUnknown, Reason: "no probe finished within the observation's time bound"},
		"db-3": {Health: engine.HealthHealthy},
	}
	if d := cmp.Diff(want, healthOf(s, o, clock.Now())); d != "" {
		t.Errorf("health (-want +got):\n%s", d)
	}
}

// TestObserve_unreachableHostsMembersAreNotProbed: the members of a host that does not answer
// are UNKNOWN and not probed; a host that answers its listing but cannot run a probe makes its
// member UNKNOWN with the error; every member is probed on its own host.
func TestObserve_unreachableHostsMembersAreNotProbed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, fakes := threeHosts()
	s := spec(3)
	s.Group.Hosts = []string{"default", "h2", "h3"}
	s = change(t, r, s)
	if err := r.Apply(ctx, s); err != nil {
		t.Fatal(err)
	}
	s, err := r.Load(ctx, "db") // with where the apply placed each member
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range fakes {
		b.Probes = map[string]probeFunc{}
	}
	fakes["default"].Probes["db-1"] = passing
	fakes["h2"].FailOn = map[string]error{"probe db-2": errors.New("connection reset")}
	fakes["h3"].Hook = func(string, string) error { return errors.New("connection refused") }
	s = withCheck(s, 3)
	o, err := r.Observe(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if got := fakes["h3"].Calls["probe"]; got != 0 {
		t.Errorf("the unreachable host was asked %d probes", got)
	}
	if got := fakes["default"].Calls["probe"] + fakes["h2"].Calls["probe"]; got != 2 {
		t.Errorf("%d probes on the hosts that answer, want 2", got)
	}
	got := healthOf(s, o, time.Now())
	want := map[string]engine.MemberHealth{
		"db-1": {Health: engine.HealthHealthy},
		"db-2": {Health: engine.HealthUnknown, Reason: "the host could not run the health check's probe: probe db-2: connection reset"},
		"db-3": {Health: engine.HealthUnknown, Reason: got["db-3"].Reason},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("health (-want +got):\n%s", d)
	}
}

// TestObserve_probesUnderTheWorkerBound: no more probes run at once than the reconciler's
// workers.
func TestObserve_probesUnderTheWorkerBound(t *testing.T) {
	t.Parallel()
	r, b, _, s := probeRig(t, 6)
	r.Workers = 2
	s = withCheck(s, 1)
	var mu sync.Mutex
	running, most := 0, 0
	for i := 1; i <= 6; i++ {
		b.Probes[engine.InstanceName("db", i)] = func(ctx context.Context, spec backend.ProbeSpec) (backend.ProbeResult, error) {
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			defer func() { mu.Lock(); running--; mu.Unlock() }()
			return passing(ctx, spec)
		}
	}
	if _, err := r.Observe(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if most > 2 || b.Calls["probe"] != 6 {
		t.Errorf("%d probes at once (want at most 2), %d in all", most, b.Calls["probe"])
	}
}

// TestObserve_healthyThresholdCountsPassesAfterAFailure: a member whose first probe passes is
// HEALTHY at one probe whatever healthy_threshold says; one that failed first needs
// healthy_threshold passes in a row.
func TestObserve_healthyThresholdCountsPassesAfterAFailure(t *testing.T) {
	t.Parallel()
	r, b, clock, s := probeRig(t, 2)
	s = withCheck(s, 3)
	s.Group.HealthCheck.HealthyThreshold = 2
	b.Probes["db-1"] = passing
	var mu sync.Mutex
	answers := []bool{false, true, true}
	b.Probes["db-2"] = func(context.Context, backend.ProbeSpec) (backend.ProbeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		ok := answers[0]
		answers = answers[1:]
		if ok {
			return backend.ProbeResult{OK: true}, nil
		}
		return backend.ProbeResult{Reason: "exit status 1: starting"}, nil
	}
	o, err := r.Observe(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Calls["probe"]; got != 4 {
		t.Errorf("%d probes, want 4 (db-1 once, db-2 three times)", got)
	}
	want := map[string]engine.MemberHealth{"db-1": {Health: engine.HealthHealthy}, "db-2": {Health: engine.HealthHealthy}}
	if d := cmp.Diff(want, healthOf(s, o, clock.Now())); d != "" {
		t.Errorf("health (-want +got):\n%s", d)
	}
	for _, ob := range o.Observed {
		if ob.Name == "db-2" && (ob.Probe.Unfinished || len(ob.Probe.Results) != 3) {
			t.Errorf("db-2's sequence %+v", ob.Probe)
		}
	}
}

// TestObserveProbed_judgesByTheGivenOutcomes: the apply of a plan judges members by the probe
// outcomes its refresh found, not by probing again: a guest that recovered (or failed) in
// between does not change what the approved plan does. A member with no outcome given has none.
func TestObserveProbed_judgesByTheGivenOutcomes(t *testing.T) {
	t.Parallel()
	r, b, clock, s := probeRig(t, 3)
	s = withCheck(s, 1)
	b.Probes["db-1"] = passing
	b.Probes["db-2"] = passing
	b.Probes["db-3"] = passing
	refresh := &engine.ProbeOutcome{Results: []engine.ProbeResult{{Reason: "exit status 1: tiny-service: stopped", At: probeStart}}}
	o, err := r.ObserveProbed(context.Background(), s, map[string]*engine.ProbeOutcome{"db-2": refresh})
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Calls["probe"]; got != 0 {
		t.Errorf("%d probes: the outcomes were given", got)
	}
	got := healthOf(s, o, clock.Now())
	if h := got["db-2"]; h.Health != engine.HealthUnhealthy || h.Reason != "exit status 1: tiny-service: stopped" {
		t.Errorf("db-2 judged %+v, want UNHEALTHY as the refresh found it", h)
	}
	for _, ob := range o.Observed {
		if ob.Name != "db-2" && ob.Probe != nil {
			t.Errorf("%s: outcome %+v, none was given", ob.Name, ob.Probe)
		}
	}
}
