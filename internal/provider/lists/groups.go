package lists

import (
	"context"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/list/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/diagnostics"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/config"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/group"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/policy"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
)

// The list resources of the group's three resources find what a group record holds, so that a
// lost state can be rebuilt with `terraform query -generate-config-out`: the groups whose records
// are on the provider's hosts, the policy of each, and the per-instance configs of each. Each
// result is the resource its import reads (import.go).

var (
	_ list.ListResourceWithConfigure = (*StatefulGroupList)(nil)
	_ list.ListResourceWithConfigure = (*StatefulPolicyList)(nil)
	_ list.ListResourceWithConfigure = (*PerInstanceConfigList)(nil)
)

// NewStatefulGroupList is the factory of the virt_stateful_group list resource.
func NewStatefulGroupList() list.ListResource { return &StatefulGroupList{} }

// NewStatefulPolicyList is the factory of the virt_stateful_policy list resource.
func NewStatefulPolicyList() list.ListResource { return &StatefulPolicyList{} }

// NewPerInstanceConfigList is the factory of the virt_per_instance_config list resource.
func NewPerInstanceConfigList() list.ListResource { return &PerInstanceConfigList{} }

type StatefulGroupList struct{ Data *providerdata.ProviderData }

type StatefulPolicyList struct{ Data *providerdata.ProviderData }

type PerInstanceConfigList struct{ Data *providerdata.ProviderData }

type groupListModel struct {
	NamePrefix types.String `tfsdk:"name_prefix"`
	Host       types.String `tfsdk:"host"`
}

type ofGroupListModel struct {
	Group types.String `tfsdk:"group"`
}

func (l *StatefulGroupList) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_stateful_group"
}

func (l *StatefulPolicyList) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_stateful_policy"
}

func (l *PerInstanceConfigList) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_per_instance_config"
}

func (l *StatefulGroupList) ListResourceConfigSchema(_ context.Context, _ list.ListResourceSchemaRequest, resp *list.ListResourceSchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The groups whose records are on the provider's hosts, each with its identity and, with `include_resource = true`, the `virt_stateful_group` as its import reads it: `terraform query -generate-config-out=FILE` writes an import block and the configuration of each, which plan with no change after the import. A host that does not answer is reported in a warning and its groups are missing from the results.",
		Attributes: map[string]schema.Attribute{
			"name_prefix": schema.StringAttribute{
				MarkdownDescription: "Only the groups whose name starts with this.",
				Optional:            true,
			},
			"host": schema.StringAttribute{
				MarkdownDescription: "Only the groups whose record is on this host: `default` (the provider's own `uri`) or the name of one of the provider's `host` blocks. Unset: every host of the provider.",
				Optional:            true,
				Validators:          []validator.String{providerdata.NameValidator},
			},
		},
	}
}

// ofGroupSchema is the configuration of the lists of what a group holds: one group, or every
// group on the provider's hosts.
func ofGroupSchema(what, resourceType string) schema.Schema {
	return schema.Schema{
		MarkdownDescription: "The " + what + " that the group records on the provider's hosts hold, each with its identity and, with `include_resource = true`, the `" + resourceType + "` as its import reads it: with the `virt_stateful_group` list, `terraform query -generate-config-out=FILE` rebuilds a lost state. A host that does not answer is reported in a warning and what its records hold is missing from the results.",
		Attributes: map[string]schema.Attribute{
			"group": schema.StringAttribute{
				MarkdownDescription: "Only those of this group (an error when no host has its record). Unset: those of every group on the provider's hosts.",
				Optional:            true,
				Validators:          []validator.String{providerdata.NameValidator},
			},
		},
	}
}

func (l *StatefulPolicyList) ListResourceConfigSchema(_ context.Context, _ list.ListResourceSchemaRequest, resp *list.ListResourceSchemaResponse) {
	resp.Schema = ofGroupSchema("stateful policies", "virt_stateful_policy")
}

func (l *PerInstanceConfigList) ListResourceConfigSchema(_ context.Context, _ list.ListResourceSchemaRequest, resp *list.ListResourceSchemaResponse) {
	resp.Schema = ofGroupSchema("per-instance configs", "virt_per_instance_config")
}

func (l *StatefulGroupList) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	l.Data = providerdata.ConfigureData(req.ProviderData, &resp.Diagnostics)
}

func (l *StatefulPolicyList) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	l.Data = providerdata.ConfigureData(req.ProviderData, &resp.Diagnostics)
}

func (l *PerInstanceConfigList) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	l.Data = providerdata.ConfigureData(req.ProviderData, &resp.Diagnostics)
}

