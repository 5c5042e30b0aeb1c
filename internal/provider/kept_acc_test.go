package provider

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// Volumes kept by delete_rule = "NEVER" and reused by a later group of the same name (issue 43's
// wire chaos, trial 26): the destroy writes them into the group's kept record, the create takes
// them into its inventory, and members then move back and forth without leaving their source
// volumes behind. A member holding a volume the group did not make (made by hand) is refused at
// plan when it would move, and the plan is clean once the drain is undone.

// keptConfig is moveConfig with the data disk preserved under delete_rule = "NEVER".
func keptConfig(name, policy string) string {
	return strings.Replace(moveConfig(name, false, policy), `"ON_PERMANENT_INSTANCE_DELETION"`, `"NEVER"`, 1)
}

// keptLeft checks what a destroy of the group left on the hosts: exactly the members' data
// volumes, each once and with its bytes, and no member.
func keptLeft(t *testing.T, name string, sums dataSums) resource.TestCheckFunc {
	return func(*terraform.State) error {
		s, err := readSpread(context.Background(), testConns(t, testHostNames()...), name)
		if err != nil {
			return err
		}
		var vols []string
		for h, vs := range s.vols {
			for _, v := range vs {
				vols = append(vols, h+":"+v.Name)
			}
			if len(s.doms[h]) > 0 {
				return fmt.Errorf("host %s still has members %v", h, s.doms[h])
			}
		}
		if len(vols) != moveMembers {
			return fmt.Errorf("left %v, want the %d data volumes alone", vols, moveMembers)
		}
		return sums.same(t, name)(nil)
	}
}

// cleanKept is CheckDestroy for a group whose NEVER volumes stay: they and the kept record are
// checked, deleted by the test, and then nothing of the group may be left.
func cleanKept(t *testing.T, name string) func(*terraform.State) error {
	return func(s *terraform.State) error {
		found := false
		for _, h := range testHostNames() {
			b := hostConn(t, h)
			vols, err := b.ListVolumes(context.Background(), harnessPool(h), name+"-")
			if err != nil {
				return err
			}
			for _, v := range vols {
				if !strings.HasSuffix(v.Name, "-data.qcow2") {
					return fmt.Errorf("host %s keeps %s after the destroy: only NEVER data volumes stay", h, v.Name)
				}
				if err := b.DeleteVolume(context.Background(), harnessPool(h), v.Name); err != nil {
					return err
				}
			}
			recs, err := b.GroupRecordNames(name)
			if err != nil {
				return err
			}
			if slices.Contains(recs, engine.KeptRecordName(name)) {
				found = true
				if err := b.DeleteGroupRecord(context.Background(), harnessPool(h), engine.KeptRecordName(name)); err != nil {
					return err
				}
			}
		}
		if !found {
			return fmt.Errorf("no host has the kept record %s of the NEVER volumes", engine.KeptRecordName(name))
		}
		return checkNothingLeftOnHosts(t, name)(s)
	}
}

