#!/usr/bin/env bash
# Builds OpenTofu from the Go module proxy (no other network access needed) and caches the binary,
# so that the acceptance tests can run under it (make tofu, make testacc-tofu). Idempotent: a cached
# binary that answers `tofu version` with the wanted version is reused. The path of the binary is
# the last line on stdout; everything else goes to stderr. About 7 minutes on 2 cores.
#
#   TOFU_VERSION  version to build (default v1.10.7)
#   TOFU_BIN      where to put the binary (default /var/cache/terraform-provider-virt/tofu-$TOFU_VERSION/tofu)
#   GO            go command (default go)
set -euo pipefail

NAME=tofu
MODULE="github.com/opentofu/opentofu"
VERSION="${TOFU_VERSION:-v1.10.7}"
BIN="${TOFU_BIN:-/var/cache/terraform-provider-virt/tofu-${VERSION}/tofu}"
GO="${GO:-go}"
# shellcheck source=tools/proxy-build.sh
. "$(dirname "$0")/proxy-build.sh"

reuse_cached
start=$(date +%s)
copy_module
build_and_install ./cmd/tofu "-X github.com/opentofu/opentofu/version.dev=no" "$start"
