package provider

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/protocol"
)

// The identities are tested through the provider's protocol server on a fake host, the calls
// Terraform makes, without Terraform: the resources' private state (ownership, import marks)
// can only be made by the framework, and the framework's own checks of what a resource returns
// (no identity after a read without error, an identity that changes) run too.

// identityHarness is a provider configured on a fake host, served as Terraform sees it.
type identityHarness struct {
	t      *testing.T
	s      tfprotov6.ProviderServer
	states map[string]tftypes.Type
	ids    map[string]tftypes.Type
}

func newIdentityHarness(t *testing.T) *identityHarness {
	t.Helper()
	ctx := context.Background()
	s, err := protocol.NewProtocol6(NewTestProvider(fake.New()))()
	if err != nil {
		t.Fatal(err)
	}
	sch, err := s.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
	if err != nil || len(sch.Diagnostics) > 0 {
		t.Fatalf("schema: %v %v", err, sch.Diagnostics)
	}
	ids, err := s.GetResourceIdentitySchemas(ctx, &tfprotov6.GetResourceIdentitySchemasRequest{})
	if err != nil || len(ids.Diagnostics) > 0 {
		t.Fatalf("identity schemas: %v %v", err, ids.Diagnostics)
	}
	h := &identityHarness{t: t, s: s, states: map[string]tftypes.Type{}, ids: map[string]tftypes.Type{}}
	for name, rs := range sch.ResourceSchemas {
		h.states[name] = rs.ValueType()
	}
	for name, is := range ids.IdentitySchemas {
		h.ids[name] = is.ValueType()
	}
	conf, err := s.ConfigureProvider(ctx, &tfprotov6.ConfigureProviderRequest{Config: dynamic(t, sch.Provider.ValueType(), `{}`)})
	if err != nil || len(conf.Diagnostics) > 0 {
		t.Fatalf("configure: %v %v", err, conf.Diagnostics)
	}
	return h
}

// dynamic is the JSON object js (attributes left out are null) as a value of type typ.
func dynamic(t *testing.T, typ tftypes.Type, js string) *tfprotov6.DynamicValue {
	t.Helper()
	v, err := tftypes.ValueFromJSON([]byte(js), typ) //nolint:staticcheck // the simplest way to write a test value
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	dv, err := tfprotov6.NewDynamicValue(typ, v)
	if err != nil {
		t.Fatal(err)
	}
	return &dv
}

// identity is the identity of the resource type holding the names given.
func (h *identityHarness) identity(typeName string, names map[string]string) *tfprotov6.ResourceIdentityData {
	h.t.Helper()
	js, _ := json.Marshal(names)
	return &tfprotov6.ResourceIdentityData{IdentityData: dynamic(h.t, h.ids[typeName], string(js))}
}

// names reads an identity's attributes; nil for no identity, "<null>" for a null attribute.
func (h *identityHarness) names(typeName string, id *tfprotov6.ResourceIdentityData) map[string]string {
	h.t.Helper()
	if id == nil || id.IdentityData == nil {
		return nil
	}
	v, err := id.IdentityData.Unmarshal(h.ids[typeName])
	if err != nil {
		h.t.Fatal(err)
	}
	return stringAttrs(h.t, v)
}

// stringAttrs reads an object's string attributes ("<null>" when null); others are left out.
func stringAttrs(t *testing.T, v tftypes.Value) map[string]string {
	t.Helper()
	var attrs map[string]tftypes.Value
	if err := v.As(&attrs); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for k, a := range attrs {
		if !a.Type().Is(tftypes.String) {
			continue
		}
		var s *string
		if err := a.As(&s); err != nil {
			t.Fatal(err)
		}
		out[k] = "<null>"
		if s != nil {
			out[k] = *s
		}
	}
	return out
}

// applied is a resource as an apply, an import or a read leaves it.
type applied struct {
	state    *tfprotov6.DynamicValue
	identity *tfprotov6.ResourceIdentityData
	private  []byte
}