// TestAccMove_reusedNeverDisksMoveBackAndForth: 4 stopped members over h2 and default with NEVER
// data disks of random bytes; the group is destroyed (the volumes stay) and made again (it reuses
// them); drain default moves every member to h2, drain h2 moves them all back; the data bytes are
// the same throughout, no volume is left on the host a member left, and each next plan is empty.
func TestAccMove_reusedNeverDisksMoveBackAndForth(t *testing.T) {
	hostsTest(t)
	name := testPrefix + "keep-mv"
	hosts := `    hosts = ["h2", "default"]`
	m := memberNames(name)
	sums := dataSums{}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             cleanKept(t, name),
		Steps: []resource.TestStep{
			{
				Config: keptConfig(name, hosts),
				Check:  onHosts(t, name, map[string][]string{"h2": {m[0], m[2]}, "default": {m[1], m[3]}, "h3": nil}),
			},
			{
				// The group and its policy go; the NEVER data volumes stay.
				PreConfig: func() { sums.write(t, name) },
				Config:    hostsProvider(),
				Check:     keptLeft(t, name, sums),
			},
			{
				Config: keptConfig(name, hosts),
				Check: resource.ComposeTestCheckFunc(
					onHosts(t, name, map[string][]string{"h2": {m[0], m[2]}, "default": {m[1], m[3]}}),
					checkSpread(t, name, map[string]int{"h2": 2, "default": 2}),
					sums.same(t, name),
				),
			},
			{
				Config: keptConfig(name, hosts+"\n    drain = [\"default\"]"),
				Check: resource.ComposeTestCheckFunc(
					onHosts(t, name, map[string][]string{"h2": m, "default": nil}),
					checkSpread(t, name, map[string]int{"h2": 4}),
					sums.same(t, name),
				),
			},
			{
				Config: keptConfig(name, hosts+"\n    drain = [\"h2\"]"),
				Check: resource.ComposeTestCheckFunc(
					onHosts(t, name, map[string][]string{"default": m, "h2": nil}),
					checkSpread(t, name, map[string]int{"default": 4}),
					sums.same(t, name),
				),
			},
		},
	})
}

// TestAccMove_handMadeVolumeRefusedAtPlan: a member's data volume made by hand before the group
// (reused under the member's name, no kept record) is not the group's: draining its host is
// refused at plan, naming the member, the volume, the host and the ways out; undoing the drain
// makes the plan clean again, and the destroy leaves that volume alone.
func TestAccMove_handMadeVolumeRefusedAtPlan(t *testing.T) {
	hostsTest(t)
	name := testPrefix + "keep-hand"
	member := name + "-1"
	vol := member + "-data.qcow2"
	config := func(policy string) string {
		return hostsProvider() + groupConfig(name, 1, diskBlocks(8, "data"), fmt.Sprintf(`
  running = false
  distribution_policy {
%s
  }
`, policy))
	}
	stay := `    hosts = ["h2"]`
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(s *terraform.State) error {
			// The hand-made volume stays (makeVolume's cleanup deletes it); nothing else.
			vols, err := hostConn(t, testHostH2).ListVolumes(context.Background(), testHostPool, name+"-")
			if err != nil {
				return err
			}
			if len(vols) != 1 || vols[0].Name != vol {
				return fmt.Errorf("h2 keeps %v after the destroy, want %s alone", vols, vol)
			}
			if err := hostConn(t, testHostH2).DeleteVolume(context.Background(), testHostPool, vol); err != nil {
				return err
			}
			return checkNothingLeftOnHosts(t, name)(s)
		},
		Steps: []resource.TestStep{
			{
				PreConfig: func() { makeVolumeKept(t, testHostH2, vol) },
				Config:    config(stay),
				Check:     onHosts(t, name, map[string][]string{"h2": {member}, "default": nil}),
			},
			{
				Config: config(`    hosts = ["h2", "default"]` + "\n    drain = [\"h2\"]"),
				ExpectError: regexp.MustCompile(regexp.QuoteMeta(member) + `(.|\n)*cannot(.|\n)*move(.|\n)*from(.|\n)*host(.|\n)*h2(.|\n)*` + regexp.QuoteMeta(vol) +
					`(.|\n)*not(.|\n)*made(.|\n)*by(.|\n)*this(.|\n)*group`),
			},
			{
				Config: config(stay),
				Check:  onHosts(t, name, map[string][]string{"h2": {member}, "default": nil}),
			},
			{
				Config:   config(stay),
				PlanOnly: true,
			},
		},
	})
}

// makeVolumeKept makes an empty qcow2 volume of 16 MiB in host's pool, which the test deletes
// itself (CheckDestroy), as makeVolume does without its cleanup.
func makeVolumeKept(t *testing.T, host, name string) {
	t.Helper()
	created, err := hostConn(t, host).EnsureVolume(context.Background(), backend.VolumeSpec{Pool: harnessPool(host), Name: name, SizeMiB: 16})
	if err != nil || !created {
		t.Fatalf("make volume %s on %s: created %t, %v", name, host, created, err)
	}
}
