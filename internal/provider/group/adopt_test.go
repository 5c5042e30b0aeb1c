package group

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
)

// handMadeDomain defines, on the fake host, a domain no provider created, with one disk of its
// own in the group's pool.
func handMadeDomain(b *fake.Backend, name string) {
	b.Volumes["virt/"+name+".img"] = &fake.Volume{Data: name + " bytes"}
	b.AddUnmanaged(backend.DomainSpec{Name: name, Shape: engine.Shape{DomainType: "qemu", VCPU: 1, MemoryMiB: 64}, Disks: []backend.Disk{{DeviceName: "vda", Pool: "virt", Volume: name + ".img"}}})
}

// TestStatefulGroupModifyPlan_adoptAndAbandon: the group's plan on a fake host, called directly:
// the names-taken error and adopt_existing at create, abandon's checks and warning at update, and
// the destroy plan's warning.
func TestStatefulGroupModifyPlan_adoptAndAbandon(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	withAdopt := func(m StatefulGroupModel) StatefulGroupModel { m.AdoptExisting = types.BoolValue(true); return m }
	withAbandon := func(m StatefulGroupModel, size int64, names ...string) StatefulGroupModel {
		m.Abandon, _ = types.SetValueFrom(ctx, types.StringType, names)
		m.TargetSize = types.Int64Value(size)
		return m
	}
	held := "domains db-1, db-2, which no provider created, have the names group db's members would get (db-<index>). Nothing was changed. Either set adopt_existing = true on the group to take them as its members (each keeps its UUID, disks and power state, and only live changes reach it), or choose another base_instance_name (or name) so that the members get other names"
	cases := map[string]struct {
		// prepare sets the host up and returns the prior state (nil: a create).
		prepare func(t *testing.T, r *StatefulGroupResource, b *fake.Backend) *StatefulGroupModel
		plan    *StatefulGroupModel // nil: a destroy
		want    []string
	}{
		"create over hand-made domains: one error naming them and both ways in": {
			prepare: func(t *testing.T, _ *StatefulGroupResource, b *fake.Backend) *StatefulGroupModel {
				handMadeDomain(b, "db-1")
				handMadeDomain(b, "db-2")
				return nil
			},
			plan: ptrTo(planGroupModel("m1")),
			want: []string{"Error|base_instance_name|Member names taken by existing domains|" + held},
		},
		"create where another group's members have the names": {
			prepare: func(t *testing.T, r *StatefulGroupResource, _ *fake.Backend) *StatefulGroupModel {
				web := planGroupModel("m1") // group web, whose members are named db-<index>
				web.Name = types.StringValue("web")
				createdGroup(t, r, web)
				return nil
			},
			plan: ptrTo(planGroupModel("m1")),
			want: []string{"Error|base_instance_name|Member names taken|group db cannot be created: domains db-1 (a member of group web), db-2 (a member of group web) have the names its members would get. Nothing was changed. Choose another base_instance_name (or name)"},
		},
		"create over hand-made domains with adopt_existing: no error": {
			prepare: func(t *testing.T, _ *StatefulGroupResource, b *fake.Backend) *StatefulGroupModel {
				handMadeDomain(b, "db-1")
				handMadeDomain(b, "db-2")
				return nil
			},
			plan: ptrTo(withAdopt(planGroupModel("m1"))),
			want: []string{"Warning||Existing domains will be adopted|db-1: ADOPT: adopted existing domain (adopt_existing)\ndb-2: ADOPT: adopted existing domain (adopt_existing)\n\nEach keeps its UUID, disks and power state: the apply writes the provider's record into its metadata, live, and records every disk it has as that member's preserved disk (NEVER deleted)."},
		},
		"abandon of a name no member can have: refused on abandon": {
			plan: ptrTo(withAbandon(planGroupModel("m1"), 2, "web-1")),
			want: []string{"Error|abandon|Not a member's name|abandon lists web-1, which no member of this group can be named: members are named db-<index> (for example db-1). Remove it from abandon."},
		},
		"abandon of a member: warned as ABANDON": {
			prepare: func(t *testing.T, r *StatefulGroupResource, _ *fake.Backend) *StatefulGroupModel {
				s := createdGroup(t, r, planGroupModel("m1"))
				return &s
			},
			plan: ptrTo(withAbandon(planGroupModel("m1"), 1, "db-2")),
			want: []string{"Warning||Members will be abandoned|db-2: ABANDON: out of the group, domain and volumes left as they are\n\nThe apply removes the provider's record from each domain's metadata and changes nothing else of it. The names stay out of scale-out while abandon lists them."},
		},
		"scale-out over a hand-made domain: the same error": {
			prepare: func(t *testing.T, r *StatefulGroupResource, b *fake.Backend) *StatefulGroupModel {
				m := planGroupModel("m1")
				m.TargetSize = types.Int64Value(0)
				s := createdGroup(t, r, m)
				handMadeDomain(b, "db-1")
				handMadeDomain(b, "db-2")
				return &s
			},
			plan: ptrTo(planGroupModel("m1")),
			want: []string{"Error|base_instance_name|Member names taken by existing domains|" + held},
		},
		"scale-out over a hand-made domain at the next index with adopt_existing, after a refresh: adopted": {
			prepare: func(t *testing.T, r *StatefulGroupResource, b *fake.Backend) *StatefulGroupModel {
				m := withAdopt(planGroupModel("m1"))
				m.TargetSize = types.Int64Value(1)
				s := createdGroup(t, r, m)
				handMadeDomain(b, "db-2")
				return refreshedGroup(t, r, s)
			},
			plan: ptrTo(withAdopt(planGroupModel("m1"))),
			want: nil,
		},
		"an abandoned member given back with adopt_existing, after a refresh: adopted": {
			prepare: func(t *testing.T, r *StatefulGroupResource, _ *fake.Backend) *StatefulGroupModel {
				s := createdGroup(t, r, withAdopt(planGroupModel("m1")))
				s = updatedGroup(t, r, withAdopt(withAbandon(s, 1, "db-2")))
				return refreshedGroup(t, r, s)
			},
			plan: ptrTo(withAdopt(planGroupModel("m1"))),
			want: nil,
		},
		"destroy: the members deleted and the volumes kept": {
			prepare: func(t *testing.T, r *StatefulGroupResource, b *fake.Backend) *StatefulGroupModel {
				handMadeDomain(b, "db-1")
				s := createdGroup(t, r, withAdopt(planGroupModel("m1")))
				return &s
			},
			want: []string{"Warning||Destroying group db|Members deleted (domain already stopped: undefined): db-1 (adopted), db-2.\nVolumes kept: db-1.img (of db-1 (adopted))."},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r, b := newPlanResource(t)
			var state *StatefulGroupModel
			if c.prepare != nil {
				state = c.prepare(t, r, b)
			}
			req := resource.ModifyPlanRequest{State: groupStateOf(t, state)}
			req.Plan = tfsdk.Plan{Schema: StatefulGroupSchema(), Raw: groupStateOf(t, nil).Raw}
			if c.plan != nil {
				plan := *c.plan
				if state != nil {
					plan.ID, plan.Instances = state.ID, state.Instances
				}
				req.Plan = groupPlanOf(t, plan)
			}
			req.Config = tfsdk.Config{Schema: StatefulGroupSchema(), Raw: req.Plan.Raw}
			resp := resource.ModifyPlanResponse{Plan: req.Plan}
			r.ModifyPlan(ctx, req, &resp)
			if d := cmp.Diff(c.want, diagnosticTexts(resp.Diagnostics)); d != "" {
				t.Errorf("diagnostics (-want +got):\n%s", d)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

func TestDestroyAccount(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		members   []engine.Destroyed
		earlier   []engine.Left
		abandoned []string
		left      []engine.Left
		want      string
	}{
		"no member": {nil, nil, nil, nil, "The group has no member to delete."},
		"members, nothing kept": {[]engine.Destroyed{{Name: "db-1", Takedown: engine.TakedownShutdown}, {Name: "db-2", Takedown: engine.TakedownShutdown}}, nil, nil, nil,
			"Members deleted (domain shut down and undefined): db-1, db-2.\nVolumes kept: none; every member's own volumes are deleted."},
		"an adopted member and a NEVER volume, one abandoned": {
			[]engine.Destroyed{{Name: "db-1", Adopted: true, Takedown: engine.TakedownShutdown, Kept: []string{"legacy.img"}}, {Name: "db-2", Takedown: engine.TakedownShutdown, Kept: []string{"db-2-data.qcow2"}}}, nil, []string{"db-3"}, nil,
			"Members deleted (domain shut down and undefined): db-1 (adopted), db-2.\nVolumes kept: legacy.img (of db-1 (adopted)), db-2-data.qcow2 (of db-2).\nAbandoned, left as they are: db-3."},
		"volumes of the group's names it did not make": {
			[]engine.Destroyed{{Name: "db-1", Takedown: engine.TakedownShutdown}}, nil, nil, []engine.Left{{Host: "default", Volume: "db-2-boot.qcow2"}, {Host: "h2", Volume: "db-5-nvram.fd"}},
			"Members deleted (domain shut down and undefined): db-1.\nVolumes kept: db-2-boot.qcow2 on host default (not made by this group: left), db-5-nvram.fd on host h2 (not made by this group: left)."},
		"only volumes it did not make": {
			nil, nil, nil, []engine.Left{{Host: "default", Volume: "db-2-boot.qcow2"}},
			"The group has no member to delete.\nVolumes kept: db-2-boot.qcow2 on host default (not made by this group: left)."},
		"data volumes an earlier scale-in kept": {
			[]engine.Destroyed{{Name: "db-1", Takedown: engine.TakedownShutdown, Kept: []string{"db-1-data.qcow2"}}}, []engine.Left{{Host: "default", Volume: "db-3-data.qcow2"}}, nil, nil,
			"Members deleted (domain shut down and undefined): db-1.\nVolumes kept: db-1-data.qcow2 (of db-1), db-3-data.qcow2 on host default (no member holds it: kept by an earlier scale-in under its delete_rule)."},
		"a member per state, in the plan's order": {
			[]engine.Destroyed{
				{Name: "db-1", Takedown: engine.TakedownShutdown},
				{Name: "db-2", Takedown: engine.TakedownPowerOff, Halted: engine.StatusPaused},
				{Name: "db-3", Takedown: engine.TakedownNone},
				{Name: "db-4", Takedown: engine.TakedownPowerOff, Halted: engine.StatusFailed},
				{Name: "db-5", Adopted: true, Takedown: engine.TakedownPowerOff, Halted: engine.StatusPaused},
				{Name: "db-6", Takedown: engine.TakedownPowerOff, Halted: engine.StatusSuspended},
				{Name: "db-7", Takedown: engine.TakedownShutdown},
			}, nil, nil, nil,
			"Members deleted (domain shut down and undefined): db-1, db-7.\n" +
				"Members deleted (paused: powered off without waiting, then undefined): db-2, db-5 (adopted).\n" +
				"Members deleted (domain already stopped: undefined): db-3.\n" +
				"Members deleted (crashed: powered off without waiting, then undefined): db-4.\n" +
				"Members deleted (suspended (pmsuspended): powered off without waiting, then undefined): db-6.\n" +
				"Volumes kept: none; every member's own volumes are deleted."},
		"shutdown_timeout 0s": {[]engine.Destroyed{{Name: "db-1", Takedown: engine.TakedownPowerOff}}, nil, nil, nil,
			"Members deleted (shutdown_timeout \"0s\": domain powered off at once and undefined): db-1.\nVolumes kept: none; every member's own volumes are deleted."},
		"only volumes an earlier scale-in kept": {
			nil, []engine.Left{{Host: "h2", Volume: "db-2-data.qcow2"}}, nil, nil,
			"The group has no member to delete.\nVolumes kept: db-2-data.qcow2 on host h2 (no member holds it: kept by an earlier scale-in under its delete_rule)."},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if d := cmp.Diff(c.want, destroyAccount(c.members, c.earlier, c.abandoned, c.left)); d != "" {
				t.Errorf("destroyAccount (-want +got):\n%s", d)
			}
		})
	}
}

// refreshedGroup reads the group's record and members as the group's Read (the refresh before a
// plan) does, which keeps what it observed for the plans that follow in this process, and
// returns the state s.
func refreshedGroup(t *testing.T, r *StatefulGroupResource, s StatefulGroupModel) *StatefulGroupModel {
	t.Helper()
	ctx := context.Background()
	rec, _, found, err := r.Data.RefreshRecord(ctx, s.Name.ValueString())
	if err != nil || !found {
		t.Fatalf("read record: found %v, %v", found, err)
	}
	if _, err := r.Data.Observe(ctx, rec); err != nil {
		t.Fatalf("observe: %v", err)
	}
	return &s
}

// updatedGroup applies m to the group on r's host, as an apply of a change would, and returns
// the state that apply leaves.
func updatedGroup(t *testing.T, r *StatefulGroupResource, m StatefulGroupModel) StatefulGroupModel {
	t.Helper()
	ctx := context.Background()
	var d diag.Diagnostics
	lim := providerdata.NewLimit(ctx, m.Timeouts, "update", "group db", &d)
	diags, stored := r.Apply(ctx, lim, &m, &engine.Claim{ID: "owner-1"}, "", nil, nil, nil)
	if diags.HasError() || !stored || d.HasError() {
		t.Fatalf("update: stored %v, %v %v", stored, diags, d)
	}
	return m
}

// TestObservationKey_membershipScope: a plan whose group takes other listed domains as members
// than the group a refresh observed (a target_size that reaches further with adopt_existing, a
// name given back from abandon) observes again; target_size alone, without adopt_existing,
// decides no member and keeps the refresh's observation.
func TestObservationKey_membershipScope(t *testing.T) {
	t.Parallel()
	base := engine.GroupState{Group: engine.Group{Name: "db", Base: "db", TargetSize: 2}, Pool: "p"}
	with := func(f func(g *engine.Group)) engine.GroupState {
		s := base
		f(&s.Group)
		return s
	}
	adopting := with(func(g *engine.Group) { g.AdoptExisting = true })
	cases := map[string]struct {
		from, to engine.GroupState
		same     bool
	}{
		"nothing changed":                     {base, base, true},
		"target_size, without adopt_existing": {base, with(func(g *engine.Group) { g.TargetSize = 3 }), true},
		"adopt_existing set":                  {base, adopting, false},
		"target_size, with adopt_existing":    {adopting, with(func(g *engine.Group) { g.AdoptExisting, g.TargetSize = true, 3 }), false},
		"a name given back from abandon":      {with(func(g *engine.Group) { g.Abandon = []string{"db-2"} }), base, false},
		"abandon in another order: the same":  {with(func(g *engine.Group) { g.Abandon = []string{"db-2", "db-3"} }), with(func(g *engine.Group) { g.Abandon = []string{"db-3", "db-2"} }), true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := providerdata.KeyOf(c.from) == providerdata.KeyOf(c.to); got != c.same {
				t.Errorf("same observation key = %v, want %v", got, c.same)
			}
		})
	}
}
