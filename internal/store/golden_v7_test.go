package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// v7Records are the values of version 7's generated golden records: a group whose record keeps
// an inventory on two hosts, with a domain, its volumes, NVRAM and seed confirmed and an intent
// of a volume a run was about to make.
func v7Records(t *testing.T) map[string]engine.GroupRecord {
	t.Helper()
	rec := v3Records(t)["group-adopt-abandon.json"]
	rec.Placement = map[string]string{"gold-adopt-1": "default", "gold-adopt-2": "h2"}
	rec.Inventory = engine.Inventory{Kept: true, Items: []engine.Made{
		{Kind: engine.MadeDomain, Host: "default", Name: "gold-adopt-1", UUID: "6f1c0a52-1d1e-4c57-9a1b-0d6f3f0e0a01", Confirmed: true},
		{Kind: engine.MadeVolume, Host: "default", Name: "gold-adopt-1-boot.qcow2", Confirmed: true},
		{Kind: engine.MadeSeed, Host: "default", Name: "gold-adopt-1-cidata.iso", Confirmed: true},
		{Kind: engine.MadeNVRAM, Host: "default", Name: "gold-adopt-1-nvram.fd", Confirmed: true},
		{Kind: engine.MadeDomain, Host: "h2", Name: "gold-adopt-2"},
		{Kind: engine.MadeVolume, Host: "h2", Name: "gold-adopt-2-boot.qcow2"},
	}}
	empty := v2Records(t)["group-tcp.json"]
	empty.Inventory = engine.Inventory{Kept: true}
	return map[string]engine.GroupRecord{"group-inventory.json": rec, "group-empty-inventory.json": empty}
}

// TestGolden_v7Generated: version 7's generated golden records are what this build writes for
// their values, and read back as those values (checkGenerated).
func TestGolden_v7Generated(t *testing.T) {
	t.Parallel()
	checkGenerated(t, "v7", v7Records(t))
}

// TestGolden_olderRecordsKeepNoInventory: a record of version 1 to 6 reads as one that keeps no
// inventory (it gains one once, from what it proves: TestGolden_olderRecordsGainTheirInventory).
func TestGolden_olderRecordsKeepNoInventory(t *testing.T) {
	t.Parallel()
	for _, path := range append(goldenFiles(t, "group-*.secret.xml"), goldenFiles(t, "group-*.json")...) {
		if strings.Contains(path, "testdata/v7/") {
			continue
		}
		if rec := readGroup(t, path); rec.Inventory.Kept || len(rec.Inventory.Items) > 0 {
			t.Errorf("%s: read with an inventory %+v", path, rec.Inventory)
		}
	}
}

// TestGolden_olderRecordsGainTheirInventory: records an earlier release wrote on real hosts
// (v1/captured, stage 2: tfgold-one scaled in from 3 to 2, its member 3's NEVER data disk kept;
// tfgold-multi on h2, default and h3) gain the inventory that testdata/v7/upgraded holds, from
// the member records of the domains they placed: each member's domain, the volumes of its own
// names that the group made from its template, and its seed. Hand-made volumes of every kind
// under the group's names (and the volume the scale-in kept) are not adopted. The upgraded
// record reads back as it was written.
func TestGolden_olderRecordsGainTheirInventory(t *testing.T) {
	t.Parallel()
	dir := "testdata/v1/captured/2-scaled-in-metadata"
	cases := map[string]struct {
		record  string
		members []string // member-<name>-<host>.xml
	}{
		"group-tfgold-one.json":   {"group-tfgold-one-default-gen0000000014.secret.xml", []string{"tfgold-one-1-default", "tfgold-one-2-default"}},
		"group-tfgold-multi.json": {"group-tfgold-multi-h2-gen0000000007.secret.xml", []string{"tfgold-multi-1-h2", "tfgold-multi-2-default", "tfgold-multi-3-h3"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rec := readGroup(t, filepath.Join(dir, tc.record))
			base := rec.Group.Base
			volumes := map[string][]string{}
			var observed []engine.Observed
			for i, m := range tc.members {
				member := readMember(t, filepath.Join(dir, "member-"+m+".xml"))
				host := m[strings.LastIndexByte(m, '-')+1:]
				o := engine.Observed{Name: engine.InstanceName(member.Group, member.Index), Index: member.Index, Host: host,
					UUID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i+1), Instance: member.Instance, Status: engine.StatusRunning,
					Attached: member.Instance.Current.Disks}
				observed = append(observed, o)
				for _, d := range member.Instance.Current.Disks {
					volumes[host] = append(volumes[host], d.Source)
				}
				volumes[host] = append(volumes[host], engine.SeedVolumeName(o.Name))
			}
			// Made by hand under the group's names, on every host: none is the group's.
			for _, host := range []string{"default", "h2", "h3"} {
				volumes[host] = append(volumes[host], base+"-5-boot.qcow2", base+"-7-nvram.fd", base+"-3-data.qcow2", base+"-9-cidata.iso", base+"-2-boot.staging.qcow2")
			}
			s := rec.GroupState.Inventoried(observed, engine.Env{HostVolumes: volumes})
			for _, m := range s.Inventory.Items {
				if strings.Contains(m.Name, base+"-5-") || strings.Contains(m.Name, base+"-7-") || strings.Contains(m.Name, base+"-9-") || strings.Contains(m.Name, "staging") {
					t.Errorf("a hand-made volume is adopted: %+v", m)
				}
			}
			rec.GroupState = s
			rec.Listed = nil
			enc, err := EncodeGroup(rec)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "v7", "upgraded", name)
			_, err = os.Stat(path)
			if os.IsNotExist(err) && os.Getenv("STORE_GOLDEN") == "write" {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				var pretty strings.Builder
				enc2, _ := json.MarshalIndent(json.RawMessage(enc), "", "  ")
				pretty.Write(enc2)
				if err := os.WriteFile(path, []byte(pretty.String()+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			body, _ := goldenGroupBody(t, path)
			var compact bytes.Buffer
			if err := json.Compact(&compact, enc); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(body), compact.String()); diff != "" {
				t.Fatalf("the upgraded record differs (-golden +written):\n%s", diff)
			}
			back, err := DecodeGroup(body)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(s.Inventory, back.Inventory); diff != "" {
				t.Fatalf("the upgraded inventory reads back differently (-written +read):\n%s", diff)
			}
		})
	}
}
