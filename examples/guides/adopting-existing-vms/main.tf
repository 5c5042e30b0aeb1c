terraform {
  required_providers {
    virt = {
      source  = "virtfleet/virt"
      version = "~> 0.1"
    }
  }
}

provider "virt" {}

# The group exists already (applied earlier, or imported with an import block of its own).
resource "virt_stateful_group" "web" {
  name        = "web"
  target_size = 2

  template {
    vcpu       = 1
    memory_mib = 1024

    boot_disk {
      source_image = "/var/lib/libvirt/images/web-base.qcow2"
    }

    network_interface {
      network = "default"
    }
  }
}

# "legacy-web" is a running domain that no provider created. Its name is outside the group's
# web-<index> scheme, so a per-instance config of that name can adopt it.
import {
  to = virt_per_instance_config.legacy_web
  id = "web/legacy-web"
}

# Written as `terraform plan -generate-config-out=generated.tf` writes it: every disk of the
# domain, by its serial or else its target, with its source as the import read it.
resource "virt_per_instance_config" "legacy_web" {
  group = virt_stateful_group.web.name
  name  = "legacy-web"

  preserved_state {
    disk {
      device_name = "vda"
      source      = "/var/lib/libvirt/images/legacy-web.qcow2"
    }
  }
}
