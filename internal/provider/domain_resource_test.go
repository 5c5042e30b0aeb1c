package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/domain"
)

// handMade is a host with domains made by hand (each with a volume holding its bytes), one of
// them running, a group's member and a domain another state adopted.
func handMade(t *testing.T) *fake.Backend {
	t.Helper()
	b := fake.New()
	for _, n := range []string{"tfacc-a", "tfacc-b", "tfacc-c"} {
		b.Volumes["virt/"+n+".qcow2"] = &fake.Volume{SizeMiB: 1, Data: "bytes of " + n}
		b.AddUnmanaged(backend.DomainSpec{Name: n, Shape: engine.Shape{DomainType: "qemu", VCPU: 1, MemoryMiB: 64, Description: "made by hand"}, Disks: []backend.Disk{{DeviceName: "vda", Pool: "virt", Volume: n + ".qcow2"}}})
	}
	if err := b.StartDomain(context.Background(), "tfacc-c"); err != nil {
		t.Fatal(err)
	}
	if err := b.DefineDomain(context.Background(), backend.DomainSpec{Name: "db-1", Shape: engine.Shape{VCPU: 1, MemoryMiB: 64}, Record: backend.Record{Group: "db", Index: 1}}); err != nil {
		t.Fatal(err)
	}
	b.AddUnmanaged(backend.DomainSpec{Name: "tfacc-other", Shape: engine.Shape{VCPU: 2, MemoryMiB: 128}}).Adoption = &backend.Adoption{Owner: "another-state", Since: 1}
	return b
}

// generatedConfig is the configuration terraform query -generate-config-out writes from a
// listed resource: its attributes that are not computed only.
func generatedConfig(t *testing.T, resource tftypes.Value) tftypes.Value {
	t.Helper()
	var attrs map[string]tftypes.Value
	if err := resource.As(&attrs); err != nil {
		t.Fatal(err)
	}
	set := map[string]tftypes.Value{}
	for _, a := range []string{"host", "name", "running", "description"} {
		set[a] = attrs[a]
	}
	return domainConfig(set)
}

func hostOps(b *fake.Backend) []string {
	var out []string
	for _, l := range b.Log {
		if op, _, _ := strings.Cut(l, " "); op != "list" && op != "read-adoption" {
			out = append(out, l)
		}
	}
	return out
}

