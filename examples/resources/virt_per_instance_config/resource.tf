# db-1 keeps an extra disk for its write-ahead log (attached live) and a node ID in its metadata
# (applied live). The config never changes the group's target_size.
#
# The provider never creates a config disk's source: make the volume first, for example
#   virsh vol-create-as default db-1-wal.qcow2 4G --format qcow2
# "db-1-wal.qcow2" is db-1's own volume name for the device "wal" (<instance>-<device_name>.qcow2),
# so its delete_rule applies: ON_PERMANENT_INSTANCE_DELETION deletes it when db-1 is deleted for
# good (scale-in, destroy). A source under any other name is never deleted by the provider.
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
# member: import it (see the import block below), and the next apply adopts it without
# recreating or restarting it or touching its disks. Its name must be outside the group's
# <base_instance_name>-<index> scheme.
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
