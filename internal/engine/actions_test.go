package engine

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// opsOf renders a plan's waves as "wave: name kind" lines, in order.
func opsOf(p GroupPlan) []string {
	var out []string
	for k, w := range p.Waves {
		for _, op := range w.Ops {
			out = append(out, fmt.Sprintf("%d: %s %s", k+1, op.Name, op.Kind))
		}
	}
	return out
}

// kindsOf renders an operation's tasks by kind, in order.
func kindsOf(op Operation) []string {
	var out []string
	for _, t := range op.Tasks {
		out = append(out, t.Kind.String())
	}
	return out
}

// opNamed is the plan's operation on the member.
func opNamed(t *testing.T, p GroupPlan, name string) Operation {
	t.Helper()
	for _, w := range p.Waves {
		for _, op := range w.Ops {
			if op.Name == name {
				return op
			}
		}
	}
	t.Fatalf("no operation on %s in %v", name, opsOf(p))
	return Operation{}
}

func TestPlanMemberAction(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)
	hourAgo := now.Add(-time.Hour).UnixMilli()
	preserved := func(kind string) func(o *Observed) {
		return func(o *Observed) { o.Instance.Preserved, o.Instance.PreservedSince = kind, hourAgo }
	}
	crashed := func(o *Observed) { o.Status, o.StateReason = StatusStopped, StateReasonCrashed }
	stopped := func(o *Observed) { o.Status = StatusStopped }
	unreachableHost := func(o *Observed) { o.Unknown, o.Host = true, "h2" }
	type member struct {
		config string // preserve of its per-instance config; "-" for no config
		change []func(o *Observed)
	}
	three := []member{{config: "-"}, {config: "-"}, {config: "-"}}
	tests := []struct {
		name    string
		action  MemberAction
		names   []string
		members []member
		group   func(g *Group)
		// want are the plan's operations ("wave: name kind"); wantErr, when set, is a part of
		// the refusal's text instead.
		want      []string
		unchanged map[string]string
		wantErr   string
	}{
		{name: "recreate member 2 of 3 replaces it alone",
			action: MemberRecreate, names: []string{"db-2"}, members: three,
			want: []string{"1: db-2 replace"}},
		{name: "restart member 2 of 3 restarts it alone",
			action: MemberRestart, names: []string{"db-2"}, members: three,
			want: []string{"1: db-2 restart"}},
		{name: "several members go in waves of max_unavailable",
			action: MemberRecreate, names: []string{"db-3", "db-1"}, members: three,
			want: []string{"1: db-1 replace", "2: db-3 replace"}},
		{name: "a larger max_unavailable takes them together",
			action: MemberRestart, names: []string{"db-1", "db-2", "db-3"}, members: three,
			group: func(g *Group) { g.Policy.MaxUnavailable = 2 },
			want:  []string{"1: db-1 restart", "1: db-2 restart", "2: db-3 restart"}},
		{name: "a member already down goes first and costs nothing more",
			action: MemberRestart, names: []string{"db-1", "db-2"}, members: []member{{config: "-"}, {config: "-", change: []func(*Observed){stopped}}},
			want: []string{"1: db-2 restart", "2: db-1 restart"}},
		{name: "a member down that the action does not name uses the budget up",
			action: MemberRestart, names: []string{"db-1"}, members: []member{{config: "-"}, {config: "-", change: []func(*Observed){stopped}}},
			wantErr: "max_unavailable (1) is used up by 1 member(s) that are down"},
		{name: "other members' changes are left to the next apply",
			action: MemberRecreate, names: []string{"db-2"}, members: three,
			group: func(g *Group) { g.Template.VCPU = 2; g.TargetSize = 4 },
			want:  []string{"1: db-2 replace"}},
		{name: "a crashed member is recreated by the action, not healed",
			action: MemberRecreate, names: []string{"db-1"}, members: []member{{config: "-", change: []func(*Observed){crashed}}},
			group: func(g *Group) { g.AutoHealing = &AutoHealing{InitialDelay: "0s", Backoff: "0s"} },
			want:  []string{"1: db-1 replace"}},
		{name: "a name that is not a member is refused, naming it and the members",
			action: MemberRecreate, names: []string{"db-2", "db-9"}, members: three,
			wantErr: `"db-9" is not a member of group db (its members are db-1, db-2, db-3). Nothing was changed.`},
		{name: "a member on a host that does not answer is refused",
			action: MemberRestart, names: []string{"db-2"}, members: []member{{config: "-"}, {config: "-", change: []func(*Observed){unreachableHost}}},
			wantErr: "db-2: host"},
		{name: "a preserved member is not recreated",
			action: MemberRecreate, names: []string{"db-1"}, members: []member{{config: "-", change: []func(*Observed){preserved(PreserveNow)}}},
			wantErr: "db-1: it is preserved (NOW) until 2026-11-28T05:00:00Z and kept exactly as it is: release it first"},
		{name: "a restart of a member that needs a replacement is refused",
			action: MemberRestart, names: []string{"db-1"}, members: []member{{config: "-"}},
			group:   func(g *Group) { g.Template.DomainType = "kvm" },
			wantErr: "db-1: it needs REPLACE (restart asked for by an action, domain type qemu -> kvm), which a restart cannot do",
		},
		{name: "a restart takes the member's pending restart-level change with it",
			action: MemberRestart, names: []string{"db-1"}, members: []member{{config: "-"}},
			group: func(g *Group) { g.Template.VCPU = 2 },
			want:  []string{"1: db-1 restart"}},
		{name: "preserve writes the member's record only",
			action: MemberPreserve, names: []string{"db-2"}, members: three,
			want: []string{"1: db-2 mark"}},
		{name: "preserve of a member already preserved leaves it as it is",
			action: MemberPreserve, names: []string{"db-1", "db-2"}, members: []member{{config: "-", change: []func(*Observed){preserved(PreserveNow)}}, {config: "-"}},
			want:      []string{"1: db-2 mark"},
			unchanged: map[string]string{"db-1": "already preserved (NOW) until 2026-11-28T05:00:00Z"}},
		{name: "preserve of a member whose config says NO is refused: the next apply would release it",
			action: MemberPreserve, names: []string{"db-1"}, members: []member{{config: PreserveNo}},
			wantErr: "db-1: the next apply would end its preservation at once (preservation released by its config (preserve = NO))"},
		{name: "release writes the member's record",
			action: MemberRelease, names: []string{"db-1"}, members: []member{{config: "-", change: []func(*Observed){preserved(PreserveNow)}}, {config: "-"}},
			want: []string{"1: db-1 mark"}},
		{name: "release of a failed member lets it be healed with it, as preserve = NO does",
			action: MemberRelease, names: []string{"db-1"}, members: []member{{config: "-", change: []func(*Observed){crashed, preserved(PreserveNow)}}},
			group: func(g *Group) {
				g.AutoHealing = &AutoHealing{InitialDelay: "0s", Backoff: "0s"}
			},
			want: []string{"1: db-1 replace"}},
		{name: "release of a member its config preserves is refused",
			action: MemberRelease, names: []string{"db-1"}, members: []member{{config: PreserveNow, change: []func(*Observed){preserved(PreserveNow)}}},
			wantErr: `db-1: the next apply would preserve it again at once (preserved (NOW) for 24h0m0s): set preserve = "NO" on its per-instance config`},
		{name: "release of a failed member that failed_instance_preservation would take again is refused",
			action: MemberRelease, names: []string{"db-1"}, members: []member{{config: "-", change: []func(*Observed){crashed, preserved(PreserveAuto)}}},
			group:   func(g *Group) { g.FailedPreservation = &FailedPreservation{AutoPreserveFailedMax: 1} },
			wantErr: "would preserve it again at once (preserved (AUTO) for 24h0m0s)"},
		{name: "a member the next apply's scale-in removes is refused",
			action: MemberRecreate, names: []string{"db-3"}, members: three,
			group:   func(g *Group) { g.TargetSize = 2 },
			wantErr: "db-3: the next apply removes it (scale-in (HIGHEST_INDEX))"},
		{name: "release of a member not preserved leaves it as it is",
			action: MemberRelease, names: []string{"db-1"}, members: []member{{config: "-"}},
			unchanged: map[string]string{"db-1": "not preserved"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := group(len(tt.members))
			if tt.group != nil {
				tt.group(&g)
			}
			s := state(g)
			s.Configs = map[string]ConfigEntry{}
			var indices []int
			for i := range tt.members {
				indices = append(indices, i+1)
			}
			obs := observed(base(), StatusRunning, indices...)
			for i, m := range tt.members {
				obs[i].UUID = fmt.Sprintf("uuid-%d", i+1)
				for _, c := range m.change {
					c(&obs[i])
				}
				if m.config != "-" {
					e := DefaultConfigEntry()
					e.Preserve = m.config
					s.Configs[obs[i].Name] = e
				}
			}
			got, err := PlanMemberAction(s, obs, tt.action, tt.names, Env{Now: now})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one with %q (plan %v)", err, tt.wantErr, opsOf(got.Plan))
				}
				if len(got.Plan.Waves) != 0 {
					t.Fatalf("a refused action has operations: %v", opsOf(got.Plan))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, opsOf(got.Plan)); diff != "" {
				t.Errorf("operations (-want +got):\n%s", diff)
			}
			if tt.unchanged == nil {
				tt.unchanged = map[string]string{}
			}
			if diff := cmp.Diff(tt.unchanged, got.Unchanged); diff != "" {
				t.Errorf("unchanged (-want +got):\n%s", diff)
			}
		})
	}
}

