# A group is imported by its name; the provider finds its members by the metadata it keeps in
# each libvirt domain.
terraform import virt_stateful_group.db db
