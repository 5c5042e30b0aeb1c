# A storage pool is imported by its name (<host>/<name> for a pool on one of the provider's host blocks).
terraform import virt_pool.quickstart virt-quickstart
