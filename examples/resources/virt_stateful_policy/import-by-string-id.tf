# A stateful policy is imported by the name of its group.
import {
  to = virt_stateful_policy.db
  id = "db"
}
