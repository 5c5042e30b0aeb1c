package groupproto

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// refreshed is a plan with refresh: the refresh ran in this process and left what it observed.
func refreshed(in PlanInput) PlanInput {
	in.Refreshed, in.StateListed, in.Cached = true, true, CachedObservation
	in.Marker = Marker{Read: true, Probed: true, Hosts: true}
	return in
}

func TestPlan(t *testing.T) {
	t.Parallel()
	// The apply's own plan, in another process than the plan the user approved: nothing
	// cached, the state's members and probes from that plan's refresh.
	applyOfRefreshed := PlanInput{StateListed: true, Marker: Marker{Read: true, Probed: true, Hosts: true}}
	cases := map[string]struct {
		in   PlanInput
		want PlanDecision
	}{
		"destroy run: the configuration's plan checks nothing": {
			PlanInput{Command: CommandDestroy, Record: RecordRefused, TakeOver: true},
			PlanDecision{Action: PlanCheckNothing},
		},
		"destroy run of a new group": {PlanInput{Command: CommandDestroy, New: true}, PlanDecision{Action: PlanCheckNothing}},
		"create":                     {PlanInput{New: true}, PlanDecision{Action: PlanCreate}},
		"record unreachable": {
			refreshed(PlanInput{Record: RecordUnreachable}),
			PlanDecision{Action: PlanRecordUnreachable},
		},
		"record unreadable, owned elsewhere or held: stop": {
			refreshed(PlanInput{Record: RecordRefused}),
			PlanDecision{Action: PlanStop},
		},
		"record gone, same name: written back": {
			refreshed(PlanInput{Record: RecordMissing}),
			PlanDecision{Action: PlanWriteRecordBack},
		},
		"record gone, new name: replaced": {
			refreshed(PlanInput{Record: RecordMissing, Renamed: true}),
			PlanDecision{Action: PlanReplace},
		},
		"new name: replaced": {
			refreshed(PlanInput{Renamed: true}),
			PlanDecision{Action: PlanReplace},
		},
		"plan with refresh: from the refresh's observation": {
			refreshed(PlanInput{}),
			PlanDecision{Action: PlanFromObservation, PinHosts: true},
		},
		"plan with refresh, planned already in this process: from the cache": {
			func() PlanInput { in := refreshed(PlanInput{}); in.Cached = CachedPlan; return in }(),
			PlanDecision{Action: PlanFromCache, PinHosts: true},
		},
		"plan with refresh, observation no longer applies: observe again": {
			func() PlanInput { in := refreshed(PlanInput{}); in.Cached = CachedNothing; return in }(),
			PlanDecision{Action: PlanObserve, PinHosts: true},
		},
		"-refresh=false on a settled state: keep the state": {
			PlanInput{StateListed: true, Marker: Marker{Settled: true}},
			PlanDecision{Action: PlanKeepState},
		},
		"-refresh=false, settled, cached: still keeps the state": {
			PlanInput{StateListed: true, Marker: Marker{Settled: true}, Cached: CachedObservation},
			PlanDecision{Action: PlanKeepState},
		},
		"-refresh=false, not settled, no marker of a refresh: observe": {
			PlanInput{StateListed: true},
			PlanDecision{Action: PlanObserve},
		},
		"-refresh=false, settled, state without members: observe": {
			PlanInput{Marker: Marker{Settled: true}},
			PlanDecision{Action: PlanObserve},
		},
		"apply of a refreshed plan: judged by the kept probes, hosts pinned, host compared": {
			applyOfRefreshed,
			PlanDecision{Action: PlanJudgeByProbes, PinHosts: true, CheckHost: true},
		},
		"apply of a refreshed plan, marker from before probes were kept: observe, host compared": {
			PlanInput{StateListed: true, Marker: Marker{Read: true}},
			PlanDecision{Action: PlanObserve, CheckHost: true},
		},
		"apply of a refreshed plan, the plan's observation still held: from it, host compared": {
			PlanInput{StateListed: true, Marker: Marker{Read: true, Probed: true}, Cached: CachedObservation},
			PlanDecision{Action: PlanFromObservation, CheckHost: true},
		},
		"take over: observe, no probes, no pinned hosts, no host comparison": {
			PlanInput{TakeOver: true, StateListed: true, Marker: Marker{Read: true, Probed: true, Hosts: true, Settled: true}},
			PlanDecision{Action: PlanObserve, TakeOver: true},
		},
		"take over in a plan with refresh: from the refresh's observation": {
			refreshed(PlanInput{TakeOver: true}),
			PlanDecision{Action: PlanFromObservation, TakeOver: true},
		},
		"take over, new name: replaced": {
			refreshed(PlanInput{TakeOver: true, Renamed: true}),
			PlanDecision{Action: PlanReplace},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(c.want, Plan(c.in)); diff != "" {
				t.Errorf("Plan(%+v) (-want +got):\n%s", c.in, diff)
			}
		})
	}
}

func TestRefuseHostChanged(t *testing.T) {
	t.Parallel()
	compared := PlanDecision{Action: PlanJudgeByProbes, CheckHost: true}
	cases := map[string]struct {
		d        PlanDecision
		changed  int
		changing bool
		want     HostVerdict
	}{
		"nothing changed":                            {compared, 0, true, HostSame},
		"changed, the plan changes things":           {compared, 2, true, HostRefuse},
		"changed, the group has nothing to do: warn": {compared, 1, false, HostWarn},
		"plan with refresh: not compared":            {PlanDecision{Action: PlanFromObservation}, 3, true, HostSame},
		"take over: not compared":                    {PlanDecision{Action: PlanObserve, TakeOver: true}, 3, true, HostSame},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(c.want, c.d.RefuseHostChanged(c.changed, c.changing)); diff != "" {
				t.Errorf("RefuseHostChanged (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSourceAndApply(t *testing.T) {
	t.Parallel()
	sources := map[Cached]PlanAction{CachedPlan: PlanFromCache, CachedObservation: PlanFromObservation, CachedNothing: PlanObserve}
	for c, want := range sources {
		if got := Source(c); got != want {
			t.Errorf("Source(%d) = %s, want %s", c, got, want)
		}
	}
	applies := map[string]struct {
		planned, same bool
		want          ApplyAction
	}{
		"the record written is the one planned":   {true, true, ApplyThisPlan},
		"another change came in between":          {true, false, ApplyPlanAgain},
		"a change with no check (policy, config)": {false, false, ApplyObserve},
	}
	for name, c := range applies {
		if diff := cmp.Diff(c.want, Apply(c.planned, c.same)); diff != "" {
			t.Errorf("%s: Apply (-want +got):\n%s", name, diff)
		}
	}
}
