package reconcile

import (
	"context"
	"strings"
	"testing"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// TestApply_adoptExistingTakesHandMadeDomainsByName: with adopt_existing, domains made by hand
// under the members' names become those members without being redefined, started or stopped,
// their disks untouched; the next plan has nothing to do.
func TestApply_adoptExistingTakesHandMadeDomainsByName(t *testing.T) {
	t.Parallel()
	b := fake.New()
	for _, n := range []string{"db-1", "db-2"} {
		b.Volumes["p/"+n+".img"] = &fake.Volume{Data: n + " bytes"}
		b.AddUnmanaged(backend.DomainSpec{Name: n, Shape: engine.Shape{DomainType: "qemu", VCPU: 2, MemoryMiB: 256}, Disks: []backend.Disk{{DeviceName: "sda", Pool: "p", Volume: n + ".img"}}})
	}
	b.Domains["db-2"].ID = 7 // running
	uuids := map[string]string{"db-1": b.Domains["db-1"].UUID, "db-2": b.Domains["db-2"].UUID}
	s := spec(2)
	s.Group.AdoptExisting = true
	logged := len(b.Log)
	apply(t, b, s)
	for _, call := range b.Log[logged:] {
		if op, obj, _ := strings.Cut(call, " "); (obj == "db-1" || obj == "db-2") && op != "set-record" {
			t.Fatalf("the adoption ran %q: only the member records are written", call)
		}
	}
	for n, uuid := range uuids {
		d := b.Domains[n]
		if d.UUID != uuid || d.Unmanaged || d.Spec.Record.Group != "db" || b.Volumes["p/"+n+".img"].Data != n+" bytes" {
			t.Fatalf("%s after the adoption: %+v", n, d)
		}
	}
	if b.Domains["db-1"].ID != -1 || b.Domains["db-2"].ID != 7 {
		t.Fatal("the adoption changed a domain's power")
	}
	if p, _, err := New(b).Preview(context.Background(), s); err != nil || !p.Idle() {
		t.Fatalf("the plan after the adoption: %+v %v", p, err)
	}
}

// TestApply_abandonLeavesTheDomainAsItIs: an abandoned member loses its record and nothing else,
// and the group's destroy leaves its domain and volumes.
func TestApply_abandonLeavesTheDomainAsItIs(t *testing.T) {
	t.Parallel()
	b := fake.New()
	s := spec(2)
	apply(t, b, s)
	before := *b.Domains["db-2"]
	s.Group.TargetSize, s.Group.Abandon = 1, []string{"db-2"}
	logged := len(b.Log)
	apply(t, b, s)
	for _, call := range b.Log[logged:] {
		if strings.HasSuffix(call, " db-2") && call != "clear-record db-2" {
			t.Fatalf("the abandonment ran %q: only the member record is removed", call)
		}
	}
	after := b.Domains["db-2"]
	if after == nil || !after.Unmanaged || after.UUID != before.UUID || after.ID != before.ID {
		t.Fatalf("abandoned db-2: before %+v, after %+v", before, after)
	}
	if p, _, err := New(b).Preview(context.Background(), s); err != nil || !p.Idle() || len(p.Final) != 1 {
		t.Fatalf("the plan after the abandonment: %+v %v", p, err)
	}
	if err := New(b).Destroy(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Domains["db-1"]; ok {
		t.Fatal("the destroy left db-1")
	}
	if _, ok := b.Domains["db-2"]; !ok {
		t.Fatal("the destroy deleted the abandoned db-2")
	}
	for _, v := range []string{engine.VolumeName("db-2", engine.BootDeviceName), engine.VolumeName("db-2", "data")} {
		if _, ok := b.Volumes["p/"+v]; !ok {
			t.Fatalf("the destroy deleted the abandoned member's volume %s", v)
		}
	}
}

// TestApply_abandonedNameGivenBack: a name taken off abandon is given back to the group. Its
// domain, now one no provider created, comes back as an adopted member (same UUID) with
// adopt_existing; without it, the plan would create over it, which the provider refuses at plan
// (the names-taken error).
func TestApply_abandonedNameGivenBack(t *testing.T) {
	t.Parallel()
	b := fake.New()
	s := spec(2)
	apply(t, b, s)
	uuid := b.Domains["db-2"].UUID
	s.Group.TargetSize, s.Group.Abandon = 1, []string{"db-2"}
	apply(t, b, s)
	s.Group.TargetSize, s.Group.Abandon = 2, nil
	p, o, err := New(b).Preview(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	// Its volumes went with it when it was abandoned: they are not the group's to write over,
	// so the plan does not create over them either.
	if held, _ := o.TakenNames("db", []string{"db-2"}); len(p.Create) != 0 || len(p.Blocked) != 1 || !strings.Contains(p.Blocked[0].String(), "not made by this group") || len(held) != 1 {
		t.Fatalf("without adopt_existing: creates %+v, blocked %v, names held %v", p.Create, p.Blocked, held)
	}
	s.Group.AdoptExisting = true
	apply(t, b, s)
	if d := b.Domains["db-2"]; d.UUID != uuid || d.Unmanaged || d.Spec.Record.Group != "db" {
		t.Fatalf("db-2 given back: %+v", d)
	}
	if p, _, err := New(b).Preview(context.Background(), s); err != nil || !p.Idle() {
		t.Fatalf("the plan after the give-back: %+v %v", p, err)
	}
}