// The check on a fake host: domains made by hand are listed, their generated
// configuration imports and plans only the adoption (no replacement), the apply writes the
// ownership record and nothing else (UUIDs and volume bytes kept), the next plan is empty, and
// destroy releases the domain, keeping it and its volume.
func TestDomain_queryImportAdoptEmptyPlanRelease(t *testing.T) {
	t.Parallel()
	b := handMade(t)
	p := newDomainProto(t, b)
	found, errs := p.list(map[string]tftypes.Value{"name_prefix": tftypes.NewValue(tftypes.String, "tfacc-"), "managed": tftypes.NewValue(tftypes.Bool, false)}, true)
	if errs != "" {
		t.Fatal(errs)
	}
	var names []string
	for _, f := range found {
		names = append(names, f.name)
	}
	if diff := cmp.Diff([]string{"tfacc-a (STOPPED)", "tfacc-b (STOPPED)", "tfacc-c (RUNNING)"}, names); diff != "" {
		t.Fatalf("listed (-want +got):\n%s", diff)
	}
	for _, f := range found {
		name := p.model(f.resource).Name.ValueString()
		uuid := b.Domains[name].UUID
		b.Log = nil

		// The import the generated block does, as Terraform runs it: import, then read.
		imported, e := p.importID(name)
		if e != "" {
			t.Fatal(e)
		}
		obj, ds := p.read(imported)
		if e := diagsErr(ds); e != "" {
			t.Fatal(e)
		}
		if diff := cmp.Diff(p.model(f.resource), p.model(obj.state)); diff != "" {
			t.Errorf("%s: the listed resource is not what its import reads (-listed +imported):\n%s", name, diff)
		}
		if !obj.identity.Equal(f.identity) {
			t.Errorf("%s: identity %v, listed %v", name, obj.identity, f.identity)
		}

		config := generatedConfig(t, f.resource)
		pl := p.plan(obj, config)
		if e := diagsErr(pl.diags); e != "" || pl.replace != 0 {
			t.Fatalf("%s: plan after import: %s, %d attributes replace", name, e, pl.replace)
		}
		want := p.model(obj.state)
		want.Adopted = types.BoolValue(true)
		if diff := cmp.Diff(want, p.model(pl.state)); diff != "" {
			t.Errorf("%s: the plan after the import changes more than the adoption (-state +plan):\n%s", name, diff)
		}

		applied, e := p.apply(obj, pl, config)
		if e != "" {
			t.Fatal(e)
		}
		d := b.Domains[name]
		if d.Adoption == nil || d.UUID != uuid || b.Volumes["virt/"+name+".qcow2"].Data != "bytes of "+name {
			t.Fatalf("%s after apply: adoption %+v, uuid %s (was %s), volume %+v", name, d.Adoption, d.UUID, uuid, b.Volumes["virt/"+name+".qcow2"])
		}
		if diff := cmp.Diff([]string{"set-adoption " + name}, hostOps(b)); diff != "" {
			t.Errorf("%s: the adoption did more on the host than write its record (-want +got):\n%s", name, diff)
		}

		refreshed, ds := p.read(applied)
		if e := diagsErr(ds); e != "" {
			t.Fatal(e)
		}
		next := p.plan(refreshed, config)
		if e := diagsErr(next.diags); e != "" || !next.state.Equal(refreshed.state) {
			t.Errorf("%s: the plan after the apply is not empty: %s\n%s", name, e, cmp.Diff(p.model(refreshed.state), p.model(next.state)))
		}

		// Destroy releases: the record goes, the domain and its volume stay as they are.
		destroy, err := p.srv.PlanResourceChange(context.Background(), &tfprotov6.PlanResourceChangeRequest{
			TypeName: "virt_domain", PriorState: dyn(t, refreshed.state), ProposedNewState: dyn(t, tftypes.NewValue(domainType, nil)),
			Config: dyn(t, tftypes.NewValue(domainType, nil)), PriorPrivate: refreshed.private,
		})
		if err != nil || len(destroy.Diagnostics) != 1 || destroy.Diagnostics[0].Severity != tfprotov6.DiagnosticSeverityWarning {
			t.Fatalf("%s: destroy plan: want one warning that the domain stays, got %v %v", name, err, destroy.Diagnostics)
		}
		b.Log = nil
		if _, e := p.apply(refreshed, planned{state: tftypes.NewValue(domainType, nil), private: refreshed.private}, tftypes.NewValue(domainType, nil)); e != "" {
			t.Fatal(e)
		}
		if d, ok := b.Domains[name]; !ok || d.Adoption != nil || d.UUID != uuid || b.Volumes["virt/"+name+".qcow2"].Data != "bytes of "+name {
			t.Fatalf("%s after destroy: domain %+v, volume %+v", name, d, b.Volumes["virt/"+name+".qcow2"])
		}
		if diff := cmp.Diff([]string{"clear-adoption " + name}, hostOps(b)); diff != "" {
			t.Errorf("%s: the destroy did more than remove the record (-want +got):\n%s", name, diff)
		}
	}
}

func stringValue(s string) tftypes.Value { return tftypes.NewValue(tftypes.String, s) }

// A plan refuses, on name, what virt_domain must not take, and an import refuses a group's
// member and a missing domain; nothing is written on the host.
func TestDomain_refusals(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		name string
		want string
	}{
		"a group's member":         {"db-1", "Domain belongs to a group"},
		"no such domain":           {"tfacc-none", "No such domain to adopt"},
		"adopted by another state": {"tfacc-other", "Domain adopted by another Terraform state"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := handMade(t)
			p := newDomainProto(t, b)
			b.Log = nil
			pl := p.plan(domainObject{}, domainConfig(map[string]tftypes.Value{"name": stringValue(tc.name)}))
			if len(pl.diags) != 1 || pl.diags[0].Summary != tc.want || pl.diags[0].Attribute.String() != tftypes.NewAttributePath().WithAttributeName("name").String() {
				t.Fatalf("create plan: want one error %q on name, got %v", tc.want, pl.diags)
			}
			if tc.name == "db-1" && !strings.Contains(pl.diags[0].Detail, "adopt_existing") {
				t.Errorf("the refusal of a member does not point at adopt_existing: %s", pl.diags[0].Detail)
			}
			if ops := hostOps(b); len(ops) != 0 {
				t.Errorf("a refused plan did %v on the host", ops)
			}
		})
	}
	for _, n := range []string{"db-1", "tfacc-none"} {
		p := newDomainProto(t, handMade(t))
		if _, e := p.importID(n); e == "" {
			t.Errorf("import of %s was not refused", n)
		}
	}
}

