terraform {
  required_providers {
    virt = {
      source  = "virtfleet/virt"
      version = "~> 0.1"
    }
  }
}

# The local system libvirtd. Leave uri out to use LIBVIRT_DEFAULT_URI, or else qemu:///system.
provider "virt" {
  uri = "qemu:///system"

  # How long a plan (or a refresh, or a data source read) waits on one host before that host's
  # members are UNKNOWN, as those of a host that is down; the other hosts plan as usual.
  host_timeout = "10s"

  # One more host, named "kvm2", that a group's distribution_policy may spread its members over
  # (and move them between). The local one is "default".
  host {
    name = "kvm2"
    uri  = "qemu+ssh://root@kvm2.example.com/system?keyfile=/home/ops/.ssh/id_ed25519"
  }
}

# A second, remote host over SSH: resources choose it with `provider = virt.kvm1`. The host key
# must be in ~/.ssh/known_hosts of the user running terraform, and the SSH user must be root or
# in the host's libvirt group. See the guide "Connecting to libvirt" for tls, tcp and libssh.
provider "virt" {
  alias = "kvm1"
  uri   = "qemu+ssh://root@kvm1.example.com/system?keyfile=/home/ops/.ssh/id_ed25519"
}
