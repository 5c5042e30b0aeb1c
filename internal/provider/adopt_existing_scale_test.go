package provider

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// TestAccStatefulGroup_adoptExistingOnScaleOut: adopt_existing on a group that exists already. A
// VM made by hand under the group's next name is adopted when target_size reaches it (same UUID,
// running, disk bytes kept), where the plan used to fail with "Member names taken by existing
// domains"; a member abandoned and then given back (its name out of abandon, target_size up
// again) comes back adopted with its domain and volumes as they are, where the apply used to
// refuse its volumes as ones "the group did not make". Each next plan is empty. The destroy
// deletes the adopted domains and keeps their disks, bytes intact.
func TestAccStatefulGroup_adoptExistingOnScaleOut(t *testing.T) {
	name := testPrefix + "hfix-ad"
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	adopt := "  adopt_existing = true\n"
	stopped := "  running = false\n"
	body := diskBlocks(8, "data")
	gone := name + "-2"
	boot, data := engine.VolumeName(gone, engine.BootDeviceName), engine.VolumeName(gone, "data")
	sums := checksums{}
	var third *legacyDomain
	var uuid string
	t.Cleanup(func() {
		// Whatever a failed step left of the given-back member.
		ctx := context.Background()
		_ = testLibvirt(t).UndefineDomain(ctx, gone)
		for _, v := range []string{boot, data, engine.SeedVolumeName(gone)} {
			_ = testLibvirt(t).DeleteVolume(ctx, testPool(), v)
		}
	})
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(s *terraform.State) error {
			if doms, err := testLibvirt(t).ListDomains(context.Background(), third.name); err != nil || len(doms) > 0 {
				return fmt.Errorf("the adopted member %s was left behind (%v)", third.name, err)
			}
			if sum, _, err := volumeBytes(t, third.volume); err != nil || sum != third.sum {
				return fmt.Errorf("the adopted member's disk %s: checksum %s (%v), had %s", third.volume, sum, err, third.sum)
			}
			// The given-back member's volumes came with it: kept, bytes intact; nothing else stays.
			for _, v := range []string{boot, data} {
				if err := sums.same(t, v)(s); err != nil {
					return fmt.Errorf("after the group's destroy: %w", err)
				}
			}
			left := leftovers(t, name+"-")
			want := []string{"volume " + boot, "volume " + data}
			slices.Sort(left)
			if !slices.Equal(left, want) {
				return fmt.Errorf("after the destroy there are %s, want only the given-back member's %s", strings.Join(left, ", "), strings.Join(want, ", "))
			}
			for _, v := range []string{boot, data} {
				_ = testLibvirt(t).DeleteVolume(context.Background(), testPool(), v)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config: groupConfig(name, 2, body, stopped+adopt),
				Check: func(*terraform.State) error {
					uuid = members(t, name)[gone].UUID
					sums.write(t, boot, 0x5a)
					sums.write(t, data, 0x3c)
					return nil
				},
			},
			{
				// A VM made by hand under the next name: adopted by the scale-out.
				PreConfig: func() { third = createLegacyDomain(t, name+"-3", testPrefix+"ext-hfix-ad-3.img") },
				Config:    groupConfig(name, 3, body, stopped+adopt),
				Check: resource.ComposeTestCheckFunc(
					func(s *terraform.State) error { return third.check(t, true)(s) },
					checkRecordedMembers(t, name, name+"-1", name+"-2", name+"-3"),
				),
			},
			{Config: groupConfig(name, 3, body, stopped+adopt), PlanOnly: true},
			{
				Config: groupConfig(name, 2, body, stopped+adopt+fmt.Sprintf("  abandon = [%q]\n", gone)),
				Check: resource.ComposeTestCheckFunc(
					checkAbandoned(t, gone, &uuid),
					checkRecordedMembers(t, name, name+"-1", name+"-3"),
				),
			},
			{
				// Given back: adopted as it is.
				Config: groupConfig(name, 3, body, stopped+adopt),
				Check: resource.ComposeTestCheckFunc(
					checkRecordedMembers(t, name, name+"-1", name+"-2", name+"-3"),
					sums.same(t, boot), sums.same(t, data),
					// Each member told by how its domain goes; the adopted members' disks kept.
					checkDestroyWarning(t, name,
						"Members deleted (domain already stopped: undefined): tfacc-hfix-ad-1, tfacc-hfix-ad-2 (adopted).",
						`Members deleted (shutdown_timeout "0s": domain powered off at once and undefined): tfacc-hfix-ad-3 (adopted).`,
						"tfacc-hfix-ad-2-boot.qcow2 (of tfacc-hfix-ad-2 (adopted))", "tfacc-hfix-ad-2-data.qcow2 (of tfacc-hfix-ad-2 (adopted))",
						"tfacc-ext-hfix-ad-3.img (of tfacc-hfix-ad-3 (adopted))"),
					// ... once: not again as volumes of the group's names it did not make.
					checkDestroyWarningLacks(t, name, "not made by this group"),
					func(*terraform.State) error {
						if got := members(t, name)[gone].UUID; got != uuid {
							return fmt.Errorf("the given-back member %s has UUID %s, had %s: it was recreated", gone, got, uuid)
						}
						return nil
					},
				),
			},
			{Config: groupConfig(name, 3, body, stopped+adopt), PlanOnly: true},
		},
	})
}
