package provider

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"

	"github.com/virtfleet/terraform-provider-virt/internal/diskdigest"
)

// The data-safety tests prove with checksums of disk bytes, not attributes, that preserved disks
// keep their data and stateless ones are recreated empty. Their groups are powered off, so that
// qemu-io may write the images without a guest holding them open.

func volumePath(t *testing.T, name string) string {
	t.Helper()
	vols, err := testLibvirt(t).ListVolumes(context.Background(), testPool(), name)
	if err != nil {
		t.Fatalf("list volumes: %v", err)
	}
	for _, v := range vols {
		if v.Name == name {
			return v.Path
		}
	}
	t.Fatalf("volume %s does not exist", name)
	return ""
}

// writePattern fills the first MiB of a volume's guest-visible bytes with one byte value.
func writePattern(t *testing.T, name string, pattern byte) {
	t.Helper()
	out, err := exec.Command("qemu-io", "-f", "qcow2", "-c", fmt.Sprintf("write -P 0x%02x 0 1M", pattern), volumePath(t, name)).CombinedOutput()
	if err != nil {
		t.Fatalf("qemu-io write to %s: %v: %s", name, err, out)
	}
}

// volumeBytes returns the digest of a volume's guest-visible bytes (diskdigest) and whether they
// are all zero.
func volumeBytes(t *testing.T, name string) (string, bool, error) {
	t.Helper()
	return diskdigest.Image(volumePath(t, name), t.TempDir())
}

// checksums remembers volume checksums between steps.
type checksums map[string]string

// write puts a pattern into the volume and remembers the checksum it now has.
func (c checksums) write(t *testing.T, name string, pattern byte) {
	t.Helper()
	writePattern(t, name, pattern)
	sum, zero, err := volumeBytes(t, name)
	if err != nil {
		t.Fatal(err)
	}
	if zero {
		t.Fatalf("volume %s reads back all zero after a write", name)
	}
	c[name] = sum
}

// same checks that the volume still has the bytes written into it.
func (c checksums) same(t *testing.T, name string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		sum, _, err := volumeBytes(t, name)
		if err != nil {
			return err
		}
		if sum != c[name] {
			return fmt.Errorf("volume %s has checksum %s, had %s: its data was lost", name, sum, c[name])
		}
		return nil
	}
}

// checkEmpty checks that a volume reads back all zero: it was recreated.
func checkEmpty(t *testing.T, name string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		_, zero, err := volumeBytes(t, name)
		if err != nil {
			return err
		}
		if !zero {
			return fmt.Errorf("volume %s still holds data: it was not recreated", name)
		}
		return nil
	}
}

// domainUUIDs remembers the UUIDs of the group's domains, so that a later step can tell a
// recreated domain from the same one.
type domainUUIDs map[string]string

func (u domainUUIDs) record(t *testing.T, base string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for n, d := range members(t, base) {
			u[n] = d.UUID
		}
		return nil
	}
}

func (u domainUUIDs) check(t *testing.T, base, name string, same bool) resource.TestCheckFunc {
	return func(*terraform.State) error {
		d, ok := members(t, base)[name]
		switch {
		case !ok:
			return fmt.Errorf("domain %s does not exist", name)
		case same && d.UUID != u[name]:
			return fmt.Errorf("domain %s has UUID %s, had %s: it was recreated", name, d.UUID, u[name])
		case !same && d.UUID == u[name]:
			return fmt.Errorf("domain %s still has UUID %s: it was not recreated", name, d.UUID)
		}
		return nil
	}
}

var dataAndScratch = diskBlocks(16, "data", "scratch")

// TestAccStatefulGroup_replaceKeepsPreservedDisks replaces an instance (a config with
// minimal_action REPLACE) and shows that its preserved disk comes back byte for byte under the same
// device name while its stateless disk is recreated empty.
func TestAccStatefulGroup_replaceKeepsPreservedDisks(t *testing.T) {
	name := testPrefix + "safe"
	n1 := name + "-1"
	data, scratch := n1+"-data.qcow2", n1+"-scratch.qcow2"
	sums, uuids := checksums{}, domainUUIDs{}
	policy := policyConfig("data")
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		// The destroy of group, policy and config keeps the NEVER disk with its bytes.
		CheckDestroy: checkKeptAfterDestroy(t, name, sums, data),
		Steps: []resource.TestStep{
			{
				Config: stack(name, 1, dataAndScratch, "  running = false", policy),
				Check:  uuids.record(t, name),
			},
			{
				PreConfig: func() { sums.write(t, data, 0x5a); sums.write(t, scratch, 0xa5) },
				Config: stack(name, 1, dataAndScratch, "  running = false", policy+
					pic("n1", n1, nil, map[string]string{"role": "primary"}, `  minimal_action = "REPLACE"`)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("virt_per_instance_config.n1", plancheck.ResourceActionCreate),
				}},
				Check: resource.ComposeTestCheckFunc(
					uuids.check(t, name, n1, false),
					sums.same(t, data),
					checkEmpty(t, scratch),
					checkDomains(t, name, map[string]string{n1: "disks=[data=" + data + " scratch=" + scratch + "] meta={role=primary}"}),
					checkManaged(map[string]string{n1: "policy=[data=" + data + "] config=[] meta={role=primary}"}),
				),
			},
		},
	})
}

