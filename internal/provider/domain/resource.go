package domain

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/backend/libvirt"
	"github.com/virtfleet/terraform-provider-virt/internal/diagnostics"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

var (
	_ resource.Resource                = (*domainResource)(nil)
	_ resource.ResourceWithConfigure   = (*domainResource)(nil)
	_ resource.ResourceWithImportState = (*domainResource)(nil)
	_ resource.ResourceWithModifyPlan  = (*domainResource)(nil)
	_ resource.ResourceWithIdentity    = (*domainResource)(nil)
)

// domainShutdownTimeout is how long `running = false` waits for the guest to shut down.
const domainShutdownTimeout = 3 * time.Minute

// NewDomainResource is the factory of virt_domain.
func NewDomainResource() resource.Resource { return &domainResource{} }

// domainResource adopts one existing domain that no group manages (see domainSchemaDescription).
// Its ownership is the random ID in its private state (ownership, as a group's), written in the
// domain's adoption record at apply; the record is the only thing of the provider on the domain.
type domainResource struct {
	data *providerdata.ProviderData
}

func (r *domainResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_domain"
}

func (r *domainResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = DomainSchema()
}

func (r *domainResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = DomainIdentitySchema()
}

func (r *domainResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = providerdata.ConfigureData(req.ProviderData, &resp.Diagnostics)
}

func (r *domainResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan DomainModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	r.apply(ctx, plan, providerdata.Ownership{ID: providerdata.NewRunID()}, &resp.State, resp.Identity, resp.Private, &resp.Diagnostics)
}

func (r *domainResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan DomainModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	own := providerdata.ReadOwnership(ctx, req.Private, &resp.Diagnostics)
	if own.ID == "" {
		own.ID = providerdata.NewRunID()
	}
	r.apply(ctx, plan, own, &resp.State, resp.Identity, resp.Private, &resp.Diagnostics)
}

// apply adopts the domain (writes this state's ownership record) and brings running and
// description to the plan's, checking again what the plan checked: the host may have changed.
// The record goes first, so that another state sees the claim before anything is changed.
func (r *domainResource) apply(ctx context.Context, plan DomainModel, own providerdata.Ownership, state *tfsdk.State, id *tfsdk.ResourceIdentity, priv providerdata.PrivateSetter, diags *diag.Diagnostics) {
	ctx = tflog.NewSubsystem(ctx, libvirt.Subsystem)
	host, name := plan.Host.ValueString(), plan.Name.ValueString()
	b, ok := r.hostOf(host, diags)
	if !ok {
		return
	}
	dom, rec, ok := r.look(ctx, b, host, name, diags)
	if !ok {
		return
	}
	if v := judgeDomain(dom, rec, own); v != domainAdoptable {
		summary, detail := domainRefusal(v, host, name, dom, rec)
		diags.AddAttributeError(path.Root("name"), summary, detail)
		return
	}
	if err := b.SetAdoption(ctx, name, backend.Adoption{Owner: own.ID, Since: r.now().Unix()}); err != nil {
		diags.AddError("Cannot adopt domain "+name, fmt.Sprintf("%s: writing the ownership record failed: %s. Nothing else was changed.", providerdata.OnHost(host), err))
		return
	}
	own.TakeoverFrom = ""
	providerdata.WriteOwnership(ctx, priv, own, diags)
	tflog.Info(ctx, "adopted domain", map[string]any{"domain": name, "host": host, "uuid": dom.UUID, "took_over_from": rec != nil && rec.Owner != own.ID})
	if !plan.Description.IsUnknown() && plan.Description.ValueString() != dom.Description {
		if err := b.SetDescription(ctx, name, plan.Description.ValueString()); err != nil {
			diags.AddAttributeError(path.Root("description"), "Cannot set the domain's description", fmt.Sprintf("domain %s on %s: %s. The domain is adopted; apply again.", name, providerdata.OnHost(host), err))
			return
		}
	}
	if !plan.Running.IsUnknown() {
		if !r.power(ctx, b, host, name, dom, plan.Running.ValueBool(), diags) {
			return
		}
	}
	dom, _, ok = r.look(ctx, b, host, name, diags)
	if !ok || dom == nil {
		if ok {
			diags.AddError("Domain vanished", fmt.Sprintf("The domain %s on %s was undefined while it was being adopted.", name, providerdata.OnHost(host)))
		}
		return
	}
	var m DomainModel
	DomainFacts(&m, host, *dom)
	m.Adopted = types.BoolValue(true)
	diags.Append(state.Set(ctx, &m)...)
	setDomainIdentity(ctx, id, host, name, diags)
}

