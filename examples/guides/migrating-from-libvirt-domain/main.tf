terraform {
  required_providers {
    virt = {
      source  = "virtfleet/virt"
      version = "~> 0.1"
    }
  }
}

provider "virt" {
  uri = "qemu:///system"
}

# 1. Terraform forgets the dmacvicar/libvirt resources without destroying anything on the host
#    (Terraform 1.7 and later; or `terraform state rm` them).
removed {
  from = libvirt_domain.db

  lifecycle {
    destroy = false
  }
}

removed {
  from = libvirt_volume.db_root

  lifecycle {
    destroy = false
  }
}

# 2. A group for them. Its base_instance_name must not produce the existing names: the domains
#    db-0, db-1 and db-2 are adopted as named members and keep their names, while members the
#    group builds itself are called pg-1, pg-2, ... (none while target_size is 0).
resource "virt_stateful_group" "db" {
  name               = "db"
  base_instance_name = "pg"
  pool               = "default"
  target_size        = 0

  template {
    vcpu       = 2
    memory_mib = 2048

    boot_disk {
      source_image = "/var/lib/libvirt/images/debian-12.qcow2"
      size_mib     = 10240
    }

    network_interface {
      network = "default"
    }
  }
}

# 3. After the group exists (apply steps 1 and 2 first), import each domain as a member.
locals {
  legacy = toset(["db-0", "db-1", "db-2"])
}

import {
  for_each = local.legacy
  to       = virt_per_instance_config.legacy[each.key]
  id       = "db/${each.key}"
}

resource "virt_per_instance_config" "legacy" {
  for_each = local.legacy
  group    = virt_stateful_group.db.name
  name     = each.key

  preserved_state {
    # As the import reads them: the root volume libvirt_volume.db_root made, and the
    # cloud-init ISO libvirt_cloudinit_disk attached. Check with `terraform plan` that the
    # imported configs show no change.
    disk {
      device_name = "vda"
      source      = "/var/lib/libvirt/images/${each.key}.qcow2"
    }

    disk {
      device_name = "hda"
      source      = "/var/lib/libvirt/images/${each.key}-init.iso"
      mode        = "READ_ONLY"
    }
  }
}