// create plans and applies the configuration js of a new resource, as Terraform does.
func (h *identityHarness) create(typeName, js string) applied {
	h.t.Helper()
	ctx := context.Background()
	config := dynamic(h.t, h.states[typeName], js)
	prior := dynamic(h.t, h.states[typeName], `null`)
	plan, err := h.s.PlanResourceChange(ctx, &tfprotov6.PlanResourceChangeRequest{TypeName: typeName,
		PriorState: prior, ProposedNewState: dynamic(h.t, h.states[typeName], js), Config: config})
	if err != nil || hasError(plan.Diagnostics) {
		h.t.Fatalf("plan %s: %v %s", typeName, err, diagText(plan.Diagnostics))
	}
	resp, err := h.s.ApplyResourceChange(ctx, &tfprotov6.ApplyResourceChangeRequest{TypeName: typeName,
		PriorState: dynamic(h.t, h.states[typeName], `null`), PlannedState: plan.PlannedState, Config: dynamic(h.t, h.states[typeName], js),
		PlannedPrivate: plan.PlannedPrivate, PlannedIdentity: plan.PlannedIdentity})
	if err != nil || hasError(resp.Diagnostics) {
		h.t.Fatalf("apply %s: %v %s", typeName, err, diagText(resp.Diagnostics))
	}
	return applied{state: resp.NewState, identity: resp.NewIdentity, private: resp.Private}
}

// read refreshes a, with the identity given (nil: a state made before identities existed).
func (h *identityHarness) read(typeName string, a applied, id *tfprotov6.ResourceIdentityData) (applied, []*tfprotov6.Diagnostic) {
	h.t.Helper()
	resp, err := h.s.ReadResource(context.Background(), &tfprotov6.ReadResourceRequest{TypeName: typeName,
		CurrentState: a.state, CurrentIdentity: id, Private: a.private})
	if err != nil {
		h.t.Fatal(err)
	}
	return applied{state: resp.NewState, identity: resp.NewIdentity, private: resp.Private}, resp.Diagnostics
}

// importAs imports by the string ID, or by the identity when id is "", and reads the result as
// Terraform does next.
func (h *identityHarness) importAs(typeName, id string, identity *tfprotov6.ResourceIdentityData) (applied, []*tfprotov6.Diagnostic) {
	h.t.Helper()
	resp, err := h.s.ImportResourceState(context.Background(), &tfprotov6.ImportResourceStateRequest{TypeName: typeName, ID: id, Identity: identity})
	if err != nil {
		h.t.Fatal(err)
	}
	if hasError(resp.Diagnostics) || len(resp.ImportedResources) != 1 {
		return applied{}, resp.Diagnostics
	}
	r := resp.ImportedResources[0]
	return h.read(typeName, applied{state: r.State, private: r.Private}, r.Identity)
}

// stateNames reads the state's string attributes named.
func (h *identityHarness) stateNames(typeName string, a applied, names ...string) map[string]string {
	h.t.Helper()
	v, err := a.state.Unmarshal(h.states[typeName])
	if err != nil {
		h.t.Fatal(err)
	}
	all := stringAttrs(h.t, v)
	out := map[string]string{}
	for _, n := range names {
		out[n] = all[n]
	}
	return out
}

func hasError(ds []*tfprotov6.Diagnostic) bool {
	for _, d := range ds {
		if d.Severity == tfprotov6.DiagnosticSeverityError {
			return true
		}
	}
	return false
}

// diagText is the diagnostics as "severity summary @attribute" lines, the detail left out.
func diagText(ds []*tfprotov6.Diagnostic) []string {
	var out []string
	for _, d := range ds {
		line := d.Severity.String() + " " + d.Summary
		if d.Attribute != nil {
			line += " @" + d.Attribute.String()
		}
		out = append(out, line)
	}
	return out
}

const (
	groupType  = "virt_stateful_group"
	configType = "virt_per_instance_config"
	policyType = "virt_stateful_policy"
)

// identityGroup is a group db of two stopped members on the fake host.
const identityGroup = `{"name": "db", "pool": "virt", "target_size": 2, "running": false,
  "template": {"domain_type": "qemu", "vcpu": 1, "memory_mib": 64, "boot_disk": {"size_mib": 16}}}`