// TestAccStatefulGroup_scaleInKeepsPreservedDisks scales in and out again with a disk the policy
// preserves with delete_rule NEVER: the volume of the removed instance survives with its bytes and
// the instance that comes back under the same name gets it again.
func TestAccStatefulGroup_scaleInKeepsPreservedDisks(t *testing.T) {
	name := testPrefix + "scalesafe"
	n1, n2 := name+"-1", name+"-2"
	data := n2 + "-data.qcow2"
	sums, uuids := checksums{}, domainUUIDs{}
	body := diskBlocks(16, "data")
	policy := policyConfig("data")
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkKeptAfterDestroy(t, name, sums, data, n1+"-data.qcow2"),
		Steps: []resource.TestStep{
			{
				Config: stack(name, 2, body, "  running = false", policy),
				Check:  uuids.record(t, name),
			},
			{
				PreConfig: func() { sums.write(t, data, 0x3c) },
				Config:    stack(name, 1, body, "  running = false", policy),
				Check: resource.ComposeTestCheckFunc(
					checkMembers(t, name, "STOPPED", n1),
					checkVolumes(t, n2+"-", data),
					sums.same(t, data),
				),
			},
			{
				Config: stack(name, 2, body, "  running = false", policy),
				Check: resource.ComposeTestCheckFunc(
					checkMembers(t, name, "STOPPED", n1, n2),
					uuids.check(t, name, n1, true),
					sums.same(t, data),
					checkDomains(t, name, map[string]string{
						n1: "disks=[data=" + n1 + "-data.qcow2] meta={}",
						n2: "disks=[data=" + data + "] meta={}",
					}),
				),
			},
		},
	})
}

// TestAccStatefulGroup_failedDestroyKeepsPreservedDisks fails a `terraform destroy` half-way, with
// a libvirt fault injected on the second member: in the group's destroy, after the policy's
// (Terraform destroys the policy first), or in the policy's destroy, after it wrote the group
// record. The next `terraform destroy` is another run, with the policy already out of the group
// record: the disks the policy preserved with NEVER must still survive it with their bytes, those
// of the members the first destroy removed and of those it left alike.
func TestAccStatefulGroup_failedDestroyKeepsPreservedDisks(t *testing.T) {
	for _, c := range []struct {
		name  string
		fault func(fb *faultyBackend, member string)
		err   string
	}{
		{"group", func(fb *faultyBackend, m string) { fb.undefining = m }, "injected fault undefining"},
		{"policy", func(fb *faultyBackend, m string) { fb.recording = m }, "injected fault writing the record of"},
	} {
		t.Run(c.name, func(t *testing.T) {
			name := testPrefix + "halfdestroy-" + c.name
			n1, n2, n3 := name+"-1", name+"-2", name+"-3"
			data := []string{n1 + "-data.qcow2", n2 + "-data.qcow2", n3 + "-data.qcow2"}
			sums := checksums{}
			fb := &faultyBackend{}
			c.fault(fb, n2)
			cfg := stack(name, 3, dataAndScratch, "  running = false", policyConfig("data"))
			parallelTest(t, resource.TestCase{
				PreCheck:                 func() { fb.preCheck(t) },
				ProtoV6ProviderFactories: fb.factories(),
				CheckDestroy:             checkKeptAfterDestroy(t, name, sums, data...),
				Steps: []resource.TestStep{
					{
						Config: cfg,
						Check:  checkMembers(t, name, "STOPPED", n1, n2, n3),
					},
					{
						PreConfig: func() {
							for i, v := range data {
								sums.write(t, v, byte(0x41+i))
							}
							fb.arm(true)
						},
						Config:      cfg,
						Destroy:     true,
						ExpectError: regexp.MustCompile(c.err + `\s+` + n2),
					},
					{
						// The member the fault stopped at is still there; the policy is out of
						// the group record; the data disks all still hold their bytes.
						PreConfig: func() {
							fb.arm(false)
							if fb.hits == 0 {
								t.Fatal("the fault never fired")
							}
							s, _, err := reconcile.New(testLibvirt(t)).LoadRecord(context.Background(), name)
							if err != nil {
								t.Fatalf("read group record of %s: %v", name, err)
							}
							if d := s.StatefulPolicy().Disks; len(d) != 0 {
								t.Fatalf("the failed destroy left the policy's disks %v in the group record: the test means it to have removed the policy", d)
							}
							if _, ok := members(t, name)[n2]; !ok {
								t.Fatalf("%s is gone although the fault stopped the destroy there", n2)
							}
							for _, v := range data {
								if err := sums.same(t, v)(nil); err != nil {
									t.Fatalf("after the failed destroy: %v", err)
								}
							}
						},
						Config:  cfg,
						Destroy: true,
						// Checked here: CheckDestroy runs only when the last step leaves
						// something to destroy, and it stays for the case where this step fails.
						Check: checkKeptAfterDestroy(t, name, sums, data...),
					},
				},
			})
		})
	}
}
