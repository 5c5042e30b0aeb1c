package provider

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/virtfleet/terraform-provider-virt/internal/provider/group"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/protocol"
)

// The group's value as Terraform encodes it (instances a map of objects by member name) and as the
// framework does (instances a string), reduced to the attributes that matter here.
var (
	memberType = func() tftypes.Object {
		types := map[string]tftypes.Type{}
		for _, ia := range protocol.InstanceAttributes {
			types[ia.Name] = tftypes.String
			if ia.Number {
				types[ia.Name] = tftypes.Number
			}
		}
		return tftypes.Object{AttributeTypes: types}
	}()
	terraformGroupType = tftypes.Object{AttributeTypes: map[string]tftypes.Type{
		"name": tftypes.String, "target_size": tftypes.Number, "instances": tftypes.Map{ElementType: memberType},
	}}
	frameworkGroupType = tftypes.Object{AttributeTypes: map[string]tftypes.Type{
		"name": tftypes.String, "target_size": tftypes.Number, "instances": tftypes.String,
	}}
)

func member(name string, index int64, health any) tftypes.Value {
	vals := map[string]tftypes.Value{}
	for _, ia := range protocol.InstanceAttributes {
		vals[ia.Name] = tftypes.NewValue(tftypes.String, ia.Name+"-of-"+name)
	}
	vals["name"] = tftypes.NewValue(tftypes.String, name)
	vals["index"] = tftypes.NewValue(tftypes.Number, index)
	vals["health"] = tftypes.NewValue(tftypes.String, health)
	return tftypes.NewValue(memberType, vals)
}

func groupValue(t tftypes.Type, instances tftypes.Value) tftypes.Value {
	return tftypes.NewValue(t, map[string]tftypes.Value{
		"name":        tftypes.NewValue(tftypes.String, "db"),
		"target_size": tftypes.NewValue(tftypes.Number, 3),
		"instances":   instances,
	})
}

func encode(t *testing.T, typ tftypes.Type, v tftypes.Value) *tfprotov6.DynamicValue {
	t.Helper()
	dv, err := tfprotov6.NewDynamicValue(typ, v)
	if err != nil {
		t.Fatal(err)
	}
	return &dv
}

func decode(t *testing.T, typ tftypes.Type, dv *tfprotov6.DynamicValue) tftypes.Value {
	t.Helper()
	v, err := dv.Unmarshal(typ)
	if err != nil {
		t.Fatalf("decode as %s: %v", typ, err)
	}
	return v
}

// TestInstancesRoundTrip: a group value from Terraform, rewritten for the framework, reads there
// as the JSON of the members' list in the provider's order (by index, then named members by name,
// although Terraform's map is ordered by name), with the other attributes untouched, and rewritten
// back it is the value Terraform sent, nulls inside members and null or unknown maps included.
func TestInstancesRoundTrip(t *testing.T) {
	mapType := tftypes.Map{ElementType: memberType}
	tests := []struct {
		name      string
		instances tftypes.Value
		framework tftypes.Value // instances as the framework must see it
	}{
		{"members", tftypes.NewValue(mapType, map[string]tftypes.Value{"db-10": member("db-10", 10, "HEALTHY"), "db-2": member("db-2", 2, nil),
			"cache": member("cache", 0, "HEALTHY")}), tftypes.Value{}},
		{"no members", tftypes.NewValue(mapType, map[string]tftypes.Value{}), tftypes.NewValue(tftypes.String, "[]")},
		{"null", tftypes.NewValue(mapType, nil), tftypes.NewValue(tftypes.String, nil)},
		{"unknown", tftypes.NewValue(mapType, tftypes.UnknownValue), tftypes.NewValue(tftypes.String, tftypes.UnknownValue)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sent := groupValue(terraformGroupType, tt.instances)
			dv := encode(t, terraformGroupType, sent)
			if err := protocol.ToFramework(dv); err != nil {
				t.Fatal(err)
			}
			fw := decode(t, frameworkGroupType, dv)
			var attrs map[string]tftypes.Value
			if err := fw.As(&attrs); err != nil {
				t.Fatal(err)
			}
			if !attrs["name"].Equal(tftypes.NewValue(tftypes.String, "db")) || !attrs["target_size"].Equal(tftypes.NewValue(tftypes.Number, 3)) {
				t.Errorf("other attributes changed: %v", attrs)
			}
			if tt.framework.Type() != nil && !attrs["instances"].Equal(tt.framework) {
				t.Errorf("framework sees instances %v, want %v", attrs["instances"], tt.framework)
			}
			if tt.name == "members" {
				var text string
				if err := attrs["instances"].As(&text); err != nil {
					t.Fatal(err)
				}
				var rows []group.InstanceRow
				if err := json.Unmarshal([]byte(text), &rows); err != nil {
					t.Fatalf("instances %q: %v", text, err)
				}
				var order []string
				for _, r := range rows {
					order = append(order, r.Name)
				}
				if diff := cmp.Diff([]string{"db-2", "db-10", "cache"}, order); diff != "" {
					t.Errorf("members' order for the framework (-want +got):\n%s", diff)
				}
				if len(rows) != 3 || rows[0].Index != 2 || rows[0].Health != nil || rows[1].Health == nil || *rows[1].Health != "HEALTHY" {
					t.Errorf("rows %+v", rows)
				}
			}
			if err := protocol.ToTerraform(dv); err != nil {
				t.Fatal(err)
			}
			if back := decode(t, terraformGroupType, dv); !back.Equal(sent) {
				t.Errorf("round trip gave\n%v\nwant\n%v", back, sent)
			}
		})
	}
}

