package store

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// v3Records are the values of version 3's generated golden records: a group that adopts
// domains by name and abandons a member, with the resource configuration import rebuilds it
// from, and a group whose members keep a destroyed per-instance config's state.
func v3Records(t *testing.T) map[string]engine.GroupRecord {
	t.Helper()
	spec, err := json.Marshal(ResourceSpec{Base: "gold-adopt", Pool: "virt", TargetSize: 2, Running: true,
		Template:      ResourceTemplate{DomainType: "qemu", VCPU: 1, MemoryMiB: 128, Disks: []Disk{}, NICs: []NIC{}},
		AdoptExisting: true, Abandon: []string{"gold-adopt-3"}})
	if err != nil {
		t.Fatal(err)
	}
	retained := v2Records(t)["group-tcp.json"]
	retained.Retained = []string{"gold-tcp-1", "gold-tcp-3"}
	return map[string]engine.GroupRecord{
		"group-retained-config-state.json": retained,
		"group-adopt-abandon.json": {GroupState: engine.GroupState{
			Group: engine.Group{Name: "gold-adopt", Base: "gold-adopt", TargetSize: 2, Running: true,
				Template: engine.Template{Shape: engine.Shape{DomainType: "qemu", VCPU: 1, MemoryMiB: 128}, BootDisk: engine.BootDisk{SizeMiB: 64}}.Canonical(),
				Policy:   engine.DefaultUpdatePolicy(), AdoptExisting: true, Abandon: []string{"gold-adopt-3"}},
			Pool: "virt", Resource: string(spec), Placed: true,
			Placement: map[string]string{"gold-adopt-1": "default", "gold-adopt-2": "default"},
		}},
	}
}

// TestGolden_v3Generated: version 3's generated golden records are what this build writes for
// their values, and read back as those values (checkGenerated).
func TestGolden_v3Generated(t *testing.T) {
	t.Parallel()
	checkGenerated(t, "v3", v3Records(t))
}

// TestGolden_olderRecordsReadWithoutV3Fields: a version 1 or 2 record adopts nothing by name and
// abandons nothing.
func TestGolden_olderRecordsReadWithoutV3Fields(t *testing.T) {
	t.Parallel()
	for _, path := range append(goldenFiles(t, "group-*.secret.xml"), goldenFiles(t, "group-*.json")...) {
		if strings.Contains(path, "testdata/v3/") || strings.Contains(path, "testdata/v7/") {
			// Records of version 3 and later may have them.
			continue
		}
		rec := readGroup(t, path)
		if rec.Group.AdoptExisting || len(rec.Group.Abandon) > 0 {
			t.Errorf("%s: read with version 3 values: adopt_existing %v, abandon %v", path, rec.Group.AdoptExisting, rec.Group.Abandon)
		}
	}
}
