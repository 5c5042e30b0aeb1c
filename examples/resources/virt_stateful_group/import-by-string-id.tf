# A group is imported by its name; the provider reads its configuration from the group record on
# the libvirt host and finds its members by the metadata it keeps in each domain. The importing
# state takes the group over at its first apply.
import {
  to = virt_stateful_group.db
  id = "db"
}
