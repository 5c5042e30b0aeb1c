package provider

import (
	"fmt"
	"os"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
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
	resource.Test(t, resource.TestCase{
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
