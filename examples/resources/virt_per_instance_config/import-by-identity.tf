# A per-instance config is imported by its identity (Terraform 1.12 and later): the group's name
# and the instance's name, as GROUP/NAME is its ID.
import {
  to       = virt_per_instance_config.legacy
  identity = { group = "db", name = "legacy-db" }
}
