package group

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/store"
)

// The template's field coverage: every attribute and block of the template's schema must reach
// an engine field (engine.Template), a stored field (store.Template, what records hold and the
// revision hashes), each member's desired instance (engine.Desire: engine.DesiredInstance, what
// the domain is made from, and store.Desired, whose hash a member's record holds) and the group
// record's configuration (store.ResourceTemplate, what import reads back), and come back from
// each unchanged. The test walks the schema itself, so an attribute added to the schema is
// covered without editing the test: set everywhere to one value, then changed alone, it must
// change all five, and the round trips must give it back. A field of engine.Shape reaches the
// desired instance and backend.DomainSpec by construction (both embed it); a field added to
// engine.Template outside Shape reaches no desired instance unless Desire resolves it.

// templateFieldExempt are the template's schema paths that by design reach none of the three,
// with the reason; the test fails on a path listed here that the schema no longer has.
var templateFieldExempt = map[string]string{
	// Write-only: null in every plan and state; only their versions (covered) are kept.
	"template.graphics.password_wo":    "write-only, never kept (its version is)",
	"template.cloud_init.user_data_wo": "write-only, never kept (its version is)",
	// The health check judges members; it is the group's engine.HealthCheck, kept beside the
	// template (ResourceTemplate.HealthCheck), never in its revision. Its own tests cover it.
	"template.health_check": "not part of the template: engine.Group.HealthCheck",
}

// fieldLeaf is one schema path the test changes: an attribute, or a block's presence.
type fieldLeaf struct {
	path  string
	block bool
}

