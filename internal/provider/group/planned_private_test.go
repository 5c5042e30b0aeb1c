package group

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
)

// TestPlannedPrivate: what a plan showed of each member travels to its apply as typed values in
// private state, versioned, and comes back as it went; no value is no check; another version,
// or bytes that are not the record, are refused rather than guessed.
func TestPlannedPrivate(t *testing.T) {
	t.Parallel()
	shown := map[string]engine.Planned{
		"db-1": {},
		"db-2": {Kind: engine.PlannedReplace, Why: "boot image changed", Then: engine.PlannedStart},
		"db-3": {Why: "FAILED: within initial_delay", Unhealed: true},
		"db-4": {Kind: engine.PlannedMove, Why: "h2 -> default (cold)"},
	}
	b, err := encodePlanned(shown)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodePlanned(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(shown, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if got, err := decodePlanned(nil); got != nil || err != nil {
		t.Errorf("no value: %v, %v; want nil, nil", got, err)
	}
	if _, err := decodePlanned([]byte(`{"version":2,"members":{}}`)); err == nil || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("another version: %v, want an error naming it", err)
	}
	if _, err := decodePlanned([]byte(`"CREATE"`)); err == nil {
		t.Errorf("not a record: no error")
	}
	// A kind this build does not know ranks as the most disruptive.
	unknown, err := decodePlanned([]byte(`{"version":1,"members":{"db-1":{"kind":"EVACUATE"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]engine.Planned{"db-1": {Kind: engine.PlannedUnrecognized}}, unknown); diff != "" {
		t.Errorf("unknown kind (-want +got):\n%s", diff)
	}
}

// TestCreatesOf: a create plan shows its members only when it creates each one, so its apply
// holds them all to CREATE; an unknown list holds it to nothing.
func TestCreatesOf(t *testing.T) {
	t.Parallel()
	rows := []InstanceRow{{Name: "db-1"}, {Name: "db-2"}}
	want := map[string]engine.Planned{"db-1": {Kind: engine.PlannedCreate}, "db-2": {Kind: engine.PlannedCreate}}
	if diff := cmp.Diff(want, createsOf(rows, true)); diff != "" {
		t.Errorf("createsOf (-want +got):\n%s", diff)
	}
	if got := createsOf(nil, false); got != nil {
		t.Errorf("unknown list: %v, want nil", got)
	}
}

// TestApply_holdsToWhatThePlanShowed: an apply that would treat a member more disruptively than
// the plan showed (here: the plan showed NONE, the change restarts or refreshes the members)
// changes nothing and says why; what the plan showed comes as typed values, not as the text of
// planned_action.
func TestApply_holdsToWhatThePlanShowed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, _ := newPlanResource(t)
	state := createdGroup(t, r, planGroupModel("m1"))
	to := planGroupModel("m2")
	to.ID = to.Name
	var d diag.Diagnostics
	lim := providerdata.NewLimit(ctx, to.Timeouts, "update", "group db", &d)
	shown := map[string]engine.Planned{"db-1": {}, "db-2": {}}
	diags, stored := r.Apply(ctx, lim, &to, &engine.Claim{ID: "owner-1"}, state.encodeGroupSpec(ctx, &d), state.Template, nil, shown)
	if stored || !diags.HasError() || !strings.Contains(fmt.Sprint(diags), "more than the plan showed") {
		t.Fatalf("apply beyond the plan: stored %v, %v; want refused, nothing stored", stored, diags)
	}
}
