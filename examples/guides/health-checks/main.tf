terraform {
  required_providers {
    virt = {
      source  = "virtfleet/virt"
      version = "~> 0.1"
    }
  }
}

provider "virt" {}

# Web servers judged by their HTTP answer, from the machine that runs Terraform: it needs a route
# to the members' addresses (here the libvirt network "default", reachable from its host).
resource "virt_stateful_group" "web" {
  name        = "web"
  target_size = 4

  template {
    vcpu       = 1
    memory_mib = 1024

    boot_disk {
      source_image = "/var/lib/libvirt/images/web-v2.qcow2"
    }

    network_interface {
      network = "default"
    }

    health_check {
      http {
        port          = 8080
        path          = "/healthz"
        expect_status = 200
      }
      interval            = "10s"
      timeout             = "3s"
      unhealthy_threshold = 3
    }
  }

  # One member at a time; each must answer for a minute before the next is replaced, and a
  # member that does not within 5 minutes rolls the changed members back.
  update_policy {
    max_unavailable = "1"
    min_ready       = "60s"
    ready_timeout   = "5m"
    on_failure      = "ROLLBACK"
  }

  # Repair UNHEALTHY members at apply; a member is STARTING (not judged) for 2 minutes after it
  # was created or repaired.
  auto_healing {
    initial_delay = "120s"
  }
}

# Workers with no network path from Terraform: the guest agent answers through libvirt.
resource "virt_stateful_group" "worker" {
  name        = "worker"
  target_size = 2

  template {
    vcpu       = 1
    memory_mib = 512

    boot_disk {
      source_image = "/var/lib/libvirt/images/worker.qcow2"
    }

    health_check {
      guest_agent {}
    }
  }
}
