# Three database VMs on one remote KVM host reached over SSH. Each keeps its "data" disk across
# every replacement, autoheal and scale-in, and a destroy keeps it too; db-1 also gets a log
# volume made beforehand. Before the first apply, on the host (see README):
#   virsh pool-list --all                      # the pool "default" exists and is active
#   virsh net-list --all                       # the network "default" exists and is active
#   virsh vol-create-as default db-1-logs.qcow2 1G --format qcow2
terraform {
  required_providers {
    virt = {
      source  = "virtfleet/virt"
      version = "~> 0.1"
    }
  }
}

provider "virt" {
  # The SSH user must be root or in the host's libvirt group, and the host's key must already be
  # in ~/.ssh/known_hosts of the user running terraform.
  uri = "qemu+ssh://root@kvm1.example.com/system?keyfile=/home/ops/.ssh/id_ed25519"
}

resource "virt_stateful_group" "db" {
  name        = "db"
  pool        = "default"
  target_size = 3

  template {
    vcpu       = 2
    memory_mib = 2048

    boot_disk {
      # A ready-to-run image that is a volume of a storage pool on the host; each member boots
      # from its own copy-on-write overlay of it.
      source_image = "/var/lib/libvirt/images/db-base.qcow2"
      size_mib     = 10240
    }

    disk {
      device_name = "data"
      size_mib    = 20480
    }

    network_interface {
      network = "default"
    }

    metadata = { role = "db" }
  }

  update_policy {
    max_unavailable = 1
  }

  # A rolling replacement of large members can take a while; each limit defaults to 30m.
  timeouts {
    create = "30m"
    update = "30m"
    delete = "30m"
  }
}

# Every member keeps its "data" disk; NEVER keeps it even when the member is deleted for good.
resource "virt_stateful_policy" "db" {
  group = virt_stateful_group.db.name

  disk {
    device_name = "data"
    delete_rule = "NEVER"
  }
}

# db-1 also gets the log volume made with virsh vol-create-as, attached live.
resource "virt_per_instance_config" "db_1" {
  group = virt_stateful_group.db.name
  name  = "db-1"

  preserved_state {
    disk {
      device_name = "logs"
      source      = "db-1-logs.qcow2"
    }

    metadata = { node-id = "1" }
  }
}

data "virt_managed_instances" "db" {
  group      = virt_stateful_group.db.name
  depends_on = [virt_stateful_policy.db, virt_per_instance_config.db_1]
}

output "members" {
  value = { for i in data.virt_managed_instances.db.instances : i.name => i.status }
}
