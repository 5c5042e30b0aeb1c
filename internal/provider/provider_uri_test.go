package provider

import (
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// TestProvider_unknownURI gives the provider a uri known only after apply: the plan is refused
// with a diagnostic on uri, and no other host (LIBVIRT_DEFAULT_URI, the local default) is used in
// its place. It runs without libvirt: the provider refuses before it connects anywhere.
func TestProvider_unknownURI(t *testing.T) {
	t.Setenv("LIBVIRT_DEFAULT_URI", "qemu:///system?socket=/nonexistent/must-not-be-dialled")
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{{
			Config: `
resource "terraform_data" "uri" {
  input = "qemu:///system"
}

provider "virt" {
  uri = terraform_data.uri.output
}

data "virt_managed_instances" "x" {
  group = "tfacc-unknown-uri"
}
`,
			ExpectError: regexp.MustCompile(`(?s)libvirt URI not known yet.*known only after apply.*-target`),
		}},
	})
}
