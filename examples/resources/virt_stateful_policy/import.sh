# A stateful policy is imported by the name of its group.
terraform import virt_stateful_policy.db db
