package provider

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// TestTakenOver: an import's plan shows the members as they are, known, each one the plan leaves
// alone saying the apply takes the group over; a null or unknown list stays as it is.
func TestTakenOver(t *testing.T) {
	t.Parallel()
	row := func(name, planned string) instanceRow {
		return instanceRow{Name: name, Index: 1, Status: "RUNNING", Host: "default", PlannedAction: &planned}
	}
	list := func(rows ...instanceRow) types.String {
		var ms []engine.Member
		for _, r := range rows {
			ms = append(ms, engine.Member{Name: r.Name, Index: int(r.Index), Status: engine.Status(r.Status), Host: r.Host, Planned: engine.ShownPlanned(*r.PlannedAction)})
		}
		v, d := instancesValue(ms)
		if d.HasError() {
			t.Fatal(d)
		}
		return v
	}
	tests := map[string]struct {
		in, want types.String
	}{
		"members left as they are": {
			in:   list(row("db-1", "NONE"), row("db-2", "REFRESH: metadata role changed")),
			want: list(row("db-1", "NONE: "+engine.TakenOverWhy), row("db-2", "REFRESH: metadata role changed")),
		},
		"no members": {in: list(), want: list()},
		"null":       {in: types.StringNull(), want: types.StringNull()},
		"unknown":    {in: types.StringUnknown(), want: types.StringUnknown()},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var d diag.Diagnostics
			got := takenOver(tt.in, &d)
			if d.HasError() {
				t.Fatal(d)
			}
			if got.IsNull() != tt.want.IsNull() || got.IsUnknown() != tt.want.IsUnknown() {
				t.Fatalf("takenOver = %v, want %v", got, tt.want)
			}
			if diff := cmp.Diff(instanceRows(tt.want, &d), instanceRows(got, &d)); diff != "" {
				t.Fatalf("rows (-want +got):\n%s", diff)
			}
		})
	}
}

// TestKnownBut: a create plan shows its members only when everything but the skipped attributes
// is known.
func TestKnownBut(t *testing.T) {
	t.Parallel()
	obj := tftypes.Object{AttributeTypes: map[string]tftypes.Type{
		"id": tftypes.String, "instances": tftypes.String,
		"template": tftypes.Object{AttributeTypes: map[string]tftypes.Type{"description": tftypes.String}},
	}}
	val := func(id, instances, description tftypes.Value) tftypes.Value {
		return tftypes.NewValue(obj, map[string]tftypes.Value{"id": id, "instances": instances,
			"template": tftypes.NewValue(obj.AttributeTypes["template"], map[string]tftypes.Value{"description": description})})
	}
	unknown := tftypes.NewValue(tftypes.String, tftypes.UnknownValue)
	known := tftypes.NewValue(tftypes.String, "x")
	tests := map[string]struct {
		v    tftypes.Value
		want bool
	}{
		"all known":                     {val(known, known, known), true},
		"only the skipped ones unknown": {val(unknown, unknown, known), true},
		"a nested value unknown":        {val(unknown, unknown, unknown), false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := knownBut(tt.v, "id", "instances"); got != tt.want {
				t.Fatalf("knownBut = %v, want %v", got, tt.want)
			}
		})
	}
}
