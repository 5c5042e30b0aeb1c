# db-1 keeps an extra disk for its write-ahead log (attached live) and a node ID in its metadata
# (applied live). The config never changes the group's target_size.
resource "virt_per_instance_config" "db_1" {
  group = virt_stateful_group.db.name
  name  = "db-1"

  preserved_state {
    disk {
      device_name = "wal"
      source      = "db-1-wal.qcow2"
      mode        = "READ_WRITE"
      delete_rule = "ON_PERMANENT_INSTANCE_DELETION"
    }

    metadata = {
      node-id = "1"
    }
  }

  minimal_action                 = "NONE"
  most_disruptive_allowed_action = "REFRESH"
}

# An existing VM that no provider created, "legacy-db", joins the group as one extra named
# member: import it (see import.sh), and the next apply adopts it without recreating it or
# touching its disks.
resource "virt_per_instance_config" "legacy" {
  group = virt_stateful_group.db.name
  name  = "legacy-db"

  preserved_state {
    disk {
      device_name = "vda"
      source      = "/var/lib/libvirt/images/legacy-db.qcow2"
    }
  }
}
