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

    # A member is HEALTHY when PostgreSQL answers, asked inside the guest through the QEMU guest
    # agent (the image runs qemu-guest-agent); UNHEALTHY after 3 failed probes in a row. Adding or
    # changing this block changes no member.
    health_check {
      exec {
        command = ["/usr/bin/pg_isready", "--quiet"]
      }
      interval            = "10s"
      timeout             = "5s"
      unhealthy_threshold = 3
    }
  }

  # Restarts and replacements take at most a third of the members down at once, and each member
  # gets two minutes to shut down cleanly (ACPI) before it is powered off. A wave's members must
  # be HEALTHY for 30 seconds before the next wave starts; one that is not within 10 minutes puts
  # the members this apply changed back on the template they had, and the apply fails.
  update_policy {
    minimal_action                 = "NONE"
    most_disruptive_allowed_action = "REPLACE"
    max_unavailable                = "33%"
    min_ready                      = "30s"
    ready_timeout                  = "10m"
    on_failure                     = "ROLLBACK"
  }
  shutdown_timeout = "120s"

  # The members spread over two hosts: "default" is the provider's own uri, "kvm2" a provider
  # host block. To take kvm2 down for maintenance, drain it: its members move to default (live
  # where libvirt can migrate them between the two machines, else stopped, copied with every
  # volume checked, and started there), and come back only with rebalance = true.
  distribution_policy {
    hosts = ["default", "kvm2"]
    # drain     = ["kvm2"]
    # rebalance = true  # members move until the hosts have as many each
    # live      = false # every move cold: stop, copy, verify, start on the target
  }

  # UNHEALTHY members are repaired at apply (RESTART first, REPLACE if that did not help), after
  # a grace of 5 minutes from their creation or last repair, during which they are STARTING.
  auto_healing {
    initial_delay = "300s"
  }
}
