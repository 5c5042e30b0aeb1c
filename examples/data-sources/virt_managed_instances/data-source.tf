# Every member of the group "db", with its status, current action and preserved state.
data "virt_managed_instances" "db" {
  group = virt_stateful_group.db.name
}

output "db_members" {
  value = { for i in data.virt_managed_instances.db.instances : i.name => i.status }
}