func (l *StatefulGroupList) List(ctx context.Context, req list.ListRequest, stream *list.ListResultsStream) {
	ctx = l.Data.ReadingHosts(ctx)
	var cfg groupListModel
	diags := req.Config.Get(ctx, &cfg)
	if l.Data == nil {
		diags.Append(diagnostics.ProviderNotConfigured("the list"))
	}
	if diags.HasError() {
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return
	}
	hosts := l.Data.Reconciler.HostNames()
	if h := cfg.Host.ValueString(); h != "" {
		if !slices.Contains(hosts, h) {
			diags.Append(diagnostics.UnknownHost(path.Root("host"), "host", h, hosts))
			stream.Results = list.ListResultsStreamDiagnostics(diags)
			return
		}
		hosts = []string{h}
	}
	groups, diags := l.Data.GroupsOn(ctx, hosts)
	prefix := cfg.NamePrefix.ValueString()
	groups = slices.DeleteFunc(groups, func(g providerdata.HostGroup) bool { return !strings.HasPrefix(g.Name, prefix) })
	r := &group.StatefulGroupResource{Data: l.Data}
	stream.Results = func(push func(list.ListResult) bool) {
		if len(diags) > 0 && !push(list.ListResult{Diagnostics: diags}) {
			return
		}
		for i, g := range groups {
			if req.Limit > 0 && int64(i) >= req.Limit {
				return
			}
			display := g.Name
			if g.Host != engine.DefaultHost {
				display += " (record on host " + g.Host + ")"
			}
			if !push(listResult(ctx, r, req, found{identity: providerdata.GroupIdentityModel{Name: types.StringValue(g.Name)}, display: display})) {
				return
			}
		}
	}
}

func (l *StatefulPolicyList) List(ctx context.Context, req list.ListRequest, stream *list.ListResultsStream) {
	ctx = l.Data.ReadingHosts(ctx)
	r := &policy.StatefulPolicyResource{Data: l.Data}
	listOfGroups(ctx, l.Data, req, stream, func(s engine.GroupState) []found {
		if s.Policy == nil {
			return nil
		}
		return []found{{identity: providerdata.PolicyIdentityModel{Group: types.StringValue(s.Group.Name)}, display: "stateful policy of " + s.Group.Name}}
	}, func(x found) list.ListResult { return listResult(ctx, r, req, x) })
}

func (l *PerInstanceConfigList) List(ctx context.Context, req list.ListRequest, stream *list.ListResultsStream) {
	ctx = l.Data.ReadingHosts(ctx)
	r := &config.PerInstanceConfigResource{Data: l.Data}
	listOfGroups(ctx, l.Data, req, stream, func(s engine.GroupState) []found {
		names := make([]string, 0, len(s.Configs))
		for n := range s.Configs {
			names = append(names, n)
		}
		sort.Strings(names)
		out := make([]found, 0, len(names))
		for _, n := range names {
			out = append(out, found{identity: providerdata.ConfigIdentityModel{Group: types.StringValue(s.Group.Name), Name: types.StringValue(n)}, display: s.Group.Name + "/" + n})
		}
		return out
	}, func(x found) list.ListResult { return listResult(ctx, r, req, x) })
}

// listOfGroups streams what of(record) finds in the record of the configured group, or of every
// group on the provider's hosts, each as result makes it, up to the request's limit. A record
// that cannot be read is an error result of its own, and the other groups are still listed.
func listOfGroups(ctx context.Context, d *providerdata.ProviderData, req list.ListRequest, stream *list.ListResultsStream, of func(engine.GroupState) []found, result func(found) list.ListResult) {
	var cfg ofGroupListModel
	diags := req.Config.Get(ctx, &cfg)
	if d == nil {
		diags.Append(diagnostics.ProviderNotConfigured("the list"))
	}
	if diags.HasError() {
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return
	}
	var names []string
	if g := cfg.Group.ValueString(); g != "" {
		names = []string{g}
	} else {
		var groups []providerdata.HostGroup
		groups, diags = d.GroupsOn(ctx, d.Reconciler.HostNames())
		for _, g := range groups {
			names = append(names, g.Name)
		}
	}
	stream.Results = func(push func(list.ListResult) bool) {
		if len(diags) > 0 && !push(list.ListResult{Diagnostics: diags}) {
			return
		}
		n := int64(0)
		for _, g := range names {
			s, ok, err := d.LoadGroup(ctx, g)
			switch {
			case err != nil:
				if !push(list.ListResult{Diagnostics: diag.Diagnostics{diagnostics.GroupRead(g, err)}}) {
					return
				}
				continue
			case !ok && cfg.Group.ValueString() != "":
				push(list.ListResult{Diagnostics: diag.Diagnostics{diagnostics.GroupNotFound(path.Root("group"), g)}})
				return
			case !ok:
				// The record went between the listing and its read: the group is gone.
				continue
			}
			for _, x := range of(s) {
				if req.Limit > 0 && n >= req.Limit {
					return
				}
				n++
				if !push(result(x)) {
					return
				}
			}
		}
	}
}
