package provider

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
)

// The acceptance test of data-safe upgrades (issue 46): update_policy.snapshot with on_failure =
// "ROLLBACK". The tiny guest counts its boots on its data disk (TINYGUEST-COUNTER in the first
// sector, written at every boot, the broken image's included), which makes the disk's history
// readable: a rollback that puts the data back from the snapshot leaves the counter one boot past
// the snapshot (the old image booting again), one without it two (the new image's boot too).

// bootCounter reads the tiny guest's boot counter from the member's data disk, while it runs (-U).
func bootCounter(t *testing.T, member string) (int, error) {
	t.Helper()
	raw := filepath.Join(t.TempDir(), member+"-data.raw")
	if out, err := exec.Command("qemu-img", "convert", "-U", "-f", "qcow2", "-O", "raw", volumePath(t, member+"-data.qcow2"), raw).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("qemu-img convert of %s's data disk: %v: %s", member, err, out)
	}
	b, err := os.ReadFile(raw)
	if err != nil {
		return 0, err
	}
	line := strings.TrimRight(string(b[:min(len(b), 512)]), "\x00")
	n, ok := strings.CutPrefix(strings.SplitN(line, "\n", 2)[0], "TINYGUEST-COUNTER ")
	if !ok {
		return 0, fmt.Errorf("%s's data disk has no boot counter: %q", member, line)
	}
	return strconv.Atoi(n)
}

// snapshotTags lists the qcow2 snapshots inside the member's data disk (qemu-img snapshot -l).
func snapshotTags(t *testing.T, member string) ([]string, error) {
	out, err := exec.Command("qemu-img", "snapshot", "-U", "-l", volumePath(t, member+"-data.qcow2")).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("qemu-img snapshot -l of %s's data disk: %v: %s", member, err, out)
	}
	var tags []string
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 1 && strings.HasPrefix(f[1], "virt-") {
			tags = append(tags, f[1])
		}
	}
	return tags, nil
}

// TestAccStatefulGroup_rollbackRestoresData: 4 running tiny guests with their data disks preserved,
// snapshots on, replaced onto the image whose service never starts. The first member replaced is
// not ready: the rollback stops it, puts its data disk back to the snapshot taken after its stop,
// and starts it on the good image. Its data disk holds the pattern written before, and its boot
// counter is the snapshot's plus the good image's boot (2), not plus the broken image's too (3);
// the snapshot is still in the volume (kept for the retention). The other three members were never
// touched: same domain, counter 1, no snapshot.
func TestAccStatefulGroup_rollbackRestoresData(t *testing.T) {
	name := testPrefix + "snaprb"
	n := []string{name + "-1", name + "-2", name + "-3", name + "-4"}
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	testAccPreCheck(t)
	broken := tinyGuestImage(t, testPrefix+"img-snaprb-broken.qcow2", "--broken")
	good := tinyGuestImage(t, testPrefix+"img-snaprb-good.qcow2")
	config := func(image string, running bool) string {
		return strings.Replace(readyConfig(name, image, "ROLLBACK", running), "    on_failure      = \"ROLLBACK\"\n",
			"    on_failure      = \"ROLLBACK\"\n    snapshot {\n      retention = \"1h\"\n    }\n", 1)
	}
	before := memberState{}
	t.Parallel()
	slot := takeSlot(t, true)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{Config: config(good, false)},
			{
				PreConfig: func() {
					for i, m := range n {
						markData(t, m, byte(0x41+i))
					}
				},
				Config: config(good, true),
				Check: resource.ComposeTestCheckFunc(before.record(t, name), checkMembers(t, name, "RUNNING", n...), func(*terraform.State) error {
					for _, m := range n {
						if c, err := bootCounter(t, m); err != nil || c != 1 {
							return fmt.Errorf("%s: boot counter %d (%v), want 1", m, c, err)
						}
					}
					return nil
				}),
			},
			{
				PreConfig:   slot.idle,
				Config:      config(broken, true),
				ExpectError: regexp.MustCompile(`(?s)was\s+rolled\s+back.*Rolled\s+back:\s+` + n[0] + `\s+to\s+template\s+revision`),
			},
			{
				PreConfig: func() {
					slot.resume()
					if err := checkBacking(t, good, n...)(nil); err != nil {
						t.Fatal(err)
					}
					now := members(t, name)
					for i, m := range n {
						if err := checkDataMark(t, m, byte(0x41+i)); err != nil {
							t.Fatal(err)
						}
						c, err := bootCounter(t, m)
						if err != nil {
							t.Fatal(err)
						}
						tags, err := snapshotTags(t, m)
						if err != nil {
							t.Fatal(err)
						}
						if i == 0 {
							if c != 2 {
								t.Fatalf("%s: boot counter %d after the rollback, want 2 (1 at the snapshot, then the good image's boot; 3 means the broken image's boot was kept)", m, c)
							}
							if len(tags) != 1 {
								t.Fatalf("%s: snapshots %v in its data disk, want the rollout's one", m, tags)
							}
							continue
						}
						if got := [2]string{now[m].UUID, fmt.Sprint(now[m].ID)}; got != before[m] || c != 1 || len(tags) != 0 {
							t.Fatalf("%s was touched by the failed rollout: domain %v (was %v), boot counter %d, snapshots %v", m, got, before[m], c, tags)
						}
					}
				},
				// The broken image is still wanted: the state kept the good template.
				Config:             config(broken, true),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
		},
	})
}