// power starts or shuts down the domain as want says. A shutdown is a request the guest may
// ignore: after domainShutdownTimeout the apply fails rather than pulling the power cord of a
// machine this provider did not make.
func (r *domainResource) power(ctx context.Context, b backend.Domains, host, name string, dom *backend.Domain, want bool, diags *diag.Diagnostics) bool {
	running := dom.Status == engine.StatusRunning
	switch {
	case want && !running:
		if err := b.StartDomain(ctx, name); err != nil {
			diags.AddAttributeError(path.Root("running"), "Cannot start domain "+name, fmt.Sprintf("%s: %s. The domain is adopted; its state (%s) is unchanged.", providerdata.OnHost(host), err, dom.Status))
			return false
		}
		tflog.Info(ctx, "started domain", map[string]any{"domain": name, "host": host})
	case !want && running:
		if err := b.ShutdownDomain(ctx, name); err != nil {
			diags.AddAttributeError(path.Root("running"), "Cannot shut down domain "+name, fmt.Sprintf("%s: %s. The domain is adopted and still runs.", providerdata.OnHost(host), err))
			return false
		}
		stopped, err := b.WaitStopped(ctx, name, domainShutdownTimeout)
		if err != nil {
			diags.AddAttributeError(path.Root("running"), "Cannot shut down domain "+name, fmt.Sprintf("%s: waiting for the shutdown: %s.", providerdata.OnHost(host), err))
			return false
		}
		if !stopped {
			diags.AddAttributeError(path.Root("running"), "Domain did not shut down",
				fmt.Sprintf("The domain %s on %s was asked to shut down (ACPI) and still ran after %s: its guest ignores the request or is busy. virt_domain does not power off a domain it did not make; shut the guest down from inside, or power it off yourself (virsh destroy %s), then apply again.", name, providerdata.OnHost(host), domainShutdownTimeout, name))
			return false
		}
		tflog.Info(ctx, "shut down domain", map[string]any{"domain": name, "host": host})
	}
	return true
}

func (r *domainResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	ctx, cancel := reconcile.HostContext(r.data.ReadingHosts(ctx)) // one host's reading
	defer cancel()
	var state DomainModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	host, name := state.Host.ValueString(), state.Name.ValueString()
	if host == "" {
		host = engine.DefaultHost
	}
	// Set first: the framework refuses a Read that removes the resource without an identity.
	setDomainIdentity(ctx, resp.Identity, host, name, &resp.Diagnostics)
	b, ok := r.hostOf(host, &resp.Diagnostics)
	if !ok {
		return
	}
	dom, rec, ok := r.look(ctx, b, host, name, &resp.Diagnostics)
	if !ok {
		return
	}
	if dom == nil {
		resp.Diagnostics.AddWarning("Adopted domain is gone", fmt.Sprintf("The domain %s on %s no longer exists; it is removed from the state. virt_domain does not define domains, so planning it again will fail until a domain of that name exists.", name, providerdata.OnHost(host)))
		resp.State.RemoveResource(ctx)
		return
	}
	own := providerdata.ReadOwnership(ctx, req.Private, &resp.Diagnostics)
	var m DomainModel
	DomainFacts(&m, host, *dom)
	m.Adopted = types.BoolValue(own.ID != "" && rec != nil && rec.Owner == own.ID)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// Delete releases the domain: it removes this state's ownership record and nothing else. A
// record another state wrote since (it took the domain over) is left to that state.
func (r *domainResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state DomainModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx = tflog.NewSubsystem(ctx, libvirt.Subsystem)
	host, name := state.Host.ValueString(), state.Name.ValueString()
	b, ok := r.hostOf(host, &resp.Diagnostics)
	if !ok {
		return
	}
	dom, rec, ok := r.look(ctx, b, host, name, &resp.Diagnostics)
	if !ok || dom == nil {
		return
	}
	own := providerdata.ReadOwnership(ctx, req.Private, &resp.Diagnostics)
	if rec == nil || rec.Owner != own.ID {
		tflog.Info(ctx, "released domain that carries no record of this state", map[string]any{"domain": name, "host": host})
		return
	}
	if err := b.ClearAdoption(ctx, name); err != nil {
		resp.Diagnostics.AddError("Cannot release domain "+name, fmt.Sprintf("%s: removing the ownership record failed: %s. The domain and its volumes are untouched.", providerdata.OnHost(host), err))
		return
	}
	tflog.Info(ctx, "released domain", map[string]any{"domain": name, "host": host, "uuid": dom.UUID})
}

// ImportState takes the domain named by `NAME`, `HOST/NAME` or the identity {host, name}. A
// group's member is refused here already; an adoption record of another state is noted, to be
// taken over at the next apply.
func (r *domainResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	ctx, cancel := reconcile.HostContext(r.data.ReadingHosts(ctx)) // one host's reading
	defer cancel()
	host, name := engine.DefaultHost, req.ID
	if req.ID == "" && req.Identity != nil {
		var idm DomainIdentityModel
		resp.Diagnostics.Append(req.Identity.Get(ctx, &idm)...)
		if resp.Diagnostics.HasError() {
			return
		}
		name = idm.Name.ValueString()
		if h := idm.Host.ValueString(); h != "" {
			host = h
		}
	} else if h, n, ok := strings.Cut(req.ID, "/"); ok {
		host, name = h, n
	}
	if err := checkDomainName(name); err != nil {
		resp.Diagnostics.Append(diagnostics.InvalidImportID(req.ID, "NAME or HOST/NAME: "+err.Error()))
		return
	}
	b, ok := r.hostOf(host, &resp.Diagnostics)
	if !ok {
		return
	}
	dom, rec, ok := r.look(ctx, b, host, name, &resp.Diagnostics)
	if !ok {
		return
	}
	if v := judgeDomain(dom, rec, providerdata.Ownership{}); v == domainMissing || v == domainGroupMember {
		summary, detail := domainRefusal(v, host, name, dom, rec)
		resp.Diagnostics.AddError(summary, detail)
		return
	}
	own := providerdata.Ownership{ID: providerdata.NewRunID()}
	if rec != nil {
		own.TakeoverFrom = rec.Owner
	}
	providerdata.WriteOwnership(ctx, resp.Private, own, &resp.Diagnostics)
	var m DomainModel
	DomainFacts(&m, host, *dom)
	m.Adopted = types.BoolValue(false)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
	setDomainIdentity(ctx, resp.Identity, host, name, &resp.Diagnostics)
}

// ModifyPlan refuses at plan what the apply would refuse (judgeDomain), plans the adoption
// (adopted = true), and warns on destroy that the domain stays.
func (r *domainResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	ctx, cancel := reconcile.HostContext(r.data.ReadingHosts(ctx)) // one host's reading
	defer cancel()
	if req.Plan.Raw.IsNull() {
		var state DomainModel
		resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
		resp.Diagnostics.AddWarning("Destroy releases the domain, it does not delete it",
			fmt.Sprintf("Destroying virt_domain %s removes only the provider's ownership record from the domain on %s. The domain, its state and its volumes stay on the host as they are.", state.Name.ValueString(), providerdata.OnHost(state.Host.ValueString())))
		return
	}
	var plan DomainModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() || plan.Host.IsUnknown() || plan.Name.IsUnknown() {
		return
	}
	host, name := plan.Host.ValueString(), plan.Name.ValueString()
	b, ok := r.hostOf(host, &resp.Diagnostics)
	if !ok {
		return
	}
	dom, rec, ok := r.look(ctx, b, host, name, &resp.Diagnostics)
	if !ok {
		return
	}
	own := providerdata.Ownership{}
	if !req.State.Raw.IsNull() {
		own = providerdata.ReadOwnership(ctx, req.Private, &resp.Diagnostics)
	}
	if v := judgeDomain(dom, rec, own); v != domainAdoptable {
		summary, detail := domainRefusal(v, host, name, dom, rec)
		resp.Diagnostics.AddAttributeError(path.Root("name"), summary, detail)
		return
	}
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("adopted"), true)...)
}

