//go:build tools

// Package release pins goreleaser, which builds, checksums and signs the provider's releases
// (.goreleaser.yml). It is a module of its own so that goreleaser's large dependency tree stays out
// of the provider's and the other tools' go.sum.
package release

import (
	_ "github.com/goreleaser/goreleaser/v2"
)
