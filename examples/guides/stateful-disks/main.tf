terraform {
  required_providers {
    virt = {
      source  = "virtfleet/virt"
      version = "~> 0.1"
    }
  }
}

provider "virt" {}

resource "virt_stateful_group" "db" {
  name        = "db"
  pool        = "default"
  target_size = 3

  template {
    vcpu       = 2
    memory_mib = 2048

    # The boot volume db-<i>-boot.qcow2 is never preserved: a replacement builds it again from
    # the image. Keep what matters on data disks.
    boot_disk {
      source_image = "/var/lib/libvirt/images/db-base.qcow2"
      size_mib     = 10240
    }

    # db-<i>-data.qcow2: preserved by the policy below.
    disk {
      device_name = "data"
      size_mib    = 20480
    }

    # db-<i>-scratch.qcow2: stateless, made blank again whenever its member is replaced, and
    # deleted with its member.
    disk {
      device_name = "scratch"
      size_mib    = 4096
    }
  }
}

# Every member keeps "data" across replacement, autoheal and update; NEVER also keeps it when
# the member is deleted for good (scale-in, terraform destroy).
resource "virt_stateful_policy" "db" {
  group = virt_stateful_group.db.name

  disk {
    device_name = "data"
    delete_rule = "NEVER"
  }
}

# db-2 keeps two more disks, attached live. Both volumes must exist before the apply:
#   virsh vol-create-as default db-2-wal.qcow2 4G --format qcow2
#   virsh vol-create-as default archive-2024.qcow2 50G --format qcow2
resource "virt_per_instance_config" "db_2" {
  group = virt_stateful_group.db.name
  name  = "db-2"

  preserved_state {
    # db-2's own volume name for "wal": its delete rule applies, so deleting db-2 for good
    # deletes it.
    disk {
      device_name = "wal"
      source      = "db-2-wal.qcow2"
      delete_rule = "ON_PERMANENT_INSTANCE_DELETION"
    }

    # A volume under another name is the user's: never deleted by the provider.
    disk {
      device_name = "archive"
      source      = "archive-2024.qcow2"
      mode        = "READ_ONLY"
    }
  }
}
