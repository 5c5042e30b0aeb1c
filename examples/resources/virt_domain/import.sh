# A domain is imported by its name (<host>/<name> for a domain on one of the provider's host blocks).
terraform import virt_domain.legacy legacy-web
