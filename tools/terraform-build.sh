#!/usr/bin/env bash
# Builds Terraform from the Go module proxy (no other network access needed) and caches the binary,
# so that the acceptance tests run under it (make terraform, make testacc). Idempotent: a cached
# binary that reports the wanted version is reused. The path of the binary is the last line on
# stdout; everything else goes to stderr. About 8 minutes on 2 cores.
#
#   TF_VERSION  version to build (default v1.14.0)
#   TF_BIN      where to put the binary (default /var/cache/terraform-provider-virt/terraform-$TF_VERSION/terraform)
#   GO          go command (default go)
#
# Terraform's go.mod replaces its remote-state backends (s3, gcs, azurerm, ...) and internal/legacy
# with directories holding modules of their own, which the module proxy's zip of the main module
# leaves out: the copy drops those replace and require lines and the backends' registrations from
# internal/backend/init, so the binary has the local, http, inmem, remote and cloud backends, all
# the tests need. Everything else is Terraform's own source, built as a release is (dev=no).
set -euo pipefail

NAME=terraform
MODULE="github.com/hashicorp/terraform"
VERSION="${TF_VERSION:-v1.14.0}"
BIN="${TF_BIN:-/var/cache/terraform-provider-virt/terraform-${VERSION}/terraform}"
GO="${GO:-go}"
# shellcheck source=tools/proxy-build.sh
. "$(dirname "$0")/proxy-build.sh"

reuse_cached
start=$(date +%s)
copy_module

cd "$work/src"
# The backends whose modules the zip leaves out, by their directory under remote-state/, with the
# alias init.go imports each under.
declare -A alias=([azure]=Azure [consul]=Consul [cos]=Cos [gcs]=GCS [kubernetes]=Kubernetes [oci]=OCI [oss]=OSS [pg]=Pg [s3]=S3)
missing=()
for d in "${!alias[@]}"; do
  [ -d "internal/backend/remote-state/$d" ] || missing+=("$d")
done
for d in "${missing[@]}"; do
  sed -i -E "\#^[[:space:]]*(replace[[:space:]]+)?github.com/hashicorp/terraform/internal/backend/remote-state/$d[[:space:]]#d" go.mod
  a="backend${alias[$d]}"
  sed -i -E "/^[[:space:]]*$a \"github.com\/hashicorp\/terraform\/internal\/backend\/remote-state\/$d\"/d; /return $a\.New\(\)/d" internal/backend/init/init.go
done
if [ ! -d internal/legacy ]; then
  sed -i -E '\#^[[:space:]]*(replace[[:space:]]+)?github.com/hashicorp/terraform/internal/legacy[[:space:]]#d' go.mod
fi
say "left out the backends ${missing[*]:-none} (their modules are not in the zip)"

build_and_install . "-X github.com/hashicorp/terraform/version.dev=no" "$start"
