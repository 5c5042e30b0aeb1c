package lists

import (
	"context"
	"fmt"
	"regexp"
	"sort"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"

	"github.com/virtfleet/terraform-provider-virt/internal/provider/domain"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"

	listschema "github.com/hashicorp/terraform-plugin-framework/list/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/diagnostics"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
	"github.com/virtfleet/terraform-provider-virt/internal/validators"
)

var (
	_ list.ListResource              = (*domainList)(nil)
	_ list.ListResourceWithConfigure = (*domainList)(nil)
)

// NewDomainList is the factory of the virt_domain list resource.
func NewDomainList() list.ListResource { return &domainList{} }

// domainList lists the domains of one provider host, for `terraform query`: each result is a
// virt_domain identity and, with include_resource, the resource as its import reads it, so that
// -generate-config-out writes configuration whose plan is the adoption alone.
type domainList struct {
	data *providerdata.ProviderData
}

type domainListModel struct {
	Host       types.String `tfsdk:"host"`
	NamePrefix types.String `tfsdk:"name_prefix"`
	NameRegex  types.String `tfsdk:"name_regex"`
	State      types.String `tfsdk:"state"`
	Managed    types.Bool   `tfsdk:"managed"`
}

// domainStates are the values of the state filter: the statuses a listed domain can have.
var domainStates = []string{string(engine.StatusRunning), string(engine.StatusStopped), string(engine.StatusPaused), string(engine.StatusSuspended), string(engine.StatusFailed)}

func (l *domainList) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_domain"
}

func (l *domainList) ListResourceConfigSchema(_ context.Context, _ list.ListResourceSchemaRequest, resp *list.ListResourceSchemaResponse) {
	resp.Schema = DomainListSchema()
}

func DomainListSchema() listschema.Schema {
	return listschema.Schema{
		MarkdownDescription: "Every libvirt domain on one provider host, whoever made it, for `terraform query`. Each result is a `virt_domain` identity (`host`, `name`); with `include_resource = true` it is the `virt_domain` resource as its import reads it, so `terraform query -generate-config-out=FILE` writes an import block and configuration per domain whose plan is the adoption alone (`adopted` becomes `true`, an update in place). The filters combine (all must match); results are in name order. Domains that carry a group's member record are listed too (`managed = false` leaves them out), but a `virt_domain` refuses them at plan: they are the group's.",
		Attributes: map[string]listschema.Attribute{
			"host": listschema.StringAttribute{
				MarkdownDescription: "The provider host to list: `default` (the provider's `uri`, the default) or the name of one of its `host` blocks.",
				Optional:            true,
				Validators:          []validator.String{providerdata.NameValidator},
			},
			"name_prefix": listschema.StringAttribute{
				MarkdownDescription: "Only domains whose names start with this text.",
				Optional:            true,
			},
			"name_regex": listschema.StringAttribute{
				MarkdownDescription: "Only domains whose names match this regular expression (Go RE2 syntax, unanchored: use `^...$` for a whole name).",
				Optional:            true,
				Validators:          []validator.String{validators.Parsed("a regular expression in Go RE2 syntax", checkRegex)},
			},
			"state": listschema.StringAttribute{
				MarkdownDescription: "Only domains in this state: `RUNNING`, `STOPPED` (shut off), `PAUSED`, `SUSPENDED` (power-management suspended) or `FAILED` (crashed).",
				Optional:            true,
				Validators:          []validator.String{stringvalidator.OneOf(domainStates...)},
			},
			"managed": listschema.BoolAttribute{
				MarkdownDescription: "`true`: only domains that carry a record of this provider (a group member's record, or a `virt_domain` adoption record of any state); `false`: only domains that carry none, the ones made by hand or by other tools; unset: all.",
				Optional:            true,
			},
		},
	}
}

func checkRegex(s string) error {
	_, err := regexp.Compile(s)
	return err
}

func (l *domainList) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	l.data = providerdata.ConfigureData(req.ProviderData, &resp.Diagnostics)
}

// domainFilter is a list request's filters, decided on each domain by match.
type domainFilter struct {
	prefix  string
	regex   *regexp.Regexp
	state   engine.Status // "" for any
	managed *bool
}

