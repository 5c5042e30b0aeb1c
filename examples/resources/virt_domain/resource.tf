# Take a VM made by hand (virsh define, virt-install, ...) under Terraform's management as it
# is: the first apply writes the provider's ownership record on the domain and changes nothing
# else (same UUID, definition and disks). Destroy releases it again; nothing is deleted.
resource "virt_domain" "legacy" {
  name        = "legacy-web"
  running     = true
  description = "adopted by Terraform"
}
