package providerdata

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// privateOwnerKey is the private-state key under which a group resource keeps its ownership.
const privateOwnerKey = "owner"

// Ownership is a group resource's private state: the owner ID its Terraform state holds, and
// after an import, the owner it takes the group over from at its next apply.
type Ownership struct {
	ID           string `json:"id"`
	TakeoverFrom string `json:"takeover_from,omitempty"`
}

// PrivateGetter and PrivateSetter are the private-state halves of the framework's requests and
// responses.
type PrivateGetter interface {
	GetKey(ctx context.Context, key string) ([]byte, diag.Diagnostics)
}

type PrivateSetter interface {
	SetKey(ctx context.Context, key string, value []byte) diag.Diagnostics
}

// ReadOwnership reads the resource's ownership; the zero value when it has none (a state written
// before groups had owners).
func ReadOwnership(ctx context.Context, p PrivateGetter, diags *diag.Diagnostics) Ownership {
	var o Ownership
	if p == nil {
		return o
	}
	b, d := p.GetKey(ctx, privateOwnerKey)
	diags.Append(d...)
	if len(b) > 0 {
		if err := json.Unmarshal(b, &o); err != nil {
			diags.AddError("Cannot read the group's ownership from Terraform state", err.Error())
		}
	}
	return o
}

func WriteOwnership(ctx context.Context, p PrivateSetter, o Ownership, diags *diag.Diagnostics) {
	b, err := json.Marshal(o)
	if err != nil {
		diags.AddError("Cannot store the group's ownership in Terraform state", err.Error())
		return
	}
	diags.Append(p.SetKey(ctx, privateOwnerKey, b)...)
}

// Claim is the ownership as the reconciler checks it.
func (o Ownership) Claim() *engine.Claim {
	return &engine.Claim{ID: o.ID, TakeoverFrom: o.TakeoverFrom}
}

// Adopt fills in the ownership of a state written before groups had owners: it takes the
// record's owner when there is one, else a new ID that the next change writes in the record.
func (o Ownership) Adopt(m reconcile.Meta) Ownership {
	if o.ID != "" {
		return o
	}
	if m.Owner != nil && m.Owner.ID != "" {
		return Ownership{ID: m.Owner.ID}
	}
	return Ownership{ID: NewRunID()}
}

// TakingOver reports whether this state imported the group and has not yet written itself in
// the record as the owner.
func (o Ownership) TakingOver(m reconcile.Meta) bool {
	return o.TakeoverFrom != "" && m.Owner != nil && m.Owner.ID == o.TakeoverFrom
}

// ConsentsToAdopt reports whether the config was imported (terraform import or an import
// block), which is how a user says that a domain no provider created is to become a member.
// A config already in the state consented when it was imported or created.
func ConsentsToAdopt(ctx context.Context, req resource.ModifyPlanRequest, diags *diag.Diagnostics) bool {
	if !req.State.Raw.IsNull() {
		return true
	}
	if req.Private == nil {
		return false
	}
	mark, d := req.Private.GetKey(ctx, ImportKey)
	diags.Append(d...)
	return len(mark) > 0
}

// AddAdoptionRefused refuses a config that would adopt a domain it was not imported for.
func AddAdoptionRefused(diags *diag.Diagnostics, group, name, who string) {
	diags.AddAttributeError(path.Root("name"), "Adopting a domain needs an import",
		fmt.Sprintf("The per-instance config %s/%s names %s, %s. A config adopts such a domain into the group (it is then restarted, changed and destroyed with the group) only when it is imported: terraform import virt_per_instance_config.<name> %s/%s (or an import block). Nothing was changed. To make a new member instead, give the config a name that is free.", group, name, name, who, group, name))
}

// ImportKey is the private state key that tells the reads and plans right after an import apart
// from later ones: a plan made together with an import (an `import {}` block) must show no change,
// so the adoption of an imported domain is planned from the next refresh on. ImportState sets it
// to "imported", the read that follows the import moves it to "read", and the next read removes it.
const ImportKey = "import"
