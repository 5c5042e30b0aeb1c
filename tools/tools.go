//go:build tools

// Package tools pins the versions of the developer tools the GNUmakefile runs.
package tools

import (
	// Documentation generation.
	_ "github.com/hashicorp/terraform-plugin-docs/cmd/tfplugindocs"
)
