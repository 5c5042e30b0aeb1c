package provider

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
)

// checkDiskMode checks how a member's disk is attached, as libvirt reports it.
func checkDiskMode(t *testing.T, base, member, device string, readOnly bool) resource.TestCheckFunc {
	return func(*terraform.State) error {
		d, ok := members(t, base)[member]
		if !ok {
			return fmt.Errorf("no domain %s", member)
		}
		for _, x := range d.Disks {
			if x.DeviceName == device {
				if x.ReadOnly != readOnly {
					return fmt.Errorf("%s disk %s is attached read-only=%t, want %t", member, device, x.ReadOnly, readOnly)
				}
				return nil
			}
		}
		return fmt.Errorf("%s has no disk %s", member, device)
	}
}

// TestAccPerInstanceConfig_everyDiffSettles applies config disks whose attributes are not the
// defaults, READ_ONLY (on a template disk, on an extra disk and on the boot disk) and an
// absolute path with ON_PERMANENT_INSTANCE_DELETION, several times: every plan after an apply is
// empty (the testing framework checks that after each step), and the disks stay as written.
func TestAccPerInstanceConfig_everyDiffSettles(t *testing.T) {
	name := testPrefix + "settle"
	ro, byPath, bootRO := testPrefix+"ext-settle-ro.qcow2", testPrefix+"ext-settle-path.qcow2", testPrefix+"ext-settle-boot.qcow2"
	if os.Getenv(resource.EnvTfAcc) == "" {
		// resource.Test skips the same way; the volumes must exist before the steps are built.
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	testAccPreCheck(t)
	extVolume(t, ro)
	extVolume(t, byPath)
	extVolume(t, bootRO)
	cfg := groupConfig(name, 2, diskBlocks(8, "data"), "") + fmt.Sprintf(`
resource "virt_per_instance_config" "one" {
  group = virt_stateful_group.test.name
  name  = "%[1]s-1"
  preserved_state {
    disk {
      device_name = "data"
      source      = %[2]q
      mode        = "READ_ONLY"
    }
    disk {
      device_name = "extra"
      source      = %[3]q
      delete_rule = "ON_PERMANENT_INSTANCE_DELETION"
    }
  }
}

resource "virt_per_instance_config" "two" {
  group = virt_stateful_group.test.name
  name  = "%[1]s-2"
  preserved_state {
    disk {
      device_name = "boot"
      source      = %[4]q
      mode        = "READ_ONLY"
    }
  }
}
`, name, ro, volumePath(t, byPath), bootRO)
	checks := resource.ComposeTestCheckFunc(
		checkDiskMode(t, name, name+"-1", "data", true),
		checkDiskMode(t, name, name+"-1", "extra", false),
		checkDiskMode(t, name, name+"-2", "boot", true),
		resource.TestCheckTypeSetElemNestedAttrs("virt_per_instance_config.one", "preserved_state.disk.*",
			map[string]string{"device_name": "extra", "delete_rule": "ON_PERMANENT_INSTANCE_DELETION"}),
		resource.TestCheckTypeSetElemNestedAttrs("virt_per_instance_config.one", "preserved_state.disk.*",
			map[string]string{"device_name": "data", "mode": "READ_ONLY"}),
		resource.TestCheckTypeSetElemNestedAttrs("virt_per_instance_config.two", "preserved_state.disk.*",
			map[string]string{"device_name": "boot", "mode": "READ_ONLY"}),
	)
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{Config: cfg, Check: checks},
			{Config: cfg, Check: checks},
			{Config: cfg, Check: checks},
			{Config: cfg, PlanOnly: true},
		},
	})
}

