package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/resource"

	configpkg "github.com/virtfleet/terraform-provider-virt/internal/provider/config"
	grouppkg "github.com/virtfleet/terraform-provider-virt/internal/provider/group"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/lists"
	policypkg "github.com/virtfleet/terraform-provider-virt/internal/provider/policy"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/protocol"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"

	rschema "github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// listHosts is a provider of two fake hosts: on the default host, group db (a template disk
// "data", a policy preserving it, configs for db-1 and db-2) and group web (nothing else); on h2,
// group mq (its record there, as its distribution names h2 first) with a config for mq-1. It
// returns the provider's data and what the applies of those resources left in their states.
type listFixture struct {
	data     *providerdata.ProviderData
	def, h2  *fake.Backend
	groups   map[string]grouppkg.StatefulGroupModel
	policies map[string]policypkg.StatefulPolicyModel
	configs  map[string]configpkg.PerInstanceConfigModel
}

func newListFixture(t *testing.T) listFixture {
	t.Helper()
	ctx := context.Background()
	def, h2 := fake.New(), fake.New()
	rec := reconcile.New(def)
	rec.Hosts = map[string]backend.Backend{"h2": h2}
	rec.Env.Run, rec.Holder = "run-test", "test holder"
	rec.Now = func() time.Time { return planClock }
	f := listFixture{data: &providerdata.ProviderData{Reconciler: rec}, def: def, h2: h2,
		groups: map[string]grouppkg.StatefulGroupModel{}, policies: map[string]policypkg.StatefulPolicyModel{}, configs: map[string]configpkg.PerInstanceConfigModel{}}
	g := &grouppkg.StatefulGroupResource{Data: f.data}
	// The groups as a plan of their configuration holds them: the schema's defaults set.
	planned := func() grouppkg.StatefulGroupModel {
		m := planGroupModel("m1")
		m.AdoptExisting, m.Abandon = types.BoolValue(false), types.SetValueMust(types.StringType, nil)
		return m
	}

	db := planned()
	db.Template.Disk = []grouppkg.DiskModel{{DeviceName: types.StringValue("data"), SizeMiB: types.Int64Value(8)}}
	f.groups["db"] = createdGroup(t, g, db)

	web := planned()
	web.Name, web.BaseInstanceName, web.TargetSize = types.StringValue("web"), types.StringValue("web"), types.Int64Value(1)
	f.groups["web"] = createdGroup(t, g, web)

	mq := planned()
	mq.Name, mq.BaseInstanceName, mq.TargetSize = types.StringValue("mq"), types.StringValue("mq"), types.Int64Value(1)
	hosts, _ := types.ListValueFrom(ctx, types.StringType, []string{"h2"})
	// Values other than the defaults, which the listing must give back as applied.
	drain, _ := types.ListValueFrom(ctx, types.StringType, []string{"default"})
	mq.Distribution = &grouppkg.DistributionModel{Hosts: hosts, Drain: drain, Rebalance: types.BoolValue(true), Live: types.BoolValue(false)}
	f.groups["mq"] = createdGroup(t, g, mq)

	nullTimeouts := timeouts.Value{Object: types.ObjectNull(map[string]attr.Type{"create": types.StringType, "update": types.StringType, "delete": types.StringType})}
	policy := policypkg.StatefulPolicyModel{ID: types.StringValue("db"), Group: types.StringValue("db"), Timeouts: nullTimeouts,
		Disk: []policypkg.PolicyDiskModel{{DeviceName: types.StringValue("data"), DeleteRule: types.StringValue("ON_PERMANENT_INSTANCE_DELETION")}}}
	state := tfsdk.State{Schema: policySchema(t), Raw: tftypes.NewValue(policySchema(t).Type().TerraformType(ctx), nil)}
	var diags diag.Diagnostics
	(&policypkg.StatefulPolicyResource{Data: f.data}).Apply(ctx, "create", &policy, &state, &diags)
	f.policies["db"] = policy

	c := &configpkg.PerInstanceConfigResource{Data: f.data}
	for _, x := range []struct{ group, name string }{{"db", "db-1"}, {"db", "db-2"}, {"mq", "mq-1"}} {
		meta, _ := types.MapValue(types.StringType, map[string]attr.Value{"node-id": types.StringValue(x.name)})
		m := configpkg.PerInstanceConfigModel{Group: types.StringValue(x.group), Name: types.StringValue(x.name),
			PreservedState:              &configpkg.PreservedStateModel{Metadata: meta},
			MinimalAction:               types.StringValue("NONE"),
			MostDisruptiveAllowedAction: types.StringValue("REPLACE"),
			RemoveInstanceOnDestroy:     types.BoolValue(false), RemoveInstanceStateOnDestroy: types.BoolValue(false),
			Preserve: types.StringNull(), Status: types.StringUnknown(), Timeouts: nullTimeouts}
		state := tfsdk.State{Schema: configpkg.PerInstanceConfigSchema(), Raw: tftypes.NewValue(configpkg.PerInstanceConfigSchema().Type().TerraformType(ctx), nil)}
		c.Apply(ctx, "create", &m, &state, &diags)
		f.configs[x.group+"/"+x.name] = m
	}
	if diags.HasError() {
		t.Fatalf("fixture: %v", diags)
	}
	return f
}

