package providerdata

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/identityschema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/diagnostics"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// Resource identities (Terraform 1.12 and later): the names that find a group's objects on the
// hosts, stored beside the state and accepted by `import { identity = {...} }`. Each identity holds
// the same names as the resource's string import ID, which keeps working: an identity attribute
// has the name of the state attribute it fills, and the string ID joins them with "/" in the
// order of importForm.attrs. The list resources return the same models.

// GroupIdentityModel is virt_stateful_group's identity.
type GroupIdentityModel struct {
	Name types.String `tfsdk:"name"`
}

// ConfigIdentityModel is virt_per_instance_config's identity.
type ConfigIdentityModel struct {
	Group types.String `tfsdk:"group"`
	Name  types.String `tfsdk:"name"`
}

// PolicyIdentityModel is virt_stateful_policy's identity.
type PolicyIdentityModel struct {
	Group types.String `tfsdk:"group"`
}

func GroupIdentitySchema() identityschema.Schema {
	return identityschema.Schema{Attributes: map[string]identityschema.Attribute{
		"name": identityschema.StringAttribute{
			RequiredForImport: true,
			Description:       "Name of the group, as the resource's `name`. The string import ID is the same name.",
		},
	}}
}

func ConfigIdentitySchema() identityschema.Schema {
	return identityschema.Schema{Attributes: map[string]identityschema.Attribute{
		"group": identityschema.StringAttribute{
			RequiredForImport: true,
			Description:       "Name of the `virt_stateful_group`, as the resource's `group`.",
		},
		"name": identityschema.StringAttribute{
			RequiredForImport: true,
			Description:       "Name of the instance, as the resource's `name`. The string import ID is `GROUP/NAME`.",
		},
	}}
}

func PolicyIdentitySchema() identityschema.Schema {
	return identityschema.Schema{Attributes: map[string]identityschema.Attribute{
		"group": identityschema.StringAttribute{
			RequiredForImport: true,
			Description:       "Name of the `virt_stateful_group` whose policy this is, as the resource's `group`. The string import ID is the same name.",
		},
	}}
}

// SetIdentity stores v as the resource's identity. Create, Read and Update call it from the
// names of the plan or state they start from: the names never change in place (they replace),
// and a Read that starts from a state written before identities existed fills it. Read sets it
// before it may remove the resource, as the framework refuses a Read without error that returns
// no identity. id is nil only where a test calls a resource without one.
func SetIdentity(ctx context.Context, id *tfsdk.ResourceIdentity, v any, diags *diag.Diagnostics) {
	if id == nil {
		return
	}
	diags.Append(id.Set(ctx, v)...)
}

// importForm is how a resource is imported: by its string ID (terraform import, import { id })
// or by its identity (import { identity }), both naming the same objects.
type importForm struct {
	// attrs are the identity attributes, which are also the state attributes they fill, in the
	// order the string ID joins them with "/".
	attrs []string
	// want says what the string ID must be, for the error about a wrong one.
	want string
}

var (
	GroupImport  = importForm{attrs: []string{"name"}, want: "the group's name, a DNS label of lower case letters, digits and hyphens"}
	ConfigImport = importForm{attrs: []string{"group", "name"}, want: "GROUP/NAME: the group's name and the instance's name, both DNS labels, such as db/db-1"}
	PolicyImport = importForm{attrs: []string{"group"}, want: "the group's name, a DNS label of lower case letters, digits and hyphens"}
)

// Read returns the names the import gives, in the order of attrs, and fills the state's name
// attributes, its id and the identity with them. It reports a wrong ID or identity value (with
// the attribute and what is allowed) and returns false then, having set nothing.
func (f importForm) Read(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) ([]string, bool) {
	var names []string
	if req.ID != "" || req.Identity == nil {
		names = strings.Split(req.ID, "/")
		if len(names) != len(f.attrs) || !allValid(names) {
			resp.Diagnostics.Append(diagnostics.InvalidImportID(req.ID, f.want))
			return nil, false
		}
	} else {
		for _, a := range f.attrs {
			var v types.String
			resp.Diagnostics.Append(req.Identity.GetAttribute(ctx, path.Root(a), &v)...)
			if resp.Diagnostics.HasError() {
				return nil, false
			}
			if !engine.ValidName(v.ValueString()) {
				resp.Diagnostics.AddAttributeError(path.Root(a), "Invalid import identity",
					fmt.Sprintf("The identity's %s %q must be a DNS label of lower case letters, digits and hyphens (the string import ID is %s).", a, v.ValueString(), f.want))
				return nil, false
			}
			names = append(names, v.ValueString())
		}
	}
	for i, a := range f.attrs {
		resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root(a), names[i])...)
		if resp.Identity != nil {
			resp.Diagnostics.Append(resp.Identity.SetAttribute(ctx, path.Root(a), names[i])...)
		}
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), strings.Join(names, "/"))...)
	return names, !resp.Diagnostics.HasError()
}

func allValid(names []string) bool {
	for _, n := range names {
		if !engine.ValidName(n) {
			return false
		}
	}
	return true
}
