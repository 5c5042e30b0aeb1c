//go:build tools

// Package tools pins the versions of the developer tools the GNUmakefile runs.
package tools

import (
	// Documentation generation.
	_ "github.com/hashicorp/terraform-plugin-docs/cmd/tfplugindocs"

	// Linting (make lint, with ../.golangci.yml).
	_ "github.com/golangci/golangci-lint/v2/cmd/golangci-lint"
)
