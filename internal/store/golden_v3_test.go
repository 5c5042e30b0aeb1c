package store

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// v3Records are the values of version 3's generated golden records: a group that adopts
// domains by name and abandons a member, and the resource configuration import rebuilds it from.
func v3Records(t *testing.T) map[string]engine.GroupRecord {
	t.Helper()
	spec, err := json.Marshal(ResourceSpec{Base: "gold-adopt", Pool: "virt", TargetSize: 2, Running: true,
		Template:      ResourceTemplate{DomainType: "qemu", VCPU: 1, MemoryMiB: 128, Disks: []Disk{}, NICs: []NIC{}},
		AdoptExisting: true, Abandon: []string{"gold-adopt-3"}})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]engine.GroupRecord{
		"group-adopt-abandon.json": {GroupState: engine.GroupState{
			Group: engine.Group{Name: "gold-adopt", Base: "gold-adopt", TargetSize: 2, Running: true,
				Template: engine.Template{DomainType: "qemu", VCPU: 1, MemoryMiB: 128, BootDisk: engine.BootDisk{SizeMiB: 64}}.Canonical(),
				Policy:   engine.DefaultUpdatePolicy(), AdoptExisting: true, Abandon: []string{"gold-adopt-3"}},
			Pool: "virt", Resource: string(spec), Placed: true,
			Placement: map[string]string{"gold-adopt-1": "default", "gold-adopt-2": "default"},
		}},
	}
}

// TestGolden_v3Generated: version 3's generated golden records are what this build writes for
// their values, and read back as those values. STORE_GOLDEN=write adds a file that is missing
// (never rewrites one: a golden file is what a release wrote).
func TestGolden_v3Generated(t *testing.T) {
	t.Parallel()
	for name, rec := range v3Records(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join("testdata", "v3", "generated", name)
			enc, err := EncodeGroup(rec)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(path)
			if os.IsNotExist(err) && os.Getenv("STORE_GOLDEN") == "write" {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, append(enc, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(strings.TrimSuffix(string(want), "\n"), string(enc)); diff != "" {
				t.Fatalf("this build writes the record differently (-golden +written):\n%s", diff)
			}
			got, err := DecodeGroup(want)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(rec, got, equateEmpty); diff != "" {
				t.Fatalf("read back differently (-values +read):\n%s", diff)
			}
		})
	}
}

// TestGolden_olderRecordsReadWithoutV3Fields: a version 1 or 2 record adopts nothing by name and
// abandons nothing.
func TestGolden_olderRecordsReadWithoutV3Fields(t *testing.T) {
	t.Parallel()
	for _, path := range append(goldenFiles(t, "group-*.secret.xml"), goldenFiles(t, "group-*.json")...) {
		if strings.Contains(path, "testdata/v3/") {
			continue
		}
		rec := readGroup(t, path)
		if rec.Group.AdoptExisting || len(rec.Group.Abandon) > 0 {
			t.Errorf("%s: read with version 3 values: adopt_existing %v, abandon %v", path, rec.Group.AdoptExisting, rec.Group.Abandon)
		}
	}
}
