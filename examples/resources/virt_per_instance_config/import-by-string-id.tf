# A per-instance config is imported by GROUP/NAME. Importing a domain that no provider created
# reads its disks into preserved_state and changes nothing; the next apply adopts it.
# `terraform plan -generate-config-out=generated.tf` writes the resource block for you.
import {
  to = virt_per_instance_config.legacy
  id = "db/legacy-db"
}
