# Every member of the group "db" keeps its "data" disk across recreation, autoheal, update and
# scale-in. Applying or changing the policy only rewrites each member's bookkeeping: no restart.
resource "virt_stateful_policy" "db" {
  group = virt_stateful_group.db.name

  disk {
    device_name = "data"
    delete_rule = "NEVER"
  }
}
