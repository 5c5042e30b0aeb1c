# A per-instance config is imported by GROUP/NAME. Importing a domain that no provider created
# reads its disks into preserved_state without changing anything; the next apply adopts it.
terraform import virt_per_instance_config.legacy db/legacy-db