// TestIdentityOnCreateAndRead: each resource's create returns its identity, and a read of its
// state without identity (made before identities existed) fills it, as does a read of a state
// whose object is gone (the framework refuses a read without error that returns none).
func TestIdentityOnCreateAndRead(t *testing.T) {
	t.Parallel()
	h := newIdentityHarness(t)
	cases := []struct {
		typeName, config string
		want             map[string]string
	}{
		{groupType, identityGroup, map[string]string{"name": "db"}},
		{policyType, `{"group": "db"}`, map[string]string{"group": "db"}},
		{configType, `{"group": "db", "name": "db-1"}`, map[string]string{"group": "db", "name": "db-1"}},
	}
	made := map[string]applied{}
	// In order: the policy and the config need the group.
	for _, c := range cases {
		a := h.create(c.typeName, c.config)
		made[c.typeName] = a
		if diff := cmp.Diff(c.want, h.names(c.typeName, a.identity)); diff != "" {
			t.Errorf("%s create: identity (-want +got):\n%s", c.typeName, diff)
		}
		r, diags := h.read(c.typeName, a, nil)
		if hasError(diags) {
			t.Fatalf("%s read without identity: %v", c.typeName, diagText(diags))
		}
		if diff := cmp.Diff(c.want, h.names(c.typeName, r.identity)); diff != "" {
			t.Errorf("%s read without identity: identity (-want +got):\n%s", c.typeName, diff)
		}
		r, diags = h.read(c.typeName, a, a.identity)
		if hasError(diags) || !cmp.Equal(c.want, h.names(c.typeName, r.identity)) {
			t.Errorf("%s read with its identity: %v, identity %v", c.typeName, diagText(diags), h.names(c.typeName, r.identity))
		}
	}
	// A config of a member that has none is gone: the read removes it, without error.
	gone := made[configType]
	gone.state = dynamic(t, h.states[configType], `{"id": "db/db-2", "group": "db", "name": "db-2", "minimal_action": "NONE", "most_disruptive_allowed_action": "REPLACE"}`)
	r, diags := h.read(configType, gone, nil)
	if v, err := r.state.Unmarshal(h.states[configType]); hasError(diags) || err != nil || !v.IsNull() {
		t.Errorf("read of a config not there: %v %v, state %v", diagText(diags), err, v)
	}
}

// TestImportByIDOrIdentity: every resource imports by its string ID as before and by an
// `import { identity }`, to the same state and identity; a wrong one is refused naming what is
// allowed (and, for an identity, the attribute).
func TestImportByIDOrIdentity(t *testing.T) {
	t.Parallel()
	h := newIdentityHarness(t)
	h.create(groupType, identityGroup)
	h.create(policyType, `{"group": "db"}`)
	h.create(configType, `{"group": "db", "name": "db-1"}`)
	type result struct {
		State    map[string]string
		Identity map[string]string
		Diags    []string
	}
	group := map[string]string{"name": "db"}
	config := map[string]string{"group": "db", "name": "db-1"}
	policy := map[string]string{"group": "db"}
	cases := map[string]struct {
		typeName string
		id       string
		identity map[string]string // import { identity }: the ID is empty then
		want     result
	}{
		"group by ID":                        {typeName: groupType, id: "db", want: result{State: map[string]string{"id": "db", "name": "db"}, Identity: group}},
		"group by identity":                  {typeName: groupType, identity: group, want: result{State: map[string]string{"id": "db", "name": "db"}, Identity: group}},
		"group, wrong ID":                    {typeName: groupType, id: "db/db-1", want: result{Diags: []string{"ERROR Invalid import ID"}}},
		"group, wrong identity":              {typeName: groupType, identity: map[string]string{"name": "DB"}, want: result{Diags: []string{"ERROR Invalid import identity @AttributeName(\"name\")"}}},
		"config by ID":                       {typeName: configType, id: "db/db-1", want: result{State: map[string]string{"id": "db/db-1", "group": "db", "name": "db-1"}, Identity: config}},
		"config by identity":                 {typeName: configType, identity: config, want: result{State: map[string]string{"id": "db/db-1", "group": "db", "name": "db-1"}, Identity: config}},
		"config, ID without the group":       {typeName: configType, id: "db-1", want: result{Diags: []string{"ERROR Invalid import ID"}}},
		"config, identity with a wrong name": {typeName: configType, identity: map[string]string{"group": "db", "name": "db_1"}, want: result{Diags: []string{"ERROR Invalid import identity @AttributeName(\"name\")"}}},
		"policy by ID":                       {typeName: policyType, id: "db", want: result{State: map[string]string{"id": "db", "group": "db"}, Identity: policy}},
		"policy by identity":                 {typeName: policyType, identity: policy, want: result{State: map[string]string{"id": "db", "group": "db"}, Identity: policy}},
		"policy, wrong identity":             {typeName: policyType, identity: map[string]string{"group": "-db"}, want: result{Diags: []string{"ERROR Invalid import identity @AttributeName(\"group\")"}}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var id *tfprotov6.ResourceIdentityData
			if c.identity != nil {
				id = h.identity(c.typeName, c.identity)
			}
			a, diags := h.importAs(c.typeName, c.id, id)
			got := result{Diags: diagText(diags)}
			if !hasError(diags) {
				keys := []string{"id"}
				for k := range c.want.Identity {
					keys = append(keys, k)
				}
				got.State = h.stateNames(c.typeName, a, keys...)
				got.Identity = h.names(c.typeName, a.identity)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("import (-want +got):\n%s", diff)
			}
		})
	}
}