func policySchema(t *testing.T) rschema.Schema {
	t.Helper()
	var resp resource.SchemaResponse
	(&policypkg.StatefulPolicyResource{}).Schema(context.Background(), resource.SchemaRequest{}, &resp)
	return resp.Schema
}

// listRequest is a request to l with the configuration attrs (the others null), and the schemas
// of l's resource as the framework hands them.
func listRequest(t *testing.T, l list.ListResource, r resource.ResourceWithIdentity, attrs map[string]string, include bool, limit int64) list.ListRequest {
	t.Helper()
	ctx := context.Background()
	var ls list.ListResourceSchemaResponse
	l.ListResourceConfigSchema(ctx, list.ListResourceSchemaRequest{}, &ls)
	vals := map[string]tftypes.Value{}
	for name := range ls.Schema.Attributes {
		var v any
		if s, ok := attrs[name]; ok {
			v = s
		}
		vals[name] = tftypes.NewValue(tftypes.String, v)
	}
	var rs resource.SchemaResponse
	r.Schema(ctx, resource.SchemaRequest{}, &rs)
	var is resource.IdentitySchemaResponse
	r.IdentitySchema(ctx, resource.IdentitySchemaRequest{}, &is)
	return list.ListRequest{
		Config:                 tfsdk.Config{Schema: ls.Schema, Raw: tftypes.NewValue(ls.Schema.Type().TerraformType(ctx), vals)},
		IncludeResource:        include,
		Limit:                  limit,
		ResourceSchema:         rs.Schema,
		ResourceIdentitySchema: is.IdentitySchema,
	}
}

// listed runs the list and renders each result as "identity | display name", and each diagnostic
// as "severity|attribute|summary"; the resource objects are returned by identity.
func listed(t *testing.T, l list.ListResource, req list.ListRequest) ([]string, map[string]tfsdk.Resource) {
	t.Helper()
	var stream list.ListResultsStream
	l.List(context.Background(), req, &stream)
	var out []string
	objects := map[string]tfsdk.Resource{}
	for r := range stream.Results {
		for _, d := range diagnosticTexts(r.Diagnostics) {
			severity, rest, _ := strings.Cut(d, "|")
			at, rest, _ := strings.Cut(rest, "|")
			summary, _, _ := strings.Cut(rest, "|")
			out = append(out, severity+"|"+at+"|"+summary)
		}
		if r.Identity == nil {
			continue
		}
		id := identityText(t, r.Identity)
		out = append(out, id+" | "+r.DisplayName)
		if r.Resource != nil && !r.Resource.Raw.IsNull() {
			objects[id] = *r.Resource
		}
	}
	return out, objects
}