// snapshotConfig is a group of 2 tiny guests with their data disks preserved, their service as
// the health check, snapshots kept for retention, and the data source.
func snapshotConfig(name, image, retention string, running bool) string {
	extra := fmt.Sprintf(`  running = %t
  update_policy {
    ready_timeout = "5m"
    on_failure    = "ROLLBACK"
    snapshot {
      retention = %q
    }
  }
`, running, retention)
	return strings.Replace(groupConfig(name, 2, serviceCheckedTemplate(image, ""), extra), "memory_mib  = 64\n", "", 1) + dataPolicyAndInstances
}

// TestAccStatefulGroup_snapshotsKeptThenDeleted: a rollout that succeeds onto another image
// snapshots each member's data disk (one qcow2 snapshot in each, shown by the data source with
// the revision it was taken on and until when it is kept); the data keeps its bytes; the plan
// after it is empty. Made shorter, the retention deletes them at the next apply, live: the
// members keep their domains (same id), and their data disks hold no snapshot.
func TestAccStatefulGroup_snapshotsKeptThenDeleted(t *testing.T) {
	name := testPrefix + "snapkeep"
	n := []string{name + "-1", name + "-2"}
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	testAccPreCheck(t)
	imageA := tinyGuestImage(t, testPrefix+"img-snapkeep-a.qcow2")
	imageB := tinyGuestImage(t, testPrefix+"img-snapkeep-b.qcow2")
	ids := memberState{}
	var revision string
	t.Parallel()
	takeSlot(t, false)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{Config: snapshotConfig(name, imageA, "1h", false)},
			{
				PreConfig: func() {
					for i, m := range n {
						markData(t, m, byte(0x51+i))
					}
				},
				Config: snapshotConfig(name, imageA, "1h", true),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(dsAddr, dsInstance(0, "snapshots"), knownvalue.ListSizeExact(0)),
				},
				Check: func(s *terraform.State) error {
					revision = s.RootModule().Resources[dsAddr].Primary.Attributes["instances.0.template_revision"]
					return nil
				},
			},
			{
				Config: snapshotConfig(name, imageB, "1h", true),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(dsAddr, dsInstance(0, "snapshots"), knownvalue.ListSizeExact(1)),
					statecheck.ExpectKnownValue(dsAddr, dsInstance(1, "snapshots"), knownvalue.ListSizeExact(1)),
					statecheck.ExpectKnownValue(dsAddr, dsInstance(0, "snapshots").AtSliceIndex(0).AtMapKey("device_name"), knownvalue.StringExact("data")),
					statecheck.ExpectKnownValue(dsAddr, dsInstance(0, "snapshots").AtSliceIndex(0).AtMapKey("volume"), knownvalue.StringExact(n[0]+"-data.qcow2")),
					statecheck.ExpectKnownValue(dsAddr, dsInstance(0, "snapshots").AtSliceIndex(0).AtMapKey("kept_until"), knownvalue.StringRegexp(regexp.MustCompile(`^\d{4}-\d\d-\d\dT`))),
				},
				Check: resource.ComposeTestCheckFunc(checkBacking(t, imageB, n...), ids.record(t, name), func(s *terraform.State) error {
					attrs := s.RootModule().Resources[dsAddr].Primary.Attributes
					for i, m := range n {
						if got := attrs[fmt.Sprintf("instances.%d.snapshots.0.template_revision", i)]; got != revision || revision == "" {
							return fmt.Errorf("%s: snapshot taken on revision %q, want %q (the one before the rollout)", m, got, revision)
						}
						tags, err := snapshotTags(t, m)
						if err != nil {
							return err
						}
						if want := attrs[fmt.Sprintf("instances.%d.snapshots.0.tag", i)]; len(tags) != 1 || tags[0] != want {
							return fmt.Errorf("%s: snapshots %v in its data disk, want [%s]", m, tags, want)
						}
						if err := checkDataMark(t, m, byte(0x51+i)); err != nil {
							return err
						}
					}
					return nil
				}),
			},
			{
				Config: snapshotConfig(name, imageB, "0s", true),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
					expectMemberPlan(groupAddr, 0, "planned_action",
						knownvalue.StringRegexp(regexp.MustCompile(`^NONE: snapshots past their retention deleted \(`+n[0]+`-data\.qcow2@virt-`))),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(dsAddr, dsInstance(0, "snapshots"), knownvalue.ListSizeExact(0)),
					statecheck.ExpectKnownValue(dsAddr, dsInstance(1, "snapshots"), knownvalue.ListSizeExact(0)),
				},
				Check: func(*terraform.State) error {
					now := members(t, name)
					for i, m := range n {
						if got := [2]string{now[m].UUID, fmt.Sprint(now[m].ID)}; got != ids[m] || now[m].Status != "RUNNING" {
							return fmt.Errorf("%s was restarted to delete its snapshot: %v (%s), was %v", m, got, now[m].Status, ids[m])
						}
						if tags, err := snapshotTags(t, m); err != nil || len(tags) != 0 {
							return fmt.Errorf("%s: snapshots %v left in its data disk (%v)", m, tags, err)
						}
						if err := checkDataMark(t, m, byte(0x51+i)); err != nil {
							return err
						}
					}
					return nil
				},
			},
		},
	})
}