// domainReader is what reading a domain with its adoption record asks of a host.
type domainReader interface {
	backend.Domains
	backend.Metadata
}

// look reads the domain of that name (nil when there is none) and its adoption record.
func (r *domainResource) look(ctx context.Context, b domainReader, host, name string, diags *diag.Diagnostics) (*backend.Domain, *backend.Adoption, bool) {
	dom, rec, err := LookDomain(ctx, b, name)
	if err != nil {
		diags.Append(diagnostics.DomainRead(name, providerdata.OnHost(host), err))
		return nil, nil, false
	}
	return dom, rec, true
}

// LookDomain reads one domain by name, with its adoption record; nil when there is none.
func LookDomain(ctx context.Context, b domainReader, name string) (*backend.Domain, *backend.Adoption, error) {
	// The listing reads the domains whose names start with the prefix or are named: a prefix no
	// name can start with (libvirt's names are C strings, without NUL) leaves the one named, so
	// that a refresh of "db" does not read the definitions of db-1 to db-1000.
	doms, err := b.ListDomains(ctx, name+"\x00", name)
	if err != nil {
		return nil, nil, err
	}
	for _, d := range doms {
		if d.Name != name {
			continue
		}
		rec, err := b.Adoption(ctx, name)
		if errors.Is(err, backend.ErrNotFound) {
			return nil, nil, nil
		}
		if err != nil {
			return nil, nil, err
		}
		return &d, rec, nil
	}
	return nil, nil, nil
}

func (r *domainResource) hostOf(host string, diags *diag.Diagnostics) (backend.Backend, bool) {
	if r.data == nil {
		diags.Append(diagnostics.ProviderNotConfigured("virt_domain"))
		return nil, false
	}
	b, err := r.data.Host(host)
	if err != nil {
		diags.Append(diagnostics.UnknownHost(path.Root("host"), "host", host, r.data.Reconciler.HostNames()))
		return nil, false
	}
	return b, true
}

func (r *domainResource) now() time.Time {
	if r.data != nil && r.data.Reconciler.Now != nil {
		return r.data.Reconciler.Now()
	}
	return time.Now()
}

func setDomainIdentity(ctx context.Context, id *tfsdk.ResourceIdentity, host, name string, diags *diag.Diagnostics) {
	if id == nil {
		return
	}
	diags.Append(id.Set(ctx, DomainIdentityModel{Host: types.StringValue(host), Name: types.StringValue(name)})...)
}
