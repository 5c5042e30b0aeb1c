package engine

import (
	"strings"
	"testing"
	"time"
)

// Cases of the third reference (preservation of failed machines), each named after it.
func TestPreservation_referenceCases(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	hourAgo := now.Add(-time.Hour).UnixMilli()
	crashed := func(o *Observed) { o.Status, o.StateReason = StatusStopped, StateReasonCrashed }
	preserved := func(kind string, since int64) func(o *Observed) {
		return func(o *Observed) { o.Instance.Preserved, o.Instance.PreservedSince = kind, since }
	}
	type member struct {
		config string
		change []func(o *Observed)
	}
	tests := []struct {
		name    string
		fp      *FailedPreservation
		heal    bool
		members []member
		size    int
		tmpl    func(t *Template)
		want    []string // planned action of each member, by prefix
		deletes string
	}{
		{name: "use case 1: preserve now keeps a running member from a disruptive update",
			members: []member{{config: PreserveNow}, {}}, size: 2, tmpl: func(t *Template) { t.VCPU = 2 },
			want: []string{"PRESERVE: preserved (NOW) for 24h0m0s", "RESTART: vcpu 1 -> 2"}},
		{name: "use case 1: a member preserved now is removed last on scale-in",
			members: []member{{config: PreserveNow, change: []func(*Observed){preserved(PreserveNow, hourAgo)}}, {}}, size: 1,
			want: []string{"NONE: preserved (NOW) until 2026-11-24T11:00:00Z"}, deletes: "db-2"},
		{name: "use case 2: preserve when-failed does nothing while healthy",
			members: []member{{config: PreserveWhenFailed}}, size: 1, want: []string{"NONE"}},
		{name: "use case 2: preserve when-failed keeps a failed member as it is",
			fp: &FailedPreservation{PreserveTimeout: "1h"}, heal: true,
			members: []member{{config: PreserveWhenFailed, change: []func(*Observed){crashed}}}, size: 1,
			want: []string{"PRESERVE: preserved (WHEN_FAILED) for 1h0m0s"}},
		{name: "use case 3: auto-preservation up to the maximum, the others healed",
			fp: &FailedPreservation{AutoPreserveFailedMax: 1, PreserveTimeout: "1h"}, heal: true,
			members: []member{{change: []func(*Observed){crashed}}, {change: []func(*Observed){crashed}}}, size: 2,
			want: []string{"PRESERVE: preserved (AUTO)", "REPLACE: autoheal (shut off (crashed))"}},
		{name: "use case 3: auto-preservation off by default",
			heal: true, members: []member{{change: []func(*Observed){crashed}}}, size: 1,
			want: []string{"REPLACE: autoheal"}},
		{name: "use case 3: after the timeout the member is released and healed",
			fp: &FailedPreservation{AutoPreserveFailedMax: 1, PreserveTimeout: "30m"}, heal: true,
			members: []member{{change: []func(*Observed){crashed, preserved(PreserveAuto, hourAgo)}}}, size: 1,
			want: []string{"REPLACE: autoheal"}},
		{name: "use case 4: early release by preserve = NO",
			fp: &FailedPreservation{AutoPreserveFailedMax: 1, PreserveTimeout: "24h"}, heal: true,
			members: []member{{config: PreserveNo, change: []func(*Observed){crashed, preserved(PreserveAuto, hourAgo)}}}, size: 1,
			want: []string{"REPLACE: autoheal"}},
		{name: "a preserved member that is healthy again stays preserved until released",
			fp:      &FailedPreservation{AutoPreserveFailedMax: 1, PreserveTimeout: "24h"},
			members: []member{{change: []func(*Observed){preserved(PreserveAuto, hourAgo)}}}, size: 1,
			want: []string{"NONE: preserved (AUTO)"}},
		{name: "a running member released at the timeout is only written",
			members: []member{{config: PreserveNow, change: []func(*Observed){preserved(PreserveNow, now.Add(-25*time.Hour).UnixMilli())}}}, size: 1,
			want: []string{"RELEASE: preservation (NOW) expired"}},
		{name: "when the maximum drops, the oldest auto-preserved go first",
			fp: &FailedPreservation{AutoPreserveFailedMax: 1, PreserveTimeout: "24h"},
			members: []member{
				{change: []func(*Observed){crashed, preserved(PreserveAuto, now.Add(-2*time.Hour).UnixMilli())}},
				{change: []func(*Observed){crashed, preserved(PreserveAuto, hourAgo)}},
			}, size: 2,
			want: []string{"START", "NONE: preserved (AUTO)"}},
		{name: "preserved members count toward the target size",
			fp:      &FailedPreservation{AutoPreserveFailedMax: 2, PreserveTimeout: "24h"},
			members: []member{{change: []func(*Observed){crashed}}, {change: []func(*Observed){crashed}}}, size: 2,
			want: []string{"PRESERVE: preserved (AUTO)", "PRESERVE: preserved (AUTO)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := group(tt.size)
			g.FailedPreservation = tt.fp
			if tt.heal {
				g.AutoHealing = &AutoHealing{InitialDelay: "0s", Backoff: "0s"}
			}
			if tt.tmpl != nil {
				tt.tmpl(&g.Template)
			}
			s := state(g)
			s.Configs = map[string]ConfigEntry{}
			var indices []int
			for i := range tt.members {
				indices = append(indices, i+1)
			}
			obs := observed(base(), StatusRunning, indices...)
			for i, m := range tt.members {
				for _, c := range m.change {
					c(&obs[i])
				}
				if m.config != "" {
					e := DefaultConfigEntry()
					e.Preserve = m.config
					s.Configs[obs[i].Name] = e
				}
			}
			p := PlanGroup(s, obs, Env{Now: now})
			if strings.Join(p.Delete, ",") != tt.deletes {
				t.Fatalf("deletes %v, want %q", p.Delete, tt.deletes)
			}
			if len(p.Final) != len(tt.want) || len(p.Create) != 0 {
				t.Fatalf("final %+v, creates %+v", p.Final, p.Create)
			}
			for i, want := range tt.want {
				if !strings.HasPrefix(p.Final[i].Planned.String(), want) {
					t.Errorf("member %d planned %q, want %q", i+1, p.Final[i].Planned.String(), want)
				}
			}
		})
	}
}