// TestAccCLI_restoreAction: a group of 2 stopped members (SeaBIOS, nothing writes their disks)
// with their data disks preserved and snapshots on. A rollout to 2 vCPUs restarts both, each
// snapshotted with the bytes it has then (pattern 0x61, 0x62). Then new bytes are written into both
// (0x71, 0x72), and `terraform apply -invoke` of virt_instance_restore on member 1 puts its disk back
// to the snapshot's bytes, exactly (sha256 of the whole content), under the same UUID; member 2
// keeps its new bytes. The plan after the action is empty; a restore of a member whose snapshot
// was deleted by hand (qemu-img snapshot -d) fails naming the snapshot, and leaves its bytes.
func TestAccCLI_restoreAction(t *testing.T) {
	name := testPrefix + "restore"
	n1, n2 := name+"-1", name+"-2"
	d1, d2 := n1+"-data.qcow2", n2+"-data.qcow2"
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	accParallel(t)
	testAccPreCheck(t)
	c := newCLIRun(t, actionTerraform(t))
	restore := func(label, member string) string {
		return fmt.Sprintf("\naction \"virt_instance_restore\" %q {\n  config {\n    group     = virt_stateful_group.test.name\n    instances = [%q]\n  }\n}\n", label, member)
	}
	config := func(vcpu int) string {
		return groupConfig(name, 2, fmt.Sprintf("    vcpu = %d\n", vcpu)+diskBlocks(8, "data"), "  running = false\n  update_policy {\n    snapshot {}\n  }\n") +
			dataPolicy + restore("one", n1) + restore("two", n2)
	}
	c.write(config(1))
	c.destroyAtCleanup(name)
	c.must("apply", "-auto-approve", "-no-color")
	before, after := checksums{}, checksums{}
	before.write(t, d1, 0x61)
	before.write(t, d2, 0x62)
	c.write(config(2))
	c.must("apply", "-auto-approve", "-no-color")
	c.emptyPlan("the rollout")
	for _, m := range []string{n1, n2} {
		if tags, err := snapshotTags(t, m); err != nil || len(tags) != 1 {
			t.Fatalf("%s: snapshots %v after the rollout (%v), want one", m, tags, err)
		}
	}
	after.write(t, d1, 0x71)
	after.write(t, d2, 0x72)
	uuids := domainUUIDs{}
	if err := uuids.record(t, name)(nil); err != nil {
		t.Fatal(err)
	}
	out := c.must("apply", "-auto-approve", "-no-color", "-invoke=action.virt_instance_restore.one")
	t.Logf("terraform apply -invoke=action.virt_instance_restore.one:\n%s", out)
	if err := resource.ComposeTestCheckFunc(before.same(t, d1), after.same(t, d2), uuids.check(t, name, n1, true), uuids.check(t, name, n2, true))(nil); err != nil {
		t.Fatal(err)
	}
	c.emptyPlan("the restore")
	// A snapshot deleted by hand: the restore fails, naming it, and the disk keeps its bytes.
	tags, err := snapshotTags(t, n2)
	if err != nil || len(tags) != 1 {
		t.Fatalf("%s: snapshots %v (%v)", n2, tags, err)
	}
	if out, err := exec.Command("qemu-img", "snapshot", "-d", tags[0], volumePath(t, d2)).CombinedOutput(); err != nil {
		t.Fatalf("qemu-img snapshot -d: %v: %s", err, out)
	}
	out, err = c.run("apply", "-auto-approve", "-no-color", "-invoke=action.virt_instance_restore.two")
	t.Logf("terraform apply -invoke=action.virt_instance_restore.two, its snapshot deleted by hand:\n%s", out)
	if err == nil || !strings.Contains(strings.Join(strings.Fields(out), " "), tags[0]) {
		t.Fatalf("the restore of a member whose snapshot is gone did not fail naming %s (%v):\n%s", tags[0], err, out)
	}
	if err := after.same(t, d2)(nil); err != nil {
		t.Fatal(err)
	}
}
