package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/domain"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/lists"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/protocol"
)

// domainProto drives virt_domain through the provider's protocol server, as Terraform does:
// private state, identities and plan modifiers are the framework's own, and the backend is fake.
type domainProto struct {
	t   *testing.T
	srv tfprotov6.ProviderServer
}

// domainObject is what Terraform keeps of one virt_domain between calls.
type domainObject struct {
	state    tftypes.Value
	private  []byte
	identity tftypes.Value
}

var (
	domainType         = domain.DomainSchema().Type().TerraformType(context.Background())
	domainIdentityType = domain.DomainIdentitySchema().Type().TerraformType(context.Background())
	domainListType     = lists.DomainListSchema().Type().TerraformType(context.Background())
)

func newDomainProto(t *testing.T, b *fake.Backend) *domainProto {
	t.Helper()
	ctx := context.Background()
	srv, err := protocol.NewProtocol6(NewTestProvider(b))()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{}); err != nil {
		t.Fatal(err)
	}
	var ps provider.SchemaResponse
	NewTestProvider(b).Schema(ctx, provider.SchemaRequest{}, &ps)
	cfg := tftypes.NewValue(ps.Schema.Type().TerraformType(ctx), map[string]tftypes.Value{
		"uri": tftypes.NewValue(tftypes.String, nil), "allow_host_paths": tftypes.NewValue(tftypes.Bool, nil), "host_timeout": tftypes.NewValue(tftypes.String, nil),
		"host": tftypes.NewValue(tftypes.List{ElementType: ps.Schema.Blocks["host"].Type().TerraformType(ctx).(tftypes.List).ElementType}, nil),
	})
	resp, err := srv.ConfigureProvider(ctx, &tfprotov6.ConfigureProviderRequest{Config: dyn(t, cfg)})
	if err != nil || diagsErr(resp.Diagnostics) != "" {
		t.Fatalf("configure: %v %s", err, diagsErr(resp.Diagnostics))
	}
	return &domainProto{t: t, srv: srv}
}

func dyn(t *testing.T, v tftypes.Value) *tfprotov6.DynamicValue {
	t.Helper()
	d, err := tfprotov6.NewDynamicValue(v.Type(), v)
	if err != nil {
		t.Fatal(err)
	}
	return &d
}

