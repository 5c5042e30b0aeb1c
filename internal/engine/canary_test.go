package engine

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseCanary(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in      string
		want    Canary
		wantErr string
	}{
		{in: "0", want: Canary{}},
		{in: "1", want: Canary{Fixed: 1}},
		{in: "12", want: Canary{Fixed: 12}},
		{in: "0%", want: Canary{}},
		{in: "25%", want: Canary{Percent: 25}},
		{in: "100%", want: Canary{Percent: 100}},
		{in: "-1", wantErr: `"-1" is neither a whole number of members of at least 0 nor a percentage such as "25%"`},
		{in: "101%", wantErr: `"101%" is not a percentage from 0% to 100%`},
		{in: "1.5", wantErr: `"1.5" is neither a whole number of members of at least 0 nor a percentage such as "25%"`},
		{in: "", wantErr: `"" is neither a whole number of members of at least 0 nor a percentage such as "25%"`},
		{in: "01", wantErr: `"01" is neither a whole number of members of at least 0 nor a percentage such as "25%"`},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseCanary(c.in)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if d := cmp.Diff(c.wantErr, gotErr); d != "" {
				t.Fatalf("error (-want +got):\n%s", d)
			}
			if d := cmp.Diff(c.want, got); err == nil && d != "" {
				t.Errorf("ParseCanary(%q) (-want +got):\n%s", c.in, d)
			}
		})
	}
}

func TestCanary_Members(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		canary Canary
		size   int
		want   int
	}{
		{"a number is that number", Canary{Fixed: 2}, 4, 2},
		{"a number above the size is the size's business", Canary{Fixed: 9}, 4, 9},
		{"zero holds every member", Canary{}, 4, 0},
		{"25% of 4", Canary{Percent: 25}, 4, 1},
		{"25% of 3 rounds up", Canary{Percent: 25}, 3, 1},
		{"1% of 4 is still a member", Canary{Percent: 1}, 4, 1},
		{"50% of 5 rounds up", Canary{Percent: 50}, 5, 3},
		{"100%", Canary{Percent: 100}, 7, 7},
		{"a percentage of an empty group", Canary{Percent: 50}, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.canary.Members(c.size); got != c.want {
				t.Errorf("%+v.Members(%d) = %d, want %d", c.canary, c.size, got, c.want)
			}
		})
	}
}

// applied is the group's members once p ran as planned: each step's member has its step's record,
// each created member the record of its creation, each deleted member is gone; a member that is
// replaced or created gets a new UUID ("new-<name>").
func applied(g Group, obs []Observed, p GroupPlan) []Observed {
	out := make([]Observed, 0, len(obs)+len(p.Create))
	steps := map[string]Step{}
	for _, st := range p.Steps {
		steps[st.Name] = st
	}
	for _, o := range obs {
		if slices.Contains(p.Delete, o.Name) {
			continue
		}
		if st, ok := steps[o.Name]; ok {
			if st.Changed() {
				o.Instance = st.Recorded()
				if st.Action == ActionReplace {
					o.UUID = "new-" + o.Name
				}
			}
			o.Status, o.StateReason = g.DesiredStatus(), StateReasonNone
		}
		out = append(out, o)
	}
	for _, m := range p.Create {
		tpl := g.Template
		if m.Template != nil {
			tpl = *m.Template
		}
		out = append(out, Observed{Name: m.Name, Index: m.Index, Status: g.DesiredStatus(), UUID: "new-" + m.Name, Instance: m.Plan.Applied(tpl)})
	}
	return out
}

// canaryView is what a canary test compares of a plan: its waves, the members it holds back and
// the members on the group's template once it ran (the members' own revisions, as Final says).
type canaryView struct {
	Waves string
	Held  []string
	OnNew []string
}

