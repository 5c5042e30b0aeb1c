package reconcile

import (
	"testing"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
)

// TestApply_undefinedMemberIsDefinedAgain: a running member undefined behind Terraform's back
// (libvirt keeps it running as a transient domain, without autostart) is defined again by the
// next apply from its record, with its UUID and autostart, and is neither stopped nor restarted;
// the apply after it changes nothing.
func TestApply_undefinedMemberIsDefinedAgain(t *testing.T) {
	t.Parallel()
	b := fake.New()
	apply(t, b, spec(2))
	d := b.Domains["db-1"]
	d.Transient, d.Autostart = true, false
	id, uuid, rec := d.ID, d.UUID, d.Spec.Record
	before := b.Calls["start"] + b.Calls["stop"] + b.Calls["shutdown"]
	apply(t, b, spec(2))
	d = b.Domains["db-1"]
	switch {
	case d == nil:
		t.Fatal("db-1 is gone")
	case d.Transient:
		t.Fatal("db-1 still runs without a definition")
	case !d.Autostart:
		t.Fatal("db-1 was defined again without its autostart")
	case d.ID != id || d.UUID != uuid:
		t.Fatalf("db-1 id %d uuid %s, was %d %s: it was restarted or recreated", d.ID, d.UUID, id, uuid)
	case d.Spec.Record.Instance.TemplateRevision != rec.Instance.TemplateRevision:
		t.Fatalf("db-1 defined again with revision %s, its record had %s", d.Spec.Record.Instance.TemplateRevision, rec.Instance.TemplateRevision)
	}
	if after := b.Calls["start"] + b.Calls["stop"] + b.Calls["shutdown"]; after != before {
		t.Fatalf("power calls %d -> %d: the repair powered a member", before, after)
	}
	defines := b.Calls["define"]
	apply(t, b, spec(2))
	if b.Calls["define"] != defines {
		t.Fatal("the apply after the repair defined a member again")
	}
}