// identityText renders an identity as "attr=value ..." in attribute order.
func identityText(t *testing.T, id *tfsdk.ResourceIdentity) string {
	t.Helper()
	var m map[string]tftypes.Value
	if err := id.Raw.As(&m); err != nil {
		t.Fatalf("identity %s: %v", id.Raw, err)
	}
	var parts []string
	for k, v := range m {
		var s string
		if err := v.As(&s); err != nil {
			t.Fatalf("identity %s: %v", id.Raw, err)
		}
		parts = append(parts, k+"="+s)
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// TestLists: the three list resources called directly on two fake hosts: which objects each
// finds with each filter, in which order, with which identity and display name, and what a
// filter naming nothing there, a limit and a host that does not answer do.
func TestLists(t *testing.T) {
	t.Parallel()
	group, policy, config := lists.NewStatefulGroupList(), lists.NewStatefulPolicyList(), lists.NewPerInstanceConfigList()
	type resourceWithIdentity = resource.ResourceWithIdentity
	resources := map[list.ListResource]resourceWithIdentity{
		group: &grouppkg.StatefulGroupResource{}, policy: &policypkg.StatefulPolicyResource{}, config: &configpkg.PerInstanceConfigResource{},
	}
	cases := map[string]struct {
		list  list.ListResource
		attrs map[string]string
		limit int64
		// down makes h2 fail to list its group records and to read them.
		down bool
		want []string
	}{
		"groups of every host, by name": {list: group,
			want: []string{"name=db | db", "name=mq | mq (record on host h2)", "name=web | web"}},
		"groups by name prefix": {list: group, attrs: map[string]string{"name_prefix": "w"},
			want: []string{"name=web | web"}},
		"groups of one host": {list: group, attrs: map[string]string{"host": "h2"},
			want: []string{"name=mq | mq (record on host h2)"}},
		"groups of the default host by its name": {list: group, attrs: map[string]string{"host": "default"},
			want: []string{"name=db | db", "name=web | web"}},
		"groups of a host the provider lacks: an error on host": {list: group, attrs: map[string]string{"host": "h9"},
			want: []string{"Error|host|Unknown host"}},
		"groups up to the limit": {list: group, limit: 2,
			want: []string{"name=db | db", "name=mq | mq (record on host h2)"}},
		"groups while a host does not answer: a warning, and the other host's groups": {list: group, down: true,
			want: []string{"Warning||Host not listed", "name=db | db", "name=web | web"}},
		"groups by a prefix nothing has: none": {list: group, attrs: map[string]string{"name_prefix": "zz"}},
		"policies of every group: only db has one": {list: policy,
			want: []string{"group=db | stateful policy of db"}},
		"policy of a group without one: none": {list: policy, attrs: map[string]string{"group": "web"}},
		"policy of a group no host has: an error on group": {list: policy, attrs: map[string]string{"group": "nope"},
			want: []string{"Error|group|Group not found"}},
		"configs of one group, by name": {list: config, attrs: map[string]string{"group": "db"},
			want: []string{"group=db name=db-1 | db/db-1", "group=db name=db-2 | db/db-2"}},
		"configs of a group on another host": {list: config, attrs: map[string]string{"group": "mq"},
			want: []string{"group=mq name=mq-1 | mq/mq-1"}},
		"configs of every group": {list: config,
			want: []string{"group=db name=db-1 | db/db-1", "group=db name=db-2 | db/db-2", "group=mq name=mq-1 | mq/mq-1"}},
		"configs up to the limit, across groups": {list: config, limit: 1,
			want: []string{"group=db name=db-1 | db/db-1"}},
		"configs while a host does not answer: a warning, and the other host's": {list: config, down: true,
			want: []string{"Warning||Host not listed", "group=db name=db-1 | db/db-1", "group=db name=db-2 | db/db-2"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newListFixture(t)
			if c.down {
				f.h2.FailOn = map[string]error{"list-groups ": errors.New("connection refused")}
			}
			l := c.list
			switch l.(type) {
			case *lists.StatefulGroupList:
				l = &lists.StatefulGroupList{Data: f.data}
			case *lists.StatefulPolicyList:
				l = &lists.StatefulPolicyList{Data: f.data}
			case *lists.PerInstanceConfigList:
				l = &lists.PerInstanceConfigList{Data: f.data}
			}
			got, objects := listed(t, l, listRequest(t, l, resources[c.list], c.attrs, false, c.limit))
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("results (-want +got):\n%s", d)
			}
			if len(objects) > 0 {
				t.Errorf("resource objects returned without include_resource: %v", objects)
			}
		})
	}
}

// TestListsIncludeResource: with include_resource, each result carries the object as the
// resource's import of that identity reads it, which holds what the applies that made it set:
// the configuration query -generate-config-out writes from it is the configuration they applied.
func TestListsIncludeResource(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	nullTimeouts := f.policies["db"].Timeouts

	l := &lists.StatefulGroupList{Data: f.data}
	_, objects := listed(t, l, listRequest(t, l, &grouppkg.StatefulGroupResource{}, nil, true, 0))
	for name, want := range f.groups {
		obj, ok := objects["name="+name]
		if !ok {
			t.Errorf("group %s: no resource object", name)
			continue
		}
		var got grouppkg.StatefulGroupModel
		if d := obj.Get(ctx, &got); d.HasError() {
			t.Fatalf("group %s: %v", name, d)
		}
		// The members are what the host has now, and timeouts are never in a record.
		want.Instances, got.Instances = types.StringNull(), types.StringNull()
		want.Timeouts = got.Timeouts
		if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("group %s as listed (-applied +listed):\n%s", name, d)
		}
	}

	p := &lists.StatefulPolicyList{Data: f.data}
	_, objects = listed(t, p, listRequest(t, p, &policypkg.StatefulPolicyResource{}, nil, true, 0))
	var gotPolicy policypkg.StatefulPolicyModel
	if obj, ok := objects["group=db"]; !ok {
		t.Error("policy of db: no resource object")
	} else if d := obj.Get(ctx, &gotPolicy); d.HasError() {
		t.Fatal(d)
	}
	gotPolicy.Timeouts = nullTimeouts
	if d := cmp.Diff(f.policies["db"], gotPolicy, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("policy as listed (-applied +listed):\n%s", d)
	}

	c := &lists.PerInstanceConfigList{Data: f.data}
	_, objects = listed(t, c, listRequest(t, c, &configpkg.PerInstanceConfigResource{}, nil, true, 0))
	for key, want := range f.configs {
		group, name, _ := strings.Cut(key, "/")
		obj, ok := objects["group="+group+" name="+name]
		if !ok {
			t.Errorf("config %s: no resource object", key)
			continue
		}
		var got configpkg.PerInstanceConfigModel
		if d := obj.Get(ctx, &got); d.HasError() {
			t.Fatalf("config %s: %v", key, d)
		}
		got.Timeouts = nullTimeouts
		if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("config %s as listed (-applied +listed):\n%s", key, d)
		}
	}
}