func undyn(t *testing.T, typ tftypes.Type, d *tfprotov6.DynamicValue) tftypes.Value {
	t.Helper()
	if d == nil {
		return tftypes.NewValue(typ, nil)
	}
	v, err := d.Unmarshal(typ)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func identityData(t *testing.T, v tftypes.Value) *tfprotov6.ResourceIdentityData {
	if v.IsNull() {
		return nil
	}
	return &tfprotov6.ResourceIdentityData{IdentityData: dyn(t, v)}
}

func identityOf(t *testing.T, d *tfprotov6.ResourceIdentityData) tftypes.Value {
	if d == nil {
		return tftypes.NewValue(domainIdentityType, nil)
	}
	return undyn(t, domainIdentityType, d.IdentityData)
}

// diagsErr is the error diagnostics' summaries, "" when there are none.
func diagsErr(ds []*tfprotov6.Diagnostic) string {
	out := ""
	for _, d := range ds {
		if d.Severity == tfprotov6.DiagnosticSeverityError {
			out += d.Summary + ": " + d.Detail + "\n"
		}
	}
	return out
}

// model reads a domain value into the resource's model.
func (p *domainProto) model(v tftypes.Value) domain.DomainModel {
	p.t.Helper()
	var m domain.DomainModel
	if d := (tfsdk.State{Schema: domain.DomainSchema(), Raw: v}).Get(context.Background(), &m); d.HasError() {
		p.t.Fatalf("read model: %v", d)
	}
	return m
}

// config is a virt_domain configuration: the attributes set, the rest null.
func domainConfig(set map[string]tftypes.Value) tftypes.Value {
	attrs := map[string]tftypes.Value{}
	for name, typ := range domainType.(tftypes.Object).AttributeTypes {
		attrs[name] = tftypes.NewValue(typ, nil)
	}
	for name, v := range set {
		attrs[name] = v
	}
	return tftypes.NewValue(domainType, attrs)
}

// proposed is Terraform's proposed new state: the configuration, with the prior state's values
// where an optional and computed or a computed attribute is null in it.
func proposed(prior, config tftypes.Value) tftypes.Value {
	if prior.IsNull() {
		return config
	}
	var pa, ca map[string]tftypes.Value
	_ = prior.As(&pa)
	_ = config.As(&ca)
	out := map[string]tftypes.Value{}
	for name, v := range ca {
		out[name] = v
		if v.IsNull() && name != "name" {
			out[name] = pa[name]
		}
	}
	return tftypes.NewValue(domainType, out)
}

func (p *domainProto) importID(id string) (domainObject, string) {
	p.t.Helper()
	resp, err := p.srv.ImportResourceState(context.Background(), &tfprotov6.ImportResourceStateRequest{TypeName: "virt_domain", ID: id})
	if err != nil {
		p.t.Fatal(err)
	}
	if e := diagsErr(resp.Diagnostics); e != "" {
		return domainObject{}, e
	}
	r := resp.ImportedResources[0]
	return domainObject{state: undyn(p.t, domainType, r.State), private: r.Private, identity: identityOf(p.t, r.Identity)}, ""
}

func (p *domainProto) importIdentity(host, name string) (domainObject, string) {
	p.t.Helper()
	h := tftypes.NewValue(tftypes.String, nil)
	if host != "" {
		h = tftypes.NewValue(tftypes.String, host)
	}
	id := tftypes.NewValue(domainIdentityType, map[string]tftypes.Value{"host": h, "name": tftypes.NewValue(tftypes.String, name)})
	resp, err := p.srv.ImportResourceState(context.Background(), &tfprotov6.ImportResourceStateRequest{TypeName: "virt_domain", Identity: identityData(p.t, id)})
	if err != nil {
		p.t.Fatal(err)
	}
	if e := diagsErr(resp.Diagnostics); e != "" {
		return domainObject{}, e
	}
	r := resp.ImportedResources[0]
	return domainObject{state: undyn(p.t, domainType, r.State), private: r.Private, identity: identityOf(p.t, r.Identity)}, ""
}

func (p *domainProto) read(o domainObject) (domainObject, []*tfprotov6.Diagnostic) {
	p.t.Helper()
	resp, err := p.srv.ReadResource(context.Background(), &tfprotov6.ReadResourceRequest{
		TypeName: "virt_domain", CurrentState: dyn(p.t, o.state), Private: o.private, CurrentIdentity: identityData(p.t, o.identity),
	})
	if err != nil {
		p.t.Fatal(err)
	}
	return domainObject{state: undyn(p.t, domainType, resp.NewState), private: resp.Private, identity: identityOf(p.t, resp.NewIdentity)}, resp.Diagnostics
}

// planned is a plan's answer.
type planned struct {
	state    tftypes.Value
	private  []byte
	identity tftypes.Value
	replace  int
	diags    []*tfprotov6.Diagnostic
}

func (p *domainProto) plan(o domainObject, config tftypes.Value) planned {
	p.t.Helper()
	prior := o.state
	if prior.Type() == nil {
		prior = tftypes.NewValue(domainType, nil)
	}
	resp, err := p.srv.PlanResourceChange(context.Background(), &tfprotov6.PlanResourceChangeRequest{
		TypeName: "virt_domain", PriorState: dyn(p.t, prior), ProposedNewState: dyn(p.t, proposed(prior, config)), Config: dyn(p.t, config),
		PriorPrivate: o.private, PriorIdentity: identityData(p.t, o.identity),
	})
	if err != nil {
		p.t.Fatal(err)
	}
	return planned{state: undyn(p.t, domainType, resp.PlannedState), private: resp.PlannedPrivate, identity: identityOf(p.t, resp.PlannedIdentity), replace: len(resp.RequiresReplace), diags: resp.Diagnostics}
}

func (p *domainProto) apply(o domainObject, pl planned, config tftypes.Value) (domainObject, string) {
	p.t.Helper()
	prior := o.state
	if prior.Type() == nil {
		prior = tftypes.NewValue(domainType, nil)
	}
	resp, err := p.srv.ApplyResourceChange(context.Background(), &tfprotov6.ApplyResourceChangeRequest{
		TypeName: "virt_domain", PriorState: dyn(p.t, prior), PlannedState: dyn(p.t, pl.state), Config: dyn(p.t, config),
		PlannedPrivate: pl.private, PlannedIdentity: identityData(p.t, pl.identity),
	})
	if err != nil {
		p.t.Fatal(err)
	}
	return domainObject{state: undyn(p.t, domainType, resp.NewState), private: resp.Private, identity: identityOf(p.t, resp.NewIdentity)}, diagsErr(resp.Diagnostics)
}

// listedDomain is one list result: display name, identity and (when asked) resource.
type listedDomain struct {
	name     string
	identity tftypes.Value
	resource tftypes.Value
}

func (p *domainProto) list(config map[string]tftypes.Value, include bool) ([]listedDomain, string) {
	p.t.Helper()
	attrs := map[string]tftypes.Value{}
	for name, typ := range domainListType.(tftypes.Object).AttributeTypes {
		attrs[name] = tftypes.NewValue(typ, nil)
	}
	for name, v := range config {
		attrs[name] = v
	}
	// The server main.go serves must list: a server that only the framework's inner one
	// implements the list calls of would be told "not implemented" by Terraform.
	ls, ok := p.srv.(tfprotov6.ListResourceServer)
	if !ok {
		p.t.Fatalf("the provider's protocol server %T serves no list resources", p.srv)
	}
	resp, err := ls.ListResource(context.Background(), &tfprotov6.ListResourceRequest{
		TypeName: "virt_domain", Config: dyn(p.t, tftypes.NewValue(domainListType, attrs)), IncludeResource: include,
	})
	if err != nil {
		p.t.Fatal(err)
	}
	var out []listedDomain
	errs := ""
	for r := range resp.Results {
		if e := diagsErr(r.Diagnostics); e != "" {
			errs += e
			continue
		}
		l := listedDomain{name: r.DisplayName, identity: identityOf(p.t, r.Identity), resource: tftypes.NewValue(domainType, nil)}
		if r.Resource != nil {
			l.resource = undyn(p.t, domainType, r.Resource)
		}
		out = append(out, l)
	}
	return out, errs
}

func (p *domainProto) validateList(config map[string]tftypes.Value) []*tfprotov6.Diagnostic {
	p.t.Helper()
	attrs := map[string]tftypes.Value{}
	for name, typ := range domainListType.(tftypes.Object).AttributeTypes {
		attrs[name] = tftypes.NewValue(typ, nil)
	}
	for name, v := range config {
		attrs[name] = v
	}
	resp, err := p.srv.(tfprotov6.ListResourceServer).ValidateListResourceConfig(context.Background(), &tfprotov6.ValidateListResourceConfigRequest{
		TypeName: "virt_domain", Config: dyn(p.t, tftypes.NewValue(domainListType, attrs)),
	})
	if err != nil {
		p.t.Fatal(err)
	}
	return resp.Diagnostics
}