// TestInstancesFromProvider: what the provider writes (instancesValue) reaches Terraform as a
// map by member name with every attribute, and text that is not such a list (or whose members
// have no name of their own) is an error, not a wrong value.
func TestInstancesFromProvider(t *testing.T) {
	rows := `[{"name":"db-1","index":1,"status":"RUNNING","template_revision":"r","current_action":"NONE","planned_action":"NONE","health":"HEALTHY","host":"default"}]`
	dv := encode(t, frameworkGroupType, groupValue(frameworkGroupType, tftypes.NewValue(tftypes.String, rows)))
	if err := protocol.ToTerraform(dv); err != nil {
		t.Fatal(err)
	}
	got := decode(t, terraformGroupType, dv)
	var attrs map[string]tftypes.Value
	if err := got.As(&attrs); err != nil {
		t.Fatal(err)
	}
	var byName map[string]tftypes.Value
	if err := attrs["instances"].As(&byName); err != nil || len(byName) != 1 {
		t.Fatalf("instances %v: %v", attrs["instances"], err)
	}
	var m map[string]tftypes.Value
	if err := byName["db-1"].As(&m); err != nil {
		t.Fatal(err)
	}
	if !m["index"].Equal(tftypes.NewValue(tftypes.Number, 1)) || !m["status"].Equal(tftypes.NewValue(tftypes.String, "RUNNING")) {
		t.Errorf("member %v", m)
	}
	for _, bad := range []string{`{"name":"x"}`, `[{"name":"x","index":"one"}]`, `[{"name":7}]`, `[{"index":1}]`, `[{"name":"x"},{"name":"x"}]`, `not json`} {
		dv := encode(t, frameworkGroupType, groupValue(frameworkGroupType, tftypes.NewValue(tftypes.String, bad)))
		if err := protocol.ToTerraform(dv); err == nil {
			t.Errorf("instances %q: no error", bad)
		}
	}
}

// TestInstancesStateJSON: state as Terraform stores it, of any version, reaches the framework
// with the members' list as text in the provider's order: a map (this version's) or a list
// (state written when instances was a list); state without either is left as it is.
func TestInstancesStateJSON(t *testing.T) {
	for _, in := range []string{
		`{"id":"g","instances":[ {"name":"g-2", "index":2}, {"name":"g-10", "index":10} ],"name":"g"}`,
		`{"id":"g","instances":{"g-10": {"name":"g-10", "index":10}, "g-2": {"name":"g-2", "index":2}},"name":"g"}`,
	} {
		out, err := protocol.InstancesJSONToFramework([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		var st map[string]any
		if err := json.Unmarshal(out, &st); err != nil {
			t.Fatal(err)
		}
		if st["instances"] != `[{"index":2,"name":"g-2"},{"index":10,"name":"g-10"}]` && st["instances"] != `[{"name":"g-2","index":2},{"name":"g-10","index":10}]` || st["name"] != "g" {
			t.Errorf("state %s for the framework: %s", in, out)
		}
	}
	for _, same := range []string{`{"id":"g","instances":null}`, `{"id":"g"}`} {
		out, err := protocol.InstancesJSONToFramework([]byte(same))
		if err != nil || string(out) != same {
			t.Errorf("%s became %s (%v)", same, out, err)
		}
	}
}

// TestInstancesSchema: Terraform is given instances as a computed map of objects with every
// member attribute (not a list, which its plans show by position or by a quadratic search), and
// the framework's description with each member attribute's.
func TestInstancesSchema(t *testing.T) {
	s, err := protocol.NewProtocol6(New("test")())()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.GetProviderSchema(context.Background(), &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var got *tfprotov6.SchemaAttribute
	for _, a := range resp.ResourceSchemas[protocol.GroupTypeName].Block.Attributes {
		if a.Name == protocol.InstancesAttrName {
			got = a
		}
	}
	if got == nil || got.NestedType != nil || !got.Computed || got.Description == "" {
		t.Fatalf("instances in the schema: %+v", got)
	}
	byName, ok := got.Type.(tftypes.Map)
	if !ok {
		t.Fatalf("instances is a %v, want a map of objects", got.Type)
	}
	obj, ok := byName.ElementType.(tftypes.Object)
	if !ok {
		t.Fatalf("instances' element is a %v, want an object", byName.ElementType)
	}
	want := map[string]tftypes.Type{}
	for _, ia := range protocol.InstanceAttributes {
		want[ia.Name] = tftypes.String
		if ia.Number {
			want[ia.Name] = tftypes.Number
		}
		if !strings.Contains(got.Description, "`"+ia.Name+"`: "+ia.Description) {
			t.Errorf("the description does not describe %s", ia.Name)
		}
	}
	if diff := cmp.Diff(want, obj.AttributeTypes); diff != "" {
		t.Errorf("member attributes (-want +got):\n%s", diff)
	}
}