// TestAccStatefulGroup_everyAttributeSettles sets every attribute of the group (and a policy)
// away from its default and applies it three times: every plan after an apply is empty.
func TestAccStatefulGroup_everyAttributeSettles(t *testing.T) {
	name := testPrefix + "every"
	image := testPrefix + "ext-every-image.qcow2"
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	testAccPreCheck(t)
	extVolumeSized(t, image, 32)
	cfg := fmt.Sprintf(`
resource "virt_stateful_group" "test" {
  name               = %[1]q
  base_instance_name = "%[1]s-m"
  pool               = %[2]q
  target_size        = 2
  running            = true
  shutdown_timeout   = "2s"

  template {
    domain_type = "qemu"
    vcpu        = 2
    memory_mib  = 96
    description = "every attribute"
    metadata    = { role = "db", tier = "2" }
    labels      = { team = "storage" }

    boot_disk {
      source_image = %[3]q
      size_mib     = 48
    }
    disk {
      device_name = "data"
      size_mib    = 8
    }
    disk {
      device_name = "logs"
      size_mib    = 16
    }
    network_interface {
      type = "user"
    }
  }

  update_policy {
    type                           = "OPPORTUNISTIC"
    minimal_action                 = "REFRESH"
    most_disruptive_allowed_action = "RESTART"
    max_unavailable                = "50%%"
  }
}

resource "virt_stateful_policy" "test" {
  group = virt_stateful_group.test.name
  disk {
    device_name = "data"
    delete_rule = "ON_PERMANENT_INSTANCE_DELETION"
  }
  disk {
    device_name = "logs"
  }
}
`, name, testPool(), volumePath(t, image))
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(*terraform.State) error {
			// The logs disks are preserved with NEVER (the default): destroy keeps them, and the
			// group's kept record says the group made them.
			kept := []string{"volume " + name + "-m-1-logs.qcow2", "volume " + name + "-m-2-logs.qcow2", "group record " + engine.KeptRecordName(name)}
			left := leftovers(t, name)
			for _, v := range kept[:2] {
				_ = testLibvirt(t).DeleteVolume(context.Background(), testPool(), strings.TrimPrefix(v, "volume "))
			}
			_ = testLibvirt(t).DeleteGroupRecord(context.Background(), testPool(), engine.KeptRecordName(name))
			return sameNames("left after destroy", left, kept)
		},
		Steps: []resource.TestStep{
			{Config: cfg, Check: checkMembers(t, name, "RUNNING", name+"-m-1", name+"-m-2")},
			{Config: cfg},
			{Config: cfg},
			{Config: cfg, PlanOnly: true},
		},
	})
}

// virsh runs virsh on the test host, behind the provider's back.
func virsh(t *testing.T, args ...string) {
	t.Helper()
	virshOut(t, args...)
}

// virshOut runs virsh on the tests' libvirt and returns what it printed.
func virshOut(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("virsh", append([]string{"-c", connectionURI(providerdata.NullString())}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("virsh %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestAccStatefulGroup_destroyAfterThePoolIsGone removes the group's storage pool behind
// Terraform's back: destroy still removes the members and the group record.
func TestAccStatefulGroup_destroyAfterThePoolIsGone(t *testing.T) {
	name := testPrefix + "nopool"
	pool := testPrefix + "gonepool"
	dir := "/var/lib/libvirt/" + pool
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	testAccPreCheck(t)
	virsh(t, "pool-define-as", pool, "dir", "--target", dir)
	t.Cleanup(func() {
		_ = exec.Command("virsh", "pool-destroy", pool).Run()
		_ = exec.Command("virsh", "pool-undefine", pool).Run()
		os.RemoveAll(dir)
	})
	virsh(t, "pool-build", pool)
	virsh(t, "pool-start", pool)
	cfg := strings.Replace(groupConfig(name, 2, diskBlocks(8, "data"), ""), fmt.Sprintf("pool        = %q", testPool()), fmt.Sprintf("pool        = %q", pool), 1)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{Config: cfg, Check: checkMembers(t, name, "RUNNING", name+"-1", name+"-2")},
			{
				PreConfig: func() {
					// The pool goes, with its volumes, while the members run on them.
					virsh(t, "pool-destroy", pool)
					virsh(t, "pool-undefine", pool)
					if err := os.RemoveAll(dir); err != nil {
						t.Fatal(err)
					}
				},
				Config:  cfg,
				Destroy: true,
				// CheckDestroy runs only when the last step leaves something to destroy.
				Check: checkNothingLeft(t, name),
			},
		},
	})
}

// TestAccPerInstanceConfig_hostFileWithConsent attaches a host file outside every pool, which the
// provider allows only with allow_host_paths: libvirt does not re-own it, before or after destroy.
func TestAccPerInstanceConfig_hostFileWithConsent(t *testing.T) {
	name := testPrefix + "hostfile"
	file := "/srv/" + testPrefix + "hostfile.img"
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	testAccPreCheck(t)
	if err := os.MkdirAll("/srv", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(file) })
	owner := func() string { return snapshotHost(t, []string{file}).files[file] }
	want := owner()
	checkOwner := func(*terraform.State) error {
		if got := owner(); got != want {
			return fmt.Errorf("%s is now %s, was %s: libvirt re-owned a host file", file, got, want)
		}
		return nil
	}
	cfg := groupConfig(name, 1, "", "") + fmt.Sprintf(`
provider "virt" {
  allow_host_paths = true
}

resource "virt_per_instance_config" "one" {
  group = virt_stateful_group.test.name
  name  = "%s-1"
  preserved_state {
    disk {
      device_name = "host"
      source      = %q
      mode        = "READ_ONLY"
    }
  }
}
`, name, file)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             resource.ComposeTestCheckFunc(checkNothingLeft(t, name), checkOwner),
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check:  resource.ComposeTestCheckFunc(checkDiskMode(t, name, name+"-1", "host", true), checkMembers(t, name, "RUNNING", name+"-1"), checkOwner),
			},
		},
	})
}