// The forced operations are the apply's own: a recreation prepares its new definition before the
// member stops, marks the member in flight first, keeps a preserved disk and recreates a
// stateless one; a restart keeps the UUID.
func TestPlanMemberAction_operationsAreTheApplys(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)
	g := group(3)
	g.Template.Disks = append(g.Template.Disks, Disk{DeviceName: "scratch", SizeMiB: 64})
	s := state(g)
	s.Policy = &Policy{Disks: []PolicyDisk{{DeviceName: "data"}}}
	obs := observed(base(), StatusRunning, 1, 2, 3)
	for i := range obs {
		obs[i].UUID = fmt.Sprintf("uuid-%d", i+1)
		obs[i].Instance = built(obs[i].Name, g.Template, *s.Policy, InstanceConfig{})
		obs[i].Attached = obs[i].Instance.Current.Disks
	}
	if p := PlanGroup(s, obs, Env{Now: now}); len(p.Steps) != 0 {
		t.Fatalf("the group is not at its desired state to begin with: %+v", p.Steps)
	}

	recreate, err := PlanMemberAction(s, obs, MemberRecreate, []string{"db-2"}, Env{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	op := opNamed(t, recreate.Plan, "db-2")
	kinds := strings.Join(kindsOf(op), ",")
	mark, defineNext, stop := strings.Index(kinds, "mark"), strings.Index(kinds, "define-next"), strings.Index(kinds, "shutdown")
	if mark != 0 || defineNext < 0 || stop < defineNext {
		t.Errorf("recreation tasks %s: want the in-flight mark first, and the new definition stored before the stop", kinds)
	}
	fates := map[string]Fate{}
	for _, v := range op.Volumes {
		fates[v.DeviceName] = v.Fate
	}
	if fates["data"] != Keep || fates["scratch"] != Recreate || fates[BootDeviceName] != Recreate {
		t.Errorf("volume fates %v: want data kept (preserved), scratch and boot recreated", fates)
	}
	if last := op.Tasks[len(op.Tasks)-1]; last.Kind != TaskStart {
		t.Errorf("last task %s, want start", last.Kind)
	}
	for _, task := range op.Tasks {
		if task.Kind == TaskDefine && task.UUID != "" {
			t.Errorf("the recreated member keeps UUID %q, want a new one", task.UUID)
		}
	}

	restart, err := PlanMemberAction(s, obs, MemberRestart, []string{"db-2"}, Env{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	op = opNamed(t, restart.Plan, "db-2")
	for _, task := range op.Tasks {
		if (task.Kind == TaskDefineNext) && task.UUID != "uuid-2" {
			t.Errorf("restart defines with UUID %q, want the member's own", task.UUID)
		}
		if task.Kind == TaskDefine || task.Kind == TaskUndefine || task.Kind == TaskDeleteVolume {
			t.Errorf("restart has task %s", task.Kind)
		}
	}
	if got := strings.Join(kindsOf(op), ","); !strings.Contains(got, "shutdown,stop-wait") {
		t.Errorf("restart tasks %s: want a graceful stop (shutdown, then wait up to shutdown_timeout)", got)
	}
}

// A preservation the action starts is what the next plan keeps: it plans nothing for the member,
// and the member is kept from a disruptive update.
func TestPlanMemberAction_preserveHoldsInTheNextPlan(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)
	s := state(group(2))
	obs := observed(base(), StatusRunning, 1, 2)
	got, err := PlanMemberAction(s, obs, MemberPreserve, []string{"db-1"}, Env{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	op := opNamed(t, got.Plan, "db-1")
	if len(op.Tasks) != 1 || op.Tasks[0].Kind != TaskPreserve || op.Tasks[0].Record.Preserved != PreserveNow || op.Tasks[0].Record.PreservedSince != now.UnixMilli() {
		t.Fatalf("preserve tasks %+v: want one record write preserving NOW since now", op.Tasks)
	}
	obs[0].Instance = op.Tasks[0].Record
	later := now.Add(time.Minute)
	if p := PlanGroup(s, obs, Env{Now: later}); len(p.Steps) != 0 {
		t.Errorf("the plan after the preservation has steps %+v", p.Steps)
	}
	s.Group.Template.VCPU = 2
	p := PlanGroup(s, obs, Env{Now: later})
	if diff := cmp.Diff([]string{"1: db-2 restart"}, opsOf(p)); diff != "" {
		t.Errorf("a disruptive update after the preservation (-want +got):\n%s", diff)
	}

	released, err := PlanMemberAction(s, obs, MemberRelease, []string{"db-1"}, Env{Now: later})
	if err != nil {
		t.Fatal(err)
	}
	op = opNamed(t, released.Plan, "db-1")
	if op.Kind != OpRestart {
		t.Fatalf("release of a member with a pending update is %s, want the update with it (restart)", op.Kind)
	}
}

// The refusals are typed, so that the provider can tell a bad name from a refused member.
func TestPlanMemberAction_errorsAreTyped(t *testing.T) {
	t.Parallel()
	s := state(group(1))
	obs := observed(base(), StatusRunning, 1)
	_, err := PlanMemberAction(s, obs, MemberRestart, []string{"nope"}, Env{})
	var unknown *UnknownMembersError
	if !errors.As(err, &unknown) || unknown.Unknown[0] != "nope" || unknown.Members[0] != "db-1" {
		t.Fatalf("error %v, want an UnknownMembersError naming nope and db-1", err)
	}
}