func viewCanary(g Group, p GroupPlan) canaryView {
	v := canaryView{Waves: waveView(p)}
	rev := g.Template.Revision()
	for _, m := range p.Final {
		if m.Planned.Held {
			v.Held = append(v.Held, m.Name)
		}
		if m.Revision == rev {
			v.OnNew = append(v.OnNew, m.Name)
		}
	}
	return v
}

func TestPlanGroup_canary(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	newImage := func(g *Group) { g.Template.BootDisk.SourceImage = "/images/new.qcow2" }
	moreCPU := func(g *Group) { g.Template.VCPU = 2 }
	metadata := func(g *Group) { g.Template.Metadata = map[string]string{"role": "db", "k": "v"} }
	fixed := func(n int) *Canary { return &Canary{Fixed: n} }
	percent := func(n int) *Canary { return &Canary{Percent: n} }
	cases := []struct {
		name   string
		size   int
		change func(*Group)
		canary *Canary
		// members are the indices observed; onNew those of them already built from the changed
		// template (canaries of an earlier apply); status and reasons how the host shows some.
		members []int
		onNew   []int
		status  map[string]Status
		heal    bool
		want    canaryView
	}{
		{name: "a hold at 1 of 4 replaces the lowest index, the rest are held back",
			size: 4, change: newImage, canary: fixed(1), members: []int{1, 2, 3, 4},
			want: canaryView{Waves: "replace db-1", Held: []string{"db-2", "db-3", "db-4"}, OnNew: []string{"db-1"}}},
		{name: "a restart is held as a replacement is",
			size: 4, change: moreCPU, canary: fixed(1), members: []int{1, 2, 3, 4},
			want: canaryView{Waves: "restart db-1", Held: []string{"db-2", "db-3", "db-4"}, OnNew: []string{"db-1"}}},
		{name: "a hold at 0 holds every member",
			size: 4, change: newImage, canary: fixed(0), members: []int{1, 2, 3, 4},
			want: canaryView{Held: []string{"db-1", "db-2", "db-3", "db-4"}}},
		{name: "held across applies: the canary counts, nothing more moves",
			size: 4, change: newImage, canary: fixed(1), members: []int{1, 2, 3, 4}, onNew: []int{1},
			want: canaryView{Held: []string{"db-2", "db-3", "db-4"}, OnNew: []string{"db-1"}}},
		{name: "raising the hold to 2 goes on with one more",
			size: 4, change: newImage, canary: fixed(2), members: []int{1, 2, 3, 4}, onNew: []int{1},
			want: canaryView{Waves: "replace db-2", Held: []string{"db-3", "db-4"}, OnNew: []string{"db-1", "db-2"}}},
		{name: "removing the hold goes on with the rest, under max_unavailable",
			size: 4, change: newImage, members: []int{1, 2, 3, 4}, onNew: []int{1, 2},
			want: canaryView{Waves: "replace db-3 | replace db-4", OnNew: []string{"db-1", "db-2", "db-3", "db-4"}}},
		{name: "a hold above the group's size holds nothing",
			size: 2, change: newImage, canary: fixed(3), members: []int{1, 2},
			want: canaryView{Waves: "replace db-1 | replace db-2", OnNew: []string{"db-1", "db-2"}}},
		{name: "50% of 4 is 2, in waves of max_unavailable",
			size: 4, change: newImage, canary: percent(50), members: []int{1, 2, 3, 4},
			want: canaryView{Waves: "replace db-1 | replace db-2", Held: []string{"db-3", "db-4"}, OnNew: []string{"db-1", "db-2"}}},
		{name: "25% of 3 rounds up to 1",
			size: 3, change: newImage, canary: percent(25), members: []int{1, 2, 3},
			want: canaryView{Waves: "replace db-1", Held: []string{"db-2", "db-3"}, OnNew: []string{"db-1"}}},
		{name: "0% holds every member",
			size: 3, change: newImage, canary: percent(0), members: []int{1, 2, 3},
			want: canaryView{Held: []string{"db-1", "db-2", "db-3"}}},
		{name: "100% holds nothing",
			size: 2, change: newImage, canary: percent(100), members: []int{1, 2},
			want: canaryView{Waves: "replace db-1 | replace db-2", OnNew: []string{"db-1", "db-2"}}},
		{name: "members on the group's template count first, whatever their index",
			size: 4, change: newImage, canary: fixed(1), members: []int{1, 2, 3, 4}, onNew: []int{3},
			want: canaryView{Held: []string{"db-1", "db-2", "db-4"}, OnNew: []string{"db-3"}}},
		{name: "lowering the hold never moves a canary back",
			size: 4, change: newImage, canary: fixed(1), members: []int{1, 2, 3, 4}, onNew: []int{1, 2},
			want: canaryView{Held: []string{"db-3", "db-4"}, OnNew: []string{"db-1", "db-2"}}},
		{name: "a live change reaches every member",
			size: 4, change: metadata, canary: fixed(1), members: []int{1, 2, 3, 4},
			want: canaryView{Waves: "refresh db-1,refresh db-2,refresh db-3,refresh db-4", OnNew: []string{"db-1", "db-2", "db-3", "db-4"}}},
		{name: "minimal_action RESTART makes a live change disruptive: it is held",
			size: 3, change: func(g *Group) { metadata(g); g.Policy.MinimalAction = ActionRestart }, canary: fixed(1), members: []int{1, 2, 3},
			want: canaryView{Waves: "restart db-1", Held: []string{"db-2", "db-3"}, OnNew: []string{"db-1"}}},
		{name: "scale-out during a hold: the new member is built from the held members' template",
			size: 5, change: newImage, canary: fixed(1), members: []int{1, 2, 3, 4}, onNew: []int{1},
			want: canaryView{Waves: "create db-5", Held: []string{"db-2", "db-3", "db-4", "db-5"}, OnNew: []string{"db-1"}}},
		{name: "scale-out with the change: the lowest index is the canary, the new member is held",
			size: 5, change: newImage, canary: fixed(1), members: []int{1, 2, 3, 4},
			want: canaryView{Waves: "create db-5 | replace db-1", Held: []string{"db-2", "db-3", "db-4", "db-5"}, OnNew: []string{"db-1"}}},
		{name: "scale-out with room in the hold: lower indices go first, the new member is held",
			size: 5, change: newImage, canary: fixed(2), members: []int{1, 2, 3, 4}, onNew: []int{1},
			want: canaryView{Waves: "create db-5 | replace db-2", Held: []string{"db-3", "db-4", "db-5"}, OnNew: []string{"db-1", "db-2"}}},
		{name: "a percentage follows target_size: 50% of 6 is 3",
			size: 6, change: newImage, canary: percent(50), members: []int{1, 2, 3, 4},
			want: canaryView{Waves: "create db-5,create db-6 | replace db-1 | replace db-2 | replace db-3", Held: []string{"db-4", "db-5", "db-6"}, OnNew: []string{"db-1", "db-2", "db-3"}}},
		{name: "scale-out of a group all on the new template: nothing to hold back to",
			size: 5, change: newImage, canary: fixed(1), members: []int{1, 2, 3, 4}, onNew: []int{1, 2, 3, 4},
			want: canaryView{Waves: "create db-5", OnNew: []string{"db-1", "db-2", "db-3", "db-4", "db-5"}}},
		{name: "a held member whose domain is gone is built again on the held template",
			size: 4, change: newImage, canary: fixed(1), members: []int{1, 2, 4}, onNew: []int{1}, heal: true,
			want: canaryView{Waves: "create db-3", Held: []string{"db-2", "db-3", "db-4"}, OnNew: []string{"db-1"}}},
		{name: "a canary whose domain is gone is built again on the group's template",
			size: 4, change: newImage, canary: fixed(1), members: []int{2, 3, 4}, heal: true,
			want: canaryView{Waves: "create db-1", Held: []string{"db-2", "db-3", "db-4"}, OnNew: []string{"db-1"}}},
		{name: "scale-in: the hold counts the members that stay",
			size: 3, change: newImage, canary: fixed(1), members: []int{1, 2, 3, 4}, onNew: []int{4},
			want: canaryView{Waves: "delete db-4 | replace db-1", Held: []string{"db-2", "db-3"}, OnNew: []string{"db-1"}}},
		{name: "a held member that crashed is healed on its own template",
			size: 4, change: newImage, canary: fixed(1), members: []int{1, 2, 3, 4}, onNew: []int{1}, heal: true,
			status: map[string]Status{"db-3": StatusStopped},
			want:   canaryView{Waves: "replace db-3", Held: []string{"db-2", "db-3", "db-4"}, OnNew: []string{"db-1"}}},
		{name: "a canary that crashed is healed on the group's template",
			size: 4, change: newImage, canary: fixed(1), members: []int{1, 2, 3, 4}, onNew: []int{1}, heal: true,
			status: map[string]Status{"db-1": StatusStopped},
			want:   canaryView{Waves: "replace db-1", Held: []string{"db-2", "db-3", "db-4"}, OnNew: []string{"db-1"}}},
		{name: "a held member that is down is started on its own template, the canary first in the budget",
			size: 3, change: newImage, canary: fixed(1), members: []int{1, 2, 3},
			status: map[string]Status{"db-3": StatusStopped},
			want:   canaryView{Waves: "power db-3 | replace db-1", Held: []string{"db-2", "db-3"}, OnNew: []string{"db-1"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			g := group(c.size)
			old := g.Template
			c.change(&g)
			g.Policy.Canary = c.canary
			if c.heal {
				g.AutoHealing = &AutoHealing{InitialDelay: "0s", Backoff: "60s", MaxConsecutiveFailures: 3}
			}
			var obs []Observed
			for _, i := range c.members {
				tpl := old
				if slices.Contains(c.onNew, i) {
					tpl = g.Template
				}
				o := observed(tpl, StatusRunning, i)[0]
				o.UUID = "uuid-" + o.Name
				if st, ok := c.status[o.Name]; ok {
					o.Status, o.StateReason = st, StateReasonCrashed
				}
				obs = append(obs, o)
			}
			s := state(g)
			env := Env{Now: now}
			p := PlanGroup(s, obs, env)
			if len(p.Blocked) > 0 {
				t.Fatalf("blocked: %v", p.Blocked)
			}
			if d := cmp.Diff(c.want, viewCanary(g, p)); d != "" {
				t.Errorf("plan (-want +got):\n%s", d)
			}
			for _, m := range p.Final {
				if m.Planned.Held && m.Revision != old.Revision() {
					t.Errorf("%s is held back on revision %s, not on its own %s", m.Name, m.Revision, old.Revision())
				}
			}
			// Applying the plan and planning again changes nothing: a hold is the desired
			// state, and the members held stay held.
			after := applied(g, obs, p)
			for _, o := range after {
				want := old.Revision()
				if slices.Contains(c.want.OnNew, o.Name) {
					want = g.Template.Revision()
				}
				if o.Instance.TemplateRevision != want {
					t.Errorf("after the apply %s is on revision %s, want %s", o.Name, o.Instance.TemplateRevision, want)
				}
			}
			again := PlanGroup(s, after, env)
			if !again.Idle() {
				t.Errorf("the plan after the apply is not idle: %q, blocked %v", waveView(again), again.Blocked)
			}
			if d := cmp.Diff(c.want.Held, viewCanary(g, again).Held); d != "" {
				t.Errorf("held back after the apply (-want +got):\n%s", d)
			}
			// A refresh shows the same members held back as the plan (the list an idle plan
			// shows).
			var refreshed []string
			held := s.HeldBack(after)
			for _, o := range after {
				if held[o.Name] {
					refreshed = append(refreshed, o.Name)
				}
			}
			slices.Sort(refreshed)
			if d := cmp.Diff(c.want.Held, refreshed); d != "" {
				t.Errorf("held back as a refresh shows it (-want +got):\n%s", d)
			}
		})
	}
}

// TestPlanGroup_canaryPlannedAction checks what the plan shows of a member held back: NONE, with
// the hold as its reason, and its own revision; a member created beyond the hold says what it is
// built from.
func TestPlanGroup_canaryPlannedAction(t *testing.T) {
	t.Parallel()
	g := group(3)
	old := g.Template
	g.Template.BootDisk.SourceImage = "/images/new.qcow2"
	g.Policy.Canary = &Canary{Fixed: 1}
	p := PlanGroup(state(g), observed(old, StatusRunning, 1, 2), Env{})
	var got []string
	for _, m := range p.Final {
		got = append(got, m.Name+"="+m.Planned.String()+" @"+m.Revision)
	}
	want := []string{
		"db-1=REPLACE: boot image changed @" + g.Template.Revision(),
		"db-2=NONE: held back by update_policy.canary: stays on its template revision until the hold is raised or removed @" + old.Revision(),
		"db-3=CREATE: built from the template of the members held back by update_policy.canary @" + old.Revision(),
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("planned actions (-want +got):\n%s", d)
	}
}

// TestPlanRollback_canary checks that a rollback under a hold puts back only the canaries: the
// members held back were never changed.
func TestPlanRollback_canary(t *testing.T) {
	t.Parallel()
	g := group(4)
	old := g.Template
	g.Template.BootDisk.SourceImage = "/images/new.qcow2"
	g.Policy.Canary = &Canary{Fixed: 2}
	g.Policy.OnFailure = OnFailureRollback
	s := state(g)
	obs := observed(old, StatusRunning, 1, 2, 3, 4)
	forward := PlanGroup(s, obs, Env{})
	if got, want := waveView(forward), "replace db-1 | replace db-2"; got != want {
		t.Fatalf("forward waves %q, want %q", got, want)
	}
	// db-1 was replaced, db-2's replacement started and failed its wait.
	now := applied(g, obs, forward)
	rp := PlanRollback(s, forward, []string{"db-1", "db-2"}, now, Env{})
	var got []RolledBack
	got = append(got, rp.Members...)
	want := []RolledBack{{Name: "db-2", Kind: OpReplace, Revision: old.Revision()}, {Name: "db-1", Kind: OpReplace, Revision: old.Revision()}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("rolled back (-want +got):\n%s", d)
	}
}

// TestPlanMemberAction_canary checks that a recreation a user asks for of a member held back
// recreates it from its own template: an action acts on a member, it does not release the hold.
// A canary's recreation keeps the group's template.
func TestPlanMemberAction_canary(t *testing.T) {
	t.Parallel()
	g := group(3)
	old := g.Template
	g.Template.BootDisk.SourceImage = "/images/new.qcow2"
	g.Policy.Canary = &Canary{Fixed: 1}
	obs := append(observed(g.Template, StatusRunning, 1), observed(old, StatusRunning, 2, 3)...)
	for _, c := range []struct {
		name   string
		member string
		want   string
	}{
		{"a held member stays on its own template", "db-2", old.Revision()},
		{"a canary stays on the group's template", "db-1", g.Template.Revision()},
	} {
		t.Run(c.name, func(t *testing.T) {
			ap, err := PlanMemberAction(state(g), obs, MemberRecreate, []string{c.member}, Env{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, st := range ap.Plan.Steps {
				got = append(got, st.Name+" "+st.Action.String()+" @"+st.Revision)
			}
			if d := cmp.Diff([]string{c.member + " REPLACE @" + c.want}, got); d != "" {
				t.Errorf("steps (-want +got):\n%s", d)
			}
		})
	}
}
