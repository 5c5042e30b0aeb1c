# The quick start: a storage pool of its own (a directory), and a group of three small VMs with a
# data disk each in it, on user-mode networking, so that it runs on a host with nothing but
# Debian's libvirt (no pool, no network needed). The VMs boot no operating system (SeaBIOS idles
# on a blank boot disk): enough to see a group come up, change live and go away.
#
#   terraform init && terraform apply
#   terraform apply -var role=web   # a live metadata change: no member restarts
#   terraform destroy               # the VMs, their volumes and the pool go; the directory stays
terraform {
  required_providers {
    virt = {
      source  = "virtfleet/virt"
      version = "~> 0.1"
    }
  }
}

variable "name" {
  description = "Name of the pool and of the group (its members are <name>-1, -2, -3); the pool's directory is /var/lib/<name>."
  type        = string
  default     = "virt-quickstart"
}

variable "role" {
  description = "The members' metadata role: changing it is applied live."
  type        = string
  default     = "db"
}

provider "virt" {
  uri = "qemu:///system"
}

resource "virt_pool" "quickstart" {
  name = var.name
  path = "/var/lib/${var.name}"
}

resource "virt_stateful_group" "quickstart" {
  name        = var.name
  pool        = virt_pool.quickstart.name
  target_size = 3
  # No operating system answers an ACPI shutdown here: power off at once.
  shutdown_timeout = "0s"

  template {
    # TCG, which every host has; the default is "kvm" where libvirt offers it and the CPU has VMX or SVM.
    domain_type = "qemu"
    vcpu        = 1
    memory_mib  = 64

    disk {
      device_name = "data"
      size_mib    = 64
    }

    network_interface {
      type = "user"
    }

    metadata = { role = var.role }
  }
}

output "instances" {
  value = { for i in virt_stateful_group.quickstart.instances : i.name => i.status }
}
