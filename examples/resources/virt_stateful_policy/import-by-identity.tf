# A stateful policy is imported by its identity (Terraform 1.12 and later): the name of its group.
import {
  to       = virt_stateful_policy.db
  identity = { group = "db" }
}
