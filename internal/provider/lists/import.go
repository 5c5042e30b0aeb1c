package lists

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// A list result is what `terraform query -generate-config-out` writes as configuration, and the
// import block it writes beside it imports the object by its identity. For the configuration to
// plan clean after that import, the object a list returns must be the very object the import
// reads. So a list never converts a record into a resource object of its own: it runs the
// resource's ImportState with the identity, then its Read, as Terraform runs them for an import
// block, and returns what the Read leaves.

// found is one object a list resource found: its identity (the resource's identity model) and a
// name for people.
type found struct {
	identity any
	display  string
}

// listResult is the list result for x: its identity, and with include_resource the object r's
// import of that identity reads. An object that cannot be read is a result with an error on it,
// so that the objects listed before it still reach the user.
func listResult(ctx context.Context, r resource.ResourceWithImportState, req list.ListRequest, x found) list.ListResult {
	result := req.NewListResult(ctx)
	result.DisplayName = x.display
	result.Diagnostics.Append(result.Identity.Set(ctx, x.identity)...)
	if result.Diagnostics.HasError() || !req.IncludeResource {
		return result
	}
	state, identity, diags := importAndRead(ctx, r, req, result.Identity)
	result.Diagnostics.Append(diags...)
	if diags.HasError() {
		return result
	}
	if state.Raw.IsNull() {
		// The Read found nothing: the object went between the listing and the read.
		result.Diagnostics.AddError("Listed object gone", fmt.Sprintf("%s was listed, but it was gone when it was read. Run the query again.", x.display))
		return result
	}
	result.Resource = &tfsdk.Resource{Schema: req.ResourceSchema, Raw: state.Raw}
	if identity != nil && !identity.Raw.IsFullyNull() {
		result.Identity = identity
	}
	return result
}

// importAndRead imports the object of the given identity with r's ImportState, then reads it
// with r's Read, handing the import's state, identity and private state to the Read as the
// framework does between the two calls of an import; it returns what the Read leaves.
func importAndRead(ctx context.Context, r resource.ResourceWithImportState, req list.ListRequest, identity *tfsdk.ResourceIdentity) (tfsdk.State, *tfsdk.ResourceIdentity, diag.Diagnostics) {
	var diags diag.Diagnostics
	empty := tfsdk.State{Schema: req.ResourceSchema, Raw: tftypes.NewValue(req.ResourceSchema.Type().TerraformType(ctx), nil)}
	imp := resource.ImportStateResponse{State: copyState(empty), Identity: copyIdentity(identity)}
	imp.Private = newPrivate(imp.Private)
	r.ImportState(ctx, resource.ImportStateRequest{Identity: copyIdentity(identity)}, &imp)
	diags.Append(imp.Diagnostics...)
	if diags.HasError() {
		return empty, nil, diags
	}
	read := resource.ReadResponse{State: copyState(imp.State), Identity: copyIdentity(imp.Identity), Private: imp.Private}
	r.Read(ctx, resource.ReadRequest{State: copyState(imp.State), Identity: copyIdentity(imp.Identity), Private: imp.Private}, &read)
	diags.Append(read.Diagnostics...)
	return read.State, read.Identity, diags
}

// newPrivate returns a new, empty private state of the type the framework's requests carry,
// which its package keeps to itself: the Read after an import reads what the import wrote there
// (the group's takeover, the config's import mark), as it does in Terraform.
func newPrivate[T any](*T) *T { return new(T) }

func copyState(s tfsdk.State) tfsdk.State { return tfsdk.State{Schema: s.Schema, Raw: s.Raw.Copy()} }

func copyIdentity(i *tfsdk.ResourceIdentity) *tfsdk.ResourceIdentity {
	if i == nil {
		return nil
	}
	return &tfsdk.ResourceIdentity{Schema: i.Schema, Raw: i.Raw.Copy()}
}
