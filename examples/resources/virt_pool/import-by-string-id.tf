# A storage pool is imported by its name (<host>/<name> for a pool on one of the provider's host blocks).
import {
  to = virt_pool.quickstart
  id = "virt-quickstart"
}