func (m domainListModel) filter() (domainFilter, error) {
	f := domainFilter{prefix: m.NamePrefix.ValueString(), state: engine.Status(m.State.ValueString())}
	if !m.NameRegex.IsNull() {
		re, err := regexp.Compile(m.NameRegex.ValueString())
		if err != nil {
			return f, err
		}
		f.regex = re
	}
	if !m.Managed.IsNull() {
		v := m.Managed.ValueBool()
		f.managed = &v
	}
	return f, nil
}

// match tells whether dom passes the filters. adoption reads the domain's adoption record: it
// is asked only when the managed filter needs it, for a domain with no member record.
func (f domainFilter) match(dom backend.Domain, adoption func() (*backend.Adoption, error)) (bool, error) {
	switch {
	case len(dom.Name) < len(f.prefix) || dom.Name[:len(f.prefix)] != f.prefix:
		return false, nil
	case f.regex != nil && !f.regex.MatchString(dom.Name):
		return false, nil
	case f.state != "" && dom.Status != f.state:
		return false, nil
	case f.managed == nil:
		return true, nil
	}
	managed := dom.Record != nil
	if !managed {
		rec, err := adoption()
		if err != nil {
			return false, err
		}
		managed = rec != nil
	}
	return managed == *f.managed, nil
}

func (l *domainList) List(ctx context.Context, req list.ListRequest, stream *list.ListResultsStream) {
	// One host's reading, the stream's included: Terraform reads the stream after List returns,
	// so the bound ends with the stream when there is one.
	ctx, cancel := reconcile.HostContext(l.data.ReadingHosts(ctx))
	streamed := false
	defer func() {
		if !streamed {
			cancel()
		}
	}()
	var diags diag.Diagnostics
	var cfg domainListModel
	diags.Append(req.Config.Get(ctx, &cfg)...)
	if diags.HasError() {
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return
	}
	host := cfg.Host.ValueString()
	if host == "" {
		host = engine.DefaultHost
	}
	if l.data == nil {
		diags.Append(diagnostics.ProviderNotConfigured("the virt_domain list"))
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return
	}
	b, err := l.data.Host(host)
	if err != nil {
		diags.Append(diagnostics.UnknownHost(path.Root("host"), "host", host, l.data.Reconciler.HostNames()))
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return
	}
	f, err := cfg.filter()
	if err != nil {
		diags.AddAttributeError(path.Root("name_regex"), "Invalid name_regex", err.Error())
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return
	}
	// The prefix narrows what the backend reads; the other filters are decided here.
	doms, err := b.ListDomains(ctx, f.prefix)
	if err != nil {
		diags.AddError("Cannot list domains", fmt.Sprintf("%s: %s", providerdata.OnHost(host), err))
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return
	}
	sort.Slice(doms, func(i, j int) bool { return doms[i].Name < doms[j].Name })
	streamed = true
	stream.Results = func(push func(list.ListResult) bool) {
		defer cancel()
		var n int64
		for _, dom := range doms {
			if req.Limit > 0 && n >= req.Limit {
				return
			}
			ok, err := f.match(dom, func() (*backend.Adoption, error) { return b.Adoption(ctx, dom.Name) })
			if err != nil {
				res := req.NewListResult(ctx)
				res.Diagnostics.Append(diagnostics.DomainRead(dom.Name, providerdata.OnHost(host), err))
				push(res)
				return
			}
			if !ok {
				continue
			}
			n++
			if !push(l.result(ctx, req, host, dom)) {
				return
			}
		}
		tflog.Debug(ctx, "listed domains", map[string]any{"host": host, "read": len(doms), "listed": n})
	}
}

// result is one listed domain: its identity and, when asked, the resource as ImportState and
// Read leave it (not adopted by the importing state yet).
func (l *domainList) result(ctx context.Context, req list.ListRequest, host string, dom backend.Domain) list.ListResult {
	res := req.NewListResult(ctx)
	res.DisplayName = fmt.Sprintf("%s (%s)", dom.Name, dom.Status)
	res.Diagnostics.Append(res.Identity.Set(ctx, domain.DomainIdentityModel{Host: types.StringValue(host), Name: types.StringValue(dom.Name)})...)
	if req.IncludeResource {
		var m domain.DomainModel
		domain.DomainFacts(&m, host, dom)
		m.Adopted = types.BoolValue(false)
		res.Diagnostics.Append(res.Resource.Set(ctx, &m)...)
	}
	return res
}
