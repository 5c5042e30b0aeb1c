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
