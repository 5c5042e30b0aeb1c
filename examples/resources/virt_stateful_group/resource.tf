# Three database VMs, db-1 to db-3, each with a boot overlay of one image and a data disk.
resource "virt_stateful_group" "db" {
  name        = "db"
  pool        = "default"
  target_size = 3

  template {
    vcpu       = 2
    memory_mib = 2048

    boot_disk {
      source_image = "/var/lib/libvirt/images/debian-12.qcow2"
      size_mib     = 10240
    }

    disk {
      device_name = "data"
      size_mib    = 20480
    }

    network_interface {
      network = "default"
    }

    # Applied live to running VMs, no restart.
    metadata    = { role = "db" }
    labels      = { team = "storage" }
    description = "PostgreSQL replicas"
  }

  # Restarts and replacements take at most a third of the members down at once, and each member
  # gets two minutes to shut down cleanly (ACPI) before it is powered off.
  update_policy {
    minimal_action                 = "NONE"
    most_disruptive_allowed_action = "REPLACE"
    max_unavailable                = "33%"
  }
  shutdown_timeout = "120s"
}
