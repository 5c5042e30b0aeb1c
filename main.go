// Command terraform-provider-virt serves the virt provider to Terraform over protocol 6.
package main

import (
	"context"
	"flag"
	"log"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/virtfleet/terraform-provider-virt/internal/provider"
)

// version is set by the release build.
var version = "dev"

func main() {
	var debug bool
	flag.BoolVar(&debug, "debug", false, "run the provider with support for debuggers like delve")
	flag.Parse()
	err := providerserver.Serve(context.Background(), provider.New(version), providerserver.ServeOpts{
		Address: "registry.terraform.io/virtfleet/virt",
		Debug:   debug,
	})
	if err != nil {
		log.Fatal(err.Error())
	}
}