// nullObject is an object of typ with every attribute null, a list (a block) empty.
func nullObject(typ tftypes.Type) tftypes.Value {
	obj := typ.(tftypes.Object)
	vals := map[string]tftypes.Value{}
	for name, at := range obj.AttributeTypes {
		if l, ok := at.(tftypes.List); ok {
			vals[name] = tftypes.NewValue(l, []tftypes.Value{})
			continue
		}
		vals[name] = tftypes.NewValue(at, nil)
	}
	return tftypes.NewValue(obj, vals)
}

// TestListThroughTheProtocolServer: the list calls reach the framework through the provider's
// protocol server (without them Terraform hears the provider has no list support), and a listed
// group's object reaches Terraform as its schema there says, `instances` a list of members.
func TestListThroughTheProtocolServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	s, err := protocol.NewProtocol6(NewTestProvider(f.def))()
	if err != nil {
		t.Fatal(err)
	}
	sch, err := s.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
	if err != nil || len(sch.Diagnostics) > 0 {
		t.Fatalf("schema: %v %v", err, sch.Diagnostics)
	}
	providerType := sch.Provider.ValueType()
	conf, err := s.ConfigureProvider(ctx, &tfprotov6.ConfigureProviderRequest{Config: encode(t, providerType, nullObject(providerType))})
	if err != nil || len(conf.Diagnostics) > 0 {
		t.Fatalf("configure: %v %v", err, conf.Diagnostics)
	}
	ls, ok := s.(tfprotov6.ListResourceServer)
	if !ok {
		t.Fatalf("the provider's server %T serves no list resources", s)
	}
	listType := sch.ListResourceSchemas[protocol.GroupTypeName].ValueType()
	config := tftypes.NewValue(listType, map[string]tftypes.Value{
		"name_prefix": tftypes.NewValue(tftypes.String, "db"), "host": tftypes.NewValue(tftypes.String, nil),
	})
	valid, err := ls.ValidateListResourceConfig(ctx, &tfprotov6.ValidateListResourceConfigRequest{TypeName: protocol.GroupTypeName, Config: encode(t, listType, config)})
	if err != nil || len(valid.Diagnostics) > 0 {
		t.Fatalf("validate: %v %v", err, valid.Diagnostics)
	}
	stream, err := ls.ListResource(ctx, &tfprotov6.ListResourceRequest{TypeName: protocol.GroupTypeName, Config: encode(t, listType, config), IncludeResource: true, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for r := range stream.Results {
		for _, d := range r.Diagnostics {
			t.Errorf("diagnostic: %s: %s", d.Summary, d.Detail)
		}
		if r.Resource == nil {
			t.Fatalf("%s: no resource object", r.DisplayName)
		}
		v := decode(t, sch.ResourceSchemas[protocol.GroupTypeName].ValueType(), r.Resource)
		var attrs map[string]tftypes.Value
		if err := v.As(&attrs); err != nil {
			t.Fatal(err)
		}
		var members map[string]tftypes.Value
		if err := attrs["instances"].As(&members); err != nil {
			t.Fatalf("instances: %v", err)
		}
		got = append(got, fmt.Sprintf("%s: %d members", r.DisplayName, len(members)))
	}
	if d := cmp.Diff([]string{"db: 2 members"}, got); d != "" {
		t.Errorf("results (-want +got):\n%s", d)
	}
}

// TestGroupListDocs: the list resources' pages, written by hand (make docs may run a terraform
// that knows no list resources), give each description and argument as the schema has it.
func TestGroupListDocs(t *testing.T) {
	t.Parallel()
	for page, l := range map[string]list.ListResource{
		"stateful_group.md": lists.NewStatefulGroupList(), "stateful_policy.md": lists.NewStatefulPolicyList(), "per_instance_config.md": lists.NewPerInstanceConfigList(),
	} {
		doc, err := os.ReadFile(filepath.Join("..", "..", "templates", "list-resources", page))
		if err != nil {
			t.Fatal(err)
		}
		var resp list.ListResourceSchemaResponse
		l.ListResourceConfigSchema(context.Background(), list.ListResourceSchemaRequest{}, &resp)
		if !strings.Contains(string(doc), "\n"+resp.Schema.MarkdownDescription+"\n") {
			t.Errorf("%s does not give the list resource's description as the schema has it:\n%s", page, resp.Schema.MarkdownDescription)
		}
		for name, a := range resp.Schema.Attributes {
			if line := fmt.Sprintf("- %#q (String) %s\n", name, a.GetMarkdownDescription()); !strings.Contains(string(doc), line) {
				t.Errorf("%s lacks the argument as the schema has it:\n%s", page, line)
			}
		}
	}
}

// TestListConfigValidation: a list's filters are checked at validate, before anything is listed,
// with an error on the attribute that names the value and what is allowed.
func TestListConfigValidation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := protocol.NewProtocol6(NewTestProvider(fake.New()))()
	if err != nil {
		t.Fatal(err)
	}
	sch, err := s.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	ls := s.(tfprotov6.ListResourceServer)
	cases := map[string]struct {
		typeName string
		attrs    map[string]string
		want     []string
	}{
		"a group name that is no DNS label": {typeName: "virt_per_instance_config", attrs: map[string]string{"group": "Bad_Name"},
			want: []string{`Invalid Attribute Value Match|AttributeName("group")|Attribute group must be a DNS label: 1 to 63 lower case letters, digits and hyphens, starting with a letter and not ending with a hyphen, got: Bad_Name`}},
		"a host name that is no DNS label": {typeName: protocol.GroupTypeName, attrs: map[string]string{"host": "h 2"},
			want: []string{`Invalid Attribute Value Match|AttributeName("host")|Attribute host must be a DNS label: 1 to 63 lower case letters, digits and hyphens, starting with a letter and not ending with a hyphen, got: h 2`}},
		"a policy of a group by name": {typeName: "virt_stateful_policy", attrs: map[string]string{"group": "db"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			typ := sch.ListResourceSchemas[c.typeName].ValueType().(tftypes.Object)
			vals := map[string]tftypes.Value{}
			for a := range typ.AttributeTypes {
				var v any
				if x, ok := c.attrs[a]; ok {
					v = x
				}
				vals[a] = tftypes.NewValue(tftypes.String, v)
			}
			resp, err := ls.ValidateListResourceConfig(ctx, &tfprotov6.ValidateListResourceConfigRequest{TypeName: c.typeName, Config: encode(t, typ, tftypes.NewValue(typ, vals))})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range resp.Diagnostics {
				at := ""
				if d.Attribute != nil {
					at = d.Attribute.String()
				}
				got = append(got, d.Summary+"|"+at+"|"+d.Detail)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s", diff)
			}
		})
	}
}
