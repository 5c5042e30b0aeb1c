# A directory pool for a group's volumes. The group names it by reference, so Terraform creates
# the pool first and both come up in one `terraform apply`. Destroying the pool stops and
# undefines it; /var/lib/virt-quickstart and every file in it stay.
resource "virt_pool" "quickstart" {
  name = "virt-quickstart"
  path = "/var/lib/virt-quickstart"
}

resource "virt_stateful_group" "web" {
  name        = "web"
  pool        = virt_pool.quickstart.name
  target_size = 2

  template {
    vcpu       = 1
    memory_mib = 512

    network_interface {
      type = "user"
    }
  }
}