// templateLeaves lists the attribute paths and block paths under the template block, a list
// block's object as its element 0 (written without the index).
func templateLeaves(prefix string, attrs map[string]schema.Attribute, blocks map[string]schema.Block) []fieldLeaf {
	var out []fieldLeaf
	for name := range attrs {
		out = append(out, fieldLeaf{path: prefix + "." + name})
	}
	for name, b := range blocks {
		p := prefix + "." + name
		out = append(out, fieldLeaf{path: p, block: true})
		a, bl := blockContents(b)
		out = append(out, templateLeaves(p, a, bl)...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out
}

func blockContents(b schema.Block) (map[string]schema.Attribute, map[string]schema.Block) {
	switch b := b.(type) {
	case schema.SingleNestedBlock:
		return b.Attributes, b.Blocks
	case schema.ListNestedBlock:
		return b.NestedObject.Attributes, b.NestedObject.Blocks
	case schema.SetNestedBlock:
		return b.NestedObject.Attributes, b.NestedObject.Blocks
	}
	panic(fmt.Sprintf("template field coverage: a block of type %T: teach blockContents it", b))
}

// fieldValues builds the template's value: every attribute set to its variant 1, except the path
// changed, which gets variant 2, and the block removed, which is left out (null, or an empty
// list or set). Strings are absolute paths, so that conversions that clean paths keep them apart.
type fieldValues struct {
	changed, removed string
}

func (v fieldValues) attr(p string, a schema.Attribute, typ tftypes.Type) tftypes.Value {
	variant := 1
	if p == v.changed {
		variant = 2
	}
	if a.IsWriteOnly() {
		return tftypes.NewValue(typ, nil)
	}
	switch {
	case typ.Is(tftypes.String):
		return tftypes.NewValue(typ, fmt.Sprintf("/v%d", variant))
	case typ.Is(tftypes.Number):
		return tftypes.NewValue(typ, variant)
	case typ.Is(tftypes.Bool):
		return tftypes.NewValue(typ, variant == 1)
	case typ.Is(tftypes.Map{}):
		return tftypes.NewValue(typ, map[string]tftypes.Value{"k": tftypes.NewValue(tftypes.String, fmt.Sprintf("v%d", variant))})
	case typ.Is(tftypes.List{}):
		return tftypes.NewValue(typ, []tftypes.Value{tftypes.NewValue(tftypes.String, fmt.Sprintf("v%d", variant))})
	}
	panic(fmt.Sprintf("template field coverage: %s has type %s: teach fieldValues.attr it", p, typ))
}

func (v fieldValues) object(p string, attrs map[string]schema.Attribute, blocks map[string]schema.Block, typ tftypes.Object) tftypes.Value {
	vals := map[string]tftypes.Value{}
	for name, a := range attrs {
		vals[name] = v.attr(p+"."+name, a, typ.AttributeTypes[name])
	}
	for name, b := range blocks {
		bp := p + "." + name
		bt := typ.AttributeTypes[name]
		a, bl := blockContents(b)
		switch b.(type) {
		case schema.SingleNestedBlock:
			if bp == v.removed || v.exempt(bp) {
				vals[name] = tftypes.NewValue(bt, nil)
				continue
			}
			vals[name] = v.object(bp, a, bl, bt.(tftypes.Object))
		case schema.ListNestedBlock:
			et := bt.(tftypes.List).ElementType
			if bp == v.removed {
				vals[name] = tftypes.NewValue(bt, []tftypes.Value{})
				continue
			}
			vals[name] = tftypes.NewValue(bt, []tftypes.Value{v.object(bp, a, bl, et.(tftypes.Object))})
		case schema.SetNestedBlock:
			et := bt.(tftypes.Set).ElementType
			if bp == v.removed {
				vals[name] = tftypes.NewValue(bt, []tftypes.Value{})
				continue
			}
			vals[name] = tftypes.NewValue(bt, []tftypes.Value{v.object(bp, a, bl, et.(tftypes.Object))})
		}
	}
	return tftypes.NewValue(typ, vals)
}

// exempt leaves an exempt block out of the value altogether.
func (v fieldValues) exempt(p string) bool {
	_, ok := templateFieldExempt[p]
	return ok
}

// templateShapes are the shapes of a template the test compares (the stored ones as the JSON
// written), with the round trips' differences.
type templateShapes struct {
	engine                          engine.Template
	desired                         engine.DesiredInstance
	stored, storedDesired, resource string
	roundTrips                      []string
}

func shapesOf(t *testing.T, v fieldValues) templateShapes {
	t.Helper()
	ctx := context.Background()
	s := StatefulGroupSchema()
	tb := s.Blocks["template"].(schema.SingleNestedBlock)
	rootType := s.Type().TerraformType(ctx).(tftypes.Object)
	root := map[string]tftypes.Value{}
	for name, typ := range rootType.AttributeTypes {
		root[name] = tftypes.NewValue(typ, nil)
	}
	root["template"] = v.object("template", tb.Attributes, tb.Blocks, rootType.AttributeTypes["template"].(tftypes.Object))
	plan := tfsdk.Plan{Schema: s, Raw: tftypes.NewValue(rootType, root)}
	var tm TemplateModel
	var diags diag.Diagnostics
	diags.Append(plan.GetAttribute(ctx, path.Root("template"), &tm)...)
	et := tm.engineTemplate(ctx, &diags)
	if diags.HasError() {
		t.Fatalf("template %+v: %v", v, diags)
	}
	var out templateShapes
	out.engine = et

	// The stored template, written and read back as a record holds it.
	b, err := json.Marshal(store.TemplateOf(et))
	if err != nil {
		t.Fatal(err)
	}
	out.stored = string(b)
	var st store.Template
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(et, st.Engine()); diff != "" {
		out.roundTrips = append(out.roundTrips, "engine -> store -> engine (-before +after):\n"+diff)
	}

	// A member's desired instance, and as its record holds it.
	out.desired = engine.Desire("db-0", et, engine.PreservedState{}, engine.PreservedState{})
	b, err = json.Marshal(store.DesiredOf(out.desired))
	if err != nil {
		t.Fatal(err)
	}
	out.storedDesired = string(b)
	var sd store.Desired
	if err := json.Unmarshal(b, &sd); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(out.desired, sd.Engine()); diff != "" {
		out.roundTrips = append(out.roundTrips, "desired instance -> store -> engine (-before +after):\n"+diff)
	}

	// The configuration as the group record keeps it, and the model import rebuilds from it.
	m := StatefulGroupModel{Template: &tm}
	raw := m.encodeGroupSpec(ctx, &diags)
	out.resource = templateSpec(t, raw)
	var back StatefulGroupModel
	back.decodeGroupSpec(raw, &diags)
	if diags.HasError() {
		t.Fatalf("template %+v: %v", v, diags)
	}
	if diff := cmp.Diff(et, back.Template.engineTemplate(ctx, &diags)); diff != "" {
		out.roundTrips = append(out.roundTrips, "model -> record's configuration -> model -> engine (-before +after):\n"+diff)
	}
	if again := templateSpec(t, back.encodeGroupSpec(ctx, &diags)); again != out.resource {
		out.roundTrips = append(out.roundTrips, "record's configuration read and written again (-before +after):\n"+cmp.Diff(out.resource, again))
	}
	return out
}

// templateSpec is the template's part of a rendering of the group's configuration: its
// template and boot_disk.
func templateSpec(t *testing.T, raw string) string {
	t.Helper()
	var s store.ResourceSpec
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(struct {
		Template store.ResourceTemplate
		BootDisk *store.ResourceBootDisk
	}{s.Template, s.BootDisk})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestTemplateFieldsReachEveryShape(t *testing.T) {
	t.Parallel()
	tb := StatefulGroupSchema().Blocks["template"].(schema.SingleNestedBlock)
	leaves := templateLeaves("template", tb.Attributes, tb.Blocks)
	seen := map[string]bool{}
	for _, l := range leaves {
		seen[l.path] = true
	}
	for p := range templateFieldExempt {
		if !seen[p] {
			t.Errorf("templateFieldExempt names %s, which the template's schema no longer has: remove it", p)
		}
	}
	base := shapesOf(t, fieldValues{})
	for _, rt := range base.roundTrips {
		t.Errorf("every attribute set: %s", rt)
	}
	for _, l := range leaves {
		if exemptPath(l.path) {
			continue
		}
		v := fieldValues{changed: l.path}
		what := "changed"
		if l.block {
			v, what = fieldValues{removed: l.path}, "left out"
		}
		t.Run(l.path, func(t *testing.T) {
			t.Parallel()
			got := shapesOf(t, v)
			if cmp.Equal(got.engine, base.engine) {
				t.Errorf("%s %s, and engine.Template is the same: the schema field reaches no engine field (convert it in HardwareModel.engineHardware or templateModel.engineTemplate)", l.path, what)
			}
			if got.stored == base.stored {
				t.Errorf("%s %s, and the stored template (store.TemplateOf) is the same: the field reaches no stored field (add it to store.HardwareDevices and hardwareOf, or store.ShapeSettings and shapeOf)", l.path, what)
			}
			if cmp.Equal(got.desired, base.desired) {
				t.Errorf("%s %s, and the desired instance (engine.Desire) is the same: the field reaches no member (put it in engine.Shape, or resolve it in Desire)", l.path, what)
			}
			if got.storedDesired == base.storedDesired {
				t.Errorf("%s %s, and the stored desired instance (store.DesiredOf) is the same: a member's record would not see it change (add it to store.ShapeSettings and shapeOf)", l.path, what)
			}
			if got.resource == base.resource {
				t.Errorf("%s %s, and the group record's configuration (encodeGroupSpec) is the same: import would lose it (convert it in HardwareModel.hardwareSpec and hardwareFromSpec)", l.path, what)
			}
			for _, rt := range got.roundTrips {
				t.Errorf("%s %s: %s", l.path, what, rt)
			}
		})
	}
}

// exemptPath reports whether p is exempt or under an exempt block.
func exemptPath(p string) bool {
	for e := range templateFieldExempt {
		if p == e || len(p) > len(e) && p[:len(e)+1] == e+"." {
			return true
		}
	}
	return false
}
