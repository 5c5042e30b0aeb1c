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

# Written as `terraform plan -generate-config-out=generated.tf` writes it, tidied: every disk of
# the domain, by its serial or else its target, with its source as the import read it (here a
# file of the group's pool, `default`, whose directory is /var/lib/libvirt/images: its volume
# name), and the group by reference where the generated file has the literal "web".
resource "virt_per_instance_config" "legacy_web" {
  group = virt_stateful_group.web.name
  name  = "legacy-web"

  # An adopted domain only ever gets live changes: the import reads REFRESH, and leaving the
  # argument out plans the same.
  most_disruptive_allowed_action = "REFRESH"

  preserved_state {
    disk {
      device_name = "vda"
      source      = "legacy-web.qcow2"
    }
  }
}
