package provider

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/actions"
)

// actionConfig is the configuration of an instance action naming the members of group "db".
func actionConfig(t *testing.T, kind engine.MemberAction, members ...string) tfsdk.Config {
	t.Helper()
	sch := actions.InstanceActionSchema(kind)
	names := make([]tftypes.Value, len(members))
	for i, m := range members {
		names[i] = tftypes.NewValue(tftypes.String, m)
	}
	raw := tftypes.NewValue(sch.Type().TerraformType(context.Background()), map[string]tftypes.Value{
		"group":     tftypes.NewValue(tftypes.String, "db"),
		"instances": tftypes.NewValue(tftypes.Set{ElementType: tftypes.String}, names),
	})
	return tfsdk.Config{Schema: sch, Raw: raw}
}

// TestInstanceAction_invoke calls the actions as Terraform does, on a group of two on the fake
// host: the recreate of db-2 gives it a new UUID and tells its progress; a name that is not a
// member is refused on instances, naming it and the members; another apply's lease refuses the
// action at plan and when it runs, and nothing changes.
func TestInstanceAction_invoke(t *testing.T) {
	ctx := context.Background()
	uuids := func(b *fake.Backend) map[string]string {
		out := map[string]string{}
		for n, d := range b.Domains {
			out[n] = d.UUID
		}
		return out
	}
	cases := map[string]struct {
		kind     engine.MemberAction
		members  []string
		leased   bool
		progress []string
		// changed are the members with a new UUID; errs the diagnostics' summaries and a part of
		// their detail.
		changed []string
		errs    []string
	}{
		"recreate": {kind: engine.MemberRecreate, members: []string{"db-2"},
			progress: []string{"instance 1 of 1 recreated: db-2"}, changed: []string{"db-2"}},
		"restart keeps the UUID": {kind: engine.MemberRestart, members: []string{"db-1", "db-2"},
			progress: []string{"instance 1 of 2 restarted: db-1", "instance 2 of 2 restarted: db-2"}},
		"preserve of a member preserved already": {kind: engine.MemberPreserve, members: []string{"db-1"}},
		"unknown member": {kind: engine.MemberRecreate, members: []string{"db-2", "db-7"},
			errs: []string{`Not a member of the group: "db-7" is not a member of group db (its members are db-1, db-2)`}},
		"another apply holds the lease": {kind: engine.MemberRecreate, members: []string{"db-2"}, leased: true,
			errs: []string{"Group is being changed by another apply: group db is being changed by another apply (another apply)"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			r, b := newPlanResource(t)
			createdGroup(t, r, planGroupModel("m1"))
			if c.kind == engine.MemberPreserve {
				// Preserved once: the second preserve leaves it as it is.
				a := &actions.InstanceAction{Kind: c.kind, Data: r.Data}
				resp := action.InvokeResponse{}
				a.Invoke(ctx, action.InvokeRequest{Config: actionConfig(t, c.kind, c.members...)}, &resp)
				if resp.Diagnostics.HasError() {
					t.Fatal(resp.Diagnostics)
				}
				c.progress = []string{"db-1: already preserved (NOW) until " + planClock.Add(24*time.Hour).UTC().Format(time.RFC3339) + ", left as it is"}
			}
			if c.leased {
				other := *r.Data.Reconciler
				other.Holder, other.HolderHost, other.HolderPID = "another apply", "elsewhere", 1
				other.Now = func() time.Time { return planClock }
				if _, _, err := other.Hold(ctx, "db", nil); err != nil {
					t.Fatal(err)
				}
			}
			before := uuids(b)
			a := &actions.InstanceAction{Kind: c.kind, Data: r.Data}
			cfg := actionConfig(t, c.kind, c.members...)
			var errs []string
			planned := action.ModifyPlanResponse{}
			a.ModifyPlan(ctx, action.ModifyPlanRequest{Config: cfg}, &planned)
			var told []string
			resp := action.InvokeResponse{SendProgress: func(e action.InvokeProgressEvent) { told = append(told, e.Message) }}
			a.Invoke(ctx, action.InvokeRequest{Config: cfg}, &resp)
			for _, d := range append(planned.Diagnostics, resp.Diagnostics...) {
				errs = append(errs, d.Summary()+": "+d.Detail())
			}
			if len(errs) != 2*len(c.errs) {
				t.Fatalf("diagnostics at plan and run %q, want %q at each", errs, c.errs)
			}
			for i, want := range c.errs {
				for _, got := range []string{errs[i], errs[len(c.errs)+i]} {
					if !strings.Contains(got, want) {
						t.Errorf("diagnostic %q, want one with %q", got, want)
					}
				}
			}
			if diff := cmp.Diff(c.progress, told); diff != "" {
				t.Errorf("progress (-want +got):\n%s", diff)
			}
			after := uuids(b)
			var changed []string
			for _, n := range []string{"db-1", "db-2"} {
				if after[n] != before[n] {
					changed = append(changed, n)
				}
			}
			if diff := cmp.Diff(c.changed, changed); diff != "" {
				t.Errorf("members with a new UUID (-want +got):\n%s", diff)
			}
		})
	}
}
