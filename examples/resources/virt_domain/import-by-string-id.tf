# A domain is imported by its name (<host>/<name> for a domain on one of the provider's host blocks).
import {
  to = virt_domain.legacy
  id = "legacy-web"
}
