terraform {
  required_providers {
    virt = { source = "virtfleet/virt" }
  }
}
variable "size" { default = 3 }
variable "role" { default = "db" }
variable "vcpu" { default = 1 }
variable "stop" { default = "0s" }

provider "virt" {
  host {
    name = "h2"
    uri  = "qemu+unix:///session?socket=/run/virt-session/libvirt/libvirt-sock"
  }
  host {
    name = "h3"
    uri  = "qemu+unix:///session?socket=/run/virt-session3/libvirt/libvirt-sock"
  }
}

resource "virt_stateful_group" "one" {
  name             = "tfgold-one"
  pool             = "virt"
  target_size      = var.size
  shutdown_timeout = var.stop
  template {
    domain_type = "qemu"
    vcpu        = var.vcpu
    memory_mib  = 64
    disk {
      device_name = "data"
      size_mib    = 8
    }
    disk {
      device_name = "scratch"
      size_mib    = 4
    }
    network_interface {
      type = "user"
    }
    metadata    = { role = var.role, "x<&>" = "ü\"q" }
    labels      = { team = "storage" }
    description = "golden group one"
    cloud_init {
      user_data = "#cloud-config\nruncmd: [echo hi]\n"
    }
  }
  update_policy {
    minimal_action                 = "NONE"
    most_disruptive_allowed_action = "REPLACE"
    max_unavailable                = "50%"
  }
  auto_healing {
    initial_delay            = "300s"
    backoff                  = "30s"
    max_consecutive_failures = 3
  }
  failed_instance_preservation {
    auto_preserve_failed_max = 1
    preserve_timeout         = "1h"
  }
}

resource "virt_stateful_policy" "one" {
  group = virt_stateful_group.one.name
  disk {
    device_name = "data"
    delete_rule = "NEVER"
  }
}

resource "virt_per_instance_config" "one_2" {
  group = virt_stateful_group.one.name
  name  = "tfgold-one-2"
  preserved_state {
    metadata = { node-id = "2" }
    disk {
      device_name = "wal"
      source      = "tfgold-one-2-wal.qcow2"
      mode        = "READ_WRITE"
      delete_rule = "ON_PERMANENT_INSTANCE_DELETION"
    }
  }
  minimal_action                 = "NONE"
  most_disruptive_allowed_action = "RESTART"
}

resource "virt_stateful_group" "multi" {
  name        = "tfgold-multi"
  pool        = "virt"
  target_size = 3
  running     = false
  shutdown_timeout = "0s"
  template {
    domain_type = "qemu"
    vcpu        = 1
    memory_mib  = 64
    metadata    = { role = var.role }
  }
  distribution_policy {
    hosts = ["h2", "default", "h3"]
  }
}

resource "virt_per_instance_config" "legacy" {
  group = virt_stateful_group.one.name
  name  = "tfgold-legacy"
}
import {
  to = virt_per_instance_config.legacy
  id = "tfgold-one/tfgold-legacy"
}
