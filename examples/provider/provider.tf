# Connects to the local system libvirtd. Leave uri out to use LIBVIRT_DEFAULT_URI, or else
# qemu:///system.
provider "virt" {
  uri = "qemu:///system"
}

# A remote host over SSH:
# provider "virt" {
#   uri = "qemu+ssh://root@kvm1.example.com/system"
# }