// A domain another state adopted is taken over by an import here: the apply writes this
// state's owner, and the other state's next plan refuses it.
func TestDomain_importTakesOver(t *testing.T) {
	t.Parallel()
	b := handMade(t)
	p := newDomainProto(t, b)
	first, e := p.importIdentity("", "tfacc-a")
	if e != "" {
		t.Fatal(e)
	}
	first, _ = p.read(first)
	config := domainConfig(map[string]tftypes.Value{"name": stringValue("tfacc-a")})
	pl := p.plan(first, config)
	first, e = p.apply(first, pl, config)
	if e != "" {
		t.Fatal(e)
	}
	firstOwner := b.Domains["tfacc-a"].Adoption.Owner

	second, e := p.importID("default/tfacc-a")
	if e != "" {
		t.Fatal(e)
	}
	second, _ = p.read(second)
	if p.model(second.state).Adopted.ValueBool() {
		t.Fatal("an import reads the domain as adopted by the importing state before its apply")
	}
	pl = p.plan(second, config)
	if e := diagsErr(pl.diags); e != "" {
		t.Fatalf("plan of the taking-over import: %s", e)
	}
	if _, e := p.apply(second, pl, config); e != "" {
		t.Fatal(e)
	}
	if owner := b.Domains["tfacc-a"].Adoption.Owner; owner == firstOwner || owner == "" {
		t.Fatalf("owner after the takeover %q, before %q", owner, firstOwner)
	}
	first, _ = p.read(first)
	if p.model(first.state).Adopted.ValueBool() {
		t.Error("the first state still reads the domain as its own")
	}
	if pl := p.plan(first, config); diagsErr(pl.diags) == "" || !strings.Contains(diagsErr(pl.diags), "another Terraform state") {
		t.Errorf("the first state's plan after the takeover: want the refusal, got %v", pl.diags)
	}
}

// running and description change live; a guest that ignores the shutdown request is not
// powered off: the apply fails, saying so.
func TestDomain_liveChanges(t *testing.T) {
	t.Parallel()
	b := handMade(t)
	p := newDomainProto(t, b)
	obj, e := p.importID("tfacc-a")
	if e != "" {
		t.Fatal(e)
	}
	obj, _ = p.read(obj)
	config := domainConfig(map[string]tftypes.Value{"name": stringValue("tfacc-a"), "running": tftypes.NewValue(tftypes.Bool, true), "description": stringValue("web")})
	pl := p.plan(obj, config)
	if pl.replace != 0 {
		t.Fatal("a live change planned a replacement")
	}
	obj, e = p.apply(obj, pl, config)
	if e != "" {
		t.Fatal(e)
	}
	if d := b.Domains["tfacc-a"]; d.ID <= 0 || d.Spec.Description != "web" || d.Adoption == nil {
		t.Fatalf("after apply: id %d, description %q, adoption %+v", d.ID, d.Spec.Description, d.Adoption)
	}
	b.Domains["tfacc-a"].IgnoresACPI = true
	stop := domainConfig(map[string]tftypes.Value{"name": stringValue("tfacc-a"), "running": tftypes.NewValue(tftypes.Bool, false), "description": stringValue("web")})
	obj, _ = p.read(obj)
	if _, e := p.apply(obj, p.plan(obj, stop), stop); !strings.Contains(e, "Domain did not shut down") {
		t.Fatalf("stop of a guest ignoring ACPI: want the refusal to power off, got %q", e)
	}
	if b.Domains["tfacc-a"].ID <= 0 || b.Calls["stop"] != 0 {
		t.Error("the domain was powered off")
	}
	b.Domains["tfacc-a"].IgnoresACPI = false
	obj, _ = p.read(obj)
	if _, e := p.apply(obj, p.plan(obj, stop), stop); e != "" || b.Domains["tfacc-a"].ID > 0 {
		t.Fatalf("graceful stop: %s, id %d", e, b.Domains["tfacc-a"].ID)
	}
}

// Reading one domain reads its definition only, not those of the domains whose names start
// with its name.
func TestLookDomain_readsOnlyTheOneNamed(t *testing.T) {
	t.Parallel()
	b := handMade(t)
	for _, n := range []string{"tfacc-a-1", "tfacc-a-2"} {
		b.AddUnmanaged(backend.DomainSpec{Name: n})
	}
	dom, rec, err := domain.LookDomain(context.Background(), b, "tfacc-a")
	if err != nil || dom == nil || dom.Name != "tfacc-a" || rec != nil {
		t.Fatalf("lookDomain = %+v, %+v, %v", dom, rec, err)
	}
	doms, err := b.ListDomains(context.Background(), "tfacc-a\x00", "tfacc-a")
	if err != nil || len(doms) != 1 {
		t.Fatalf("the listing lookDomain asks for gives %d domains (%v), want the one named", len(doms), err)
	}
}
