# The configuration `make demo` (tools/demo.sh) applies on the harness's libvirt: two members of the
# tiny guest (tools/tiny-guest.sh) in the harness's pool, whose data disk a policy keeps, whose first
# member has metadata of its own through a per-instance config, and whose serial consoles are logged,
# so that the demo can show from inside the guests what each one was given. demo.sh sets the
# variables; it is not an example for users (examples/quickstart is).
terraform {
  required_providers {
    virt = {
      source = "virtfleet/virt"
    }
  }
}

variable "name" {
  type    = string
  default = "virt-demo"
}

variable "pool" {
  type    = string
  default = "virt"
}

variable "image" {
  description = "The tiny guest, as a volume of the pool."
  type        = string
}

variable "console_log_dir" {
  type    = string
  default = "/var/log/libvirt/qemu"
}

variable "running" {
  type    = bool
  default = true
}

variable "user_data" {
  description = "A change of it replaces the members (REPLACE: cloud_init user_data changed)."
  type        = string
  default     = "#cloud-config\n"
}

provider "virt" {}

resource "virt_stateful_group" "demo" {
  name        = var.name
  pool        = var.pool
  target_size = 2
  running     = var.running
  # The tiny guest does not answer an ACPI shutdown: power off at once.
  shutdown_timeout = "0s"

  # A member that crashed (its QEMU killed) is replaced at the next apply, keeping its data disk.
  # One shut off cleanly, or destroyed with virsh, is started again, with or without this block.
  auto_healing {
    initial_delay = "0s"
  }

  template {
    domain_type = "qemu"
    vcpu        = 1
    memory_mib  = 128

    boot_disk {
      source_image = var.image
      size_mib     = 64
    }

    disk {
      device_name = "data"
      size_mib    = 8
    }

    network_interface {
      type = "user"
    }

    metadata        = { role = "db" }
    console_log_dir = var.console_log_dir

    cloud_init {
      user_data = var.user_data
    }
  }
}

# Every member keeps its "data" disk through a REPLACE (and autoheal); it goes with the member when
# the member is deleted for good (scale-in, destroy).
resource "virt_stateful_policy" "demo" {
  group = virt_stateful_group.demo.name

  disk {
    device_name = "data"
    delete_rule = "ON_PERMANENT_INSTANCE_DELETION"
  }
}

# The first member's own metadata, on top of the template's: its guest reads node-id from its seed.
resource "virt_per_instance_config" "first" {
  group = virt_stateful_group.demo.name
  name  = "${var.name}-1"

  preserved_state {
    metadata = { node-id = "1" }
  }
}

output "instances" {
  value = { for i in virt_stateful_group.demo.instances : i.name => i.status }
}
