# A group is imported by its identity, its name (Terraform 1.12 and later), as by its ID: the
# provider reads its configuration from the group record on the libvirt host, and the importing
# state takes the group over at its first apply, changing no member.
import {
  to       = virt_stateful_group.db
  identity = { name = "db" }
}
