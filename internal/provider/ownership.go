package provider

import (
	"context"
	"encoding/json"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// privateOwnerKey is the private-state key under which a group resource keeps its ownership.
const privateOwnerKey = "owner"

// ownership is a group resource's private state: the owner ID its Terraform state holds, and
// after an import, the owner it takes the group over from at its next apply.
type ownership struct {
	ID           string `json:"id"`
	TakeoverFrom string `json:"takeover_from,omitempty"`
}

// privateGetter and privateSetter are the private-state halves of the framework's requests and
// responses.
type privateGetter interface {
	GetKey(ctx context.Context, key string) ([]byte, diag.Diagnostics)
}

type privateSetter interface {
	SetKey(ctx context.Context, key string, value []byte) diag.Diagnostics
}

// readOwnership reads the resource's ownership; the zero value when it has none (a state written
// before groups had owners).
func readOwnership(ctx context.Context, p privateGetter, diags *diag.Diagnostics) ownership {
	var o ownership
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

func writeOwnership(ctx context.Context, p privateSetter, o ownership, diags *diag.Diagnostics) {
	b, err := json.Marshal(o)
	if err != nil {
		diags.AddError("Cannot store the group's ownership in Terraform state", err.Error())
		return
	}
	diags.Append(p.SetKey(ctx, privateOwnerKey, b)...)
}

// claim is the ownership as the reconciler checks it.
func (o ownership) claim() *reconcile.Claim {
	return &reconcile.Claim{ID: o.ID, TakeoverFrom: o.TakeoverFrom}
}

// adopt fills in the ownership of a state written before groups had owners: it takes the
// record's owner when there is one, else a new ID that the next change writes in the record.
func (o ownership) adopt(m reconcile.Meta) ownership {
	if o.ID != "" {
		return o
	}
	if m.Owner != nil && m.Owner.ID != "" {
		return ownership{ID: m.Owner.ID}
	}
	return ownership{ID: newRunID()}
}

// takingOver reports whether this state imported the group and has not yet written itself in
// the record as the owner.
func (o ownership) takingOver(m reconcile.Meta) bool {
	return o.TakeoverFrom != "" && m.Owner != nil && m.Owner.ID == o.TakeoverFrom
}
