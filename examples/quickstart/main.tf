# The quickstart that `make demo` applies: three small VMs with a data disk each, on the pool the
# local harness creates. They boot no operating system (SeaBIOS idles), which is all a demo needs.
terraform {
  required_providers {
    virt = {
      source = "virtfleet/virt"
    }
  }
}

variable "role" {
  type    = string
  default = "db"
}

provider "virt" {}

resource "virt_stateful_group" "demo" {
  name        = "demo"
  pool        = "virt"
  target_size = 3
  # No operating system answers an ACPI shutdown here: power off at once.
  shutdown_timeout = "0s"

  template {
    domain_type = "qemu"
    vcpu        = 1
    memory_mib  = 64

    disk {
      device_name = "data"
      size_mib    = 64
    }

    metadata = { role = var.role }
    labels   = { env = "demo" }
  }
}

output "instances" {
  value = virt_stateful_group.demo.instances
}
