package libvirt

import (
	"context"
	"slices"
	"strings"
	"testing"

	golibvirt "github.com/digitalocean/go-libvirt"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// TestAccStaleHandles changes a listed domain behind the backend's back (started, stopped,
// replaced by another of the same name) and checks that writes made from the listing's handle
// still reach the domain that has the name now.
func TestAccStaleHandles(t *testing.T) {
	requireAcc(t)
	ctx := context.Background()
	b := connectAcc(t, DefaultURI)
	raw := b.Raw()
	name := "tfacc-bk-handle-" + testSuffix()
	spec := backend.DomainSpec{Name: name, Shape: engine.Shape{DomainType: "qemu", VCPU: 1, MemoryMiB: 64}}
	if err := b.DefineDomain(ctx, spec); err != nil {
		t.Fatalf("define: %v", err)
	}
	t.Cleanup(func() {
		if err := b.UndefineDomain(ctx, name); err != nil {
			t.Errorf("undefine: %v", err)
		}
		if left, err := b.ListDomains(ctx, name); err != nil || len(left) > 0 {
			t.Errorf("left behind: %v %v", left, err)
		}
	})
	list := func() backend.Domain {
		t.Helper()
		doms, err := b.ListDomains(ctx, name)
		if err != nil || len(doms) != 1 {
			t.Fatalf("list: %v %v", doms, err)
		}
		return doms[0]
	}
	described := func(flags golibvirt.DomainXMLFlags) string {
		t.Helper()
		d, err := raw.DomainLookupByName(name)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := raw.DomainGetXMLDesc(d, flags)
		if err != nil {
			t.Fatal(err)
		}
		p, err := readDomainXML(doc)
		if err != nil {
			t.Fatal(err)
		}
		return p.description
	}
	behind := func(what string, fn func(d golibvirt.Domain) error) {
		t.Helper()
		d, err := raw.DomainLookupByName(name)
		if err == nil {
			err = fn(d)
		}
		if err != nil {
			t.Fatalf("%s behind the backend's back: %v", what, err)
		}
	}

	// Listed stopped, started since: the definition gets the write (the running domain does
	// not, and the next listing shows it).
	list()
	behind("start", func(d golibvirt.Domain) error { return raw.DomainCreate(d) })
	if err := b.SetDescription(ctx, name, "one"); err != nil {
		t.Fatalf("write with a handle listed before the start: %v", err)
	}
	if got := described(golibvirt.DomainXMLInactive); got != "one" {
		t.Errorf("definition's description %q, want one", got)
	}

	// Listed running, stopped since: the live write is refused and done again as it is now.
	if d := list(); d.ID <= 0 {
		t.Fatalf("listed with id %d, want running", d.ID)
	}
	behind("stop", func(d golibvirt.Domain) error { return raw.DomainDestroy(d) })
	if err := b.SetDescription(ctx, name, "two"); err != nil {
		t.Fatalf("write with a handle listed before the stop: %v", err)
	}
	if got := described(golibvirt.DomainXMLInactive); got != "two" {
		t.Errorf("description %q, want two", got)
	}

	// Listed, then replaced by another domain of the same name: the write reaches the new one.
	old := list()
	replace := func() {
		t.Helper()
		behind("replace", func(d golibvirt.Domain) error {
			doc, err := raw.DomainGetXMLDesc(d, golibvirt.DomainXMLInactive)
			if err != nil {
				return err
			}
			if err := raw.DomainUndefineFlags(d, 0); err != nil {
				return err
			}
			// Without its UUID, the definition gets a new one.
			start := strings.Index(doc, "<uuid>")
			end := strings.Index(doc, "</uuid>")
			_, err = raw.DomainDefineXMLFlags(doc[:start]+doc[end+len("</uuid>"):], 0)
			return err
		})
	}
	replace()
	if err := b.SetDescription(ctx, name, "three"); err != nil {
		t.Fatalf("write with the handle of a domain replaced since: %v", err)
	}
	if got := described(0); got != "three" {
		t.Errorf("new domain's description %q, want three", got)
	}
	if now := list(); now.UUID == old.UUID {
		t.Fatalf("the domain was not replaced (UUID %s)", now.UUID)
	}

	// And undefining with the handle of a replaced domain undefines the one there now.
	replace()
	if err := b.UndefineDomain(ctx, name); err != nil {
		t.Fatalf("undefine with the handle of a domain replaced since: %v", err)
	}
	if left, err := b.ListDomains(ctx, name); err != nil || len(left) > 0 {
		t.Fatalf("after undefine: %v %v", left, err)
	}
}

// TestAccUndefineListedStopped checks what Reconciler.sweepDeleted relies on: a domain the listing
// saw stopped is undefined without a power-off, so one started behind the backend's back since is
// left running without a definition; TransientDomainNames shows it, and powering it off removes it. One
// the listing saw running is powered off and gone after the undefine.
func TestAccUndefineListedStopped(t *testing.T) {
	requireAcc(t)
	ctx := context.Background()
	b := connectAcc(t, DefaultURI)
	raw := b.Raw()
	name := "tfacc-bk-sweep-" + testSuffix()
	// there reports whether any domain of the name is on the host, defined or not.
	there := func() (bool, error) {
		doms, err := b.ListDomains(ctx, name)
		return slices.ContainsFunc(doms, func(d backend.Domain) bool { return d.Name == name }), err
	}
	t.Cleanup(func() {
		_ = b.StopDomain(ctx, name)
		_ = b.UndefineDomain(ctx, name)
		if left, err := there(); err != nil || left {
			t.Errorf("left behind: %v %v", left, err)
		}
	})
	if err := b.DefineDomain(ctx, backend.DomainSpec{Name: name, Shape: engine.Shape{DomainType: "qemu", VCPU: 1, MemoryMiB: 64}}); err != nil {
		t.Fatalf("define: %v", err)
	}
	if doms, err := b.ListDomains(ctx, name); err != nil || len(doms) != 1 || doms[0].ID > 0 {
		t.Fatalf("list: %v %v", doms, err)
	}
	d, err := raw.DomainLookupByName(name)
	if err == nil {
		err = raw.DomainCreate(d)
	}
	if err != nil {
		t.Fatalf("start behind the backend's back: %v", err)
	}
	if err := b.UndefineDomain(ctx, name); err != nil {
		t.Fatalf("undefine: %v", err)
	}
	names, err := b.TransientDomainNames(ctx)
	if err != nil || !names[name] {
		t.Fatalf("after undefining a domain started since the listing: there %v (%v), want it left running", names[name], err)
	}
	if persistent, err := raw.DomainIsPersistent(d); err != nil || persistent != 0 {
		t.Fatalf("persistent = %d (%v), want 0: the definition is gone", persistent, err)
	}
	if err := b.StopDomain(ctx, name); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if left, err := there(); err != nil || left {
		t.Fatalf("after powering off: there %v (%v), want gone", left, err)
	}

	// Listed running: powered off by the undefine itself.
	if err := b.DefineDomain(ctx, backend.DomainSpec{Name: name, Shape: engine.Shape{DomainType: "qemu", VCPU: 1, MemoryMiB: 64}}); err != nil {
		t.Fatalf("define again: %v", err)
	}
	if err := b.StartDomain(ctx, name); err != nil {
		t.Fatalf("start: %v", err)
	}
	if doms, err := b.ListDomains(ctx, name); err != nil || len(doms) != 1 || doms[0].ID <= 0 {
		t.Fatalf("list: %v %v", doms, err)
	}
	if err := b.UndefineDomain(ctx, name); err != nil {
		t.Fatalf("undefine a running domain: %v", err)
	}
	if left, err := there(); err != nil || left {
		t.Fatalf("after undefining a domain listed running: there %v (%v), want gone", left, err)
	}
}
