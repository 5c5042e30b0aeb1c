#!/usr/bin/env bash
# Builds Terraform from the Go module proxy (no other network access needed) and caches the binary,
# so that the acceptance tests run under it (make terraform, make testacc). Idempotent: a cached
# binary that reports the wanted version is reused. The path of the binary is the last line on
# stdout; everything else goes to stderr.
#
#   TF_VERSION  version to build (default v1.14.0)
#   TF_BIN      where to put the binary (default /var/cache/terraform-provider-virt/terraform-$TF_VERSION/terraform)
#   GO          go command (default go)
#
# Terraform's go.mod replaces its remote-state backends (s3, gcs, azurerm, ...) and internal/legacy
# with directories of their own modules, which the module proxy's zip of the main module leaves
# out: the copy drops those replace and require lines and the backends' registrations from
# internal/backend/init, so the binary has the local, http, inmem, remote and cloud backends only,
# all the tests need. Everything else is Terraform's own source, built as a release is (dev=no).
# About 8 minutes on 2 cores.
set -euo pipefail

TF_VERSION="${TF_VERSION:-v1.14.0}"
TF_BIN="${TF_BIN:-/var/cache/terraform-provider-virt/terraform-${TF_VERSION}/terraform}"
GO="${GO:-go}"
MODULE="github.com/hashicorp/terraform"

say() { printf 'terraform-build: %s\n' "$*" >&2; }

# Prints the version a binary reports (e.g. v1.14.0), or nothing when it does not run.
binary_version() {
  "$1" version -json 2>/dev/null | sed -n 's/.*"terraform_version": *"\([^"]*\)".*/v\1/p' | head -1
}

if [ -x "$TF_BIN" ] && [ "$(binary_version "$TF_BIN")" = "$TF_VERSION" ]; then
  say "cached: $TF_BIN ($TF_VERSION)"
  echo "$TF_BIN"
  exit 0
fi

mkdir -p "$(dirname "$TF_BIN")"
# One build at a time per target (two agents or two make runs may start it together).
exec 9>"$(dirname "$TF_BIN")/.build.lock"
flock 9
if [ -x "$TF_BIN" ] && [ "$(binary_version "$TF_BIN")" = "$TF_VERSION" ]; then
  say "cached (built meanwhile): $TF_BIN ($TF_VERSION)"
  echo "$TF_BIN"
  exit 0
fi

start=$(date +%s)
say "downloading $MODULE@$TF_VERSION from the Go module proxy"
dir=$(cd / && GOFLAGS=-mod=mod "$GO" mod download -json "$MODULE@$TF_VERSION" | sed -n 's/^[[:space:]]*"Dir": *"\([^"]*\)".*/\1/p')
if [ -z "$dir" ] || [ ! -d "$dir" ]; then
  say "go mod download gave no directory for $MODULE@$TF_VERSION"; exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/terraform-build.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
cp -R "$dir" "$work/src"
chmod -R u+w "$work/src"

cd "$work/src"
# The backends whose modules the zip leaves out, by their directory under remote-state/.
missing=()
for d in azure consul cos gcs kubernetes oci oss pg s3; do
  [ -d "internal/backend/remote-state/$d" ] || missing+=("$d")
done
for d in "${missing[@]}"; do
  sed -i -E "\#^[[:space:]]*(replace[[:space:]]+)?github.com/hashicorp/terraform/internal/backend/remote-state/$d[[:space:]]#d" go.mod
done
if [ ! -d internal/legacy ]; then
  sed -i -E '\#^[[:space:]]*(replace[[:space:]]+)?github.com/hashicorp/terraform/internal/legacy[[:space:]]#d' go.mod
fi
init=internal/backend/init/init.go
declare -A alias=([azure]=Azure [consul]=Consul [cos]=Cos [gcs]=GCS [kubernetes]=Kubernetes [oci]=OCI [oss]=OSS [pg]=Pg [s3]=S3)
for d in "${missing[@]}"; do
  a="backend${alias[$d]}"
  sed -i -E "/^[[:space:]]*$a \"github.com\/hashicorp\/terraform\/internal\/backend\/remote-state\/$d\"/d; /return $a\.New\(\)/d" "$init"
done
say "left out the backends ${missing[*]:-none} (their modules are not in the zip)"

say "building ./ in a copy of $dir (takes several minutes)"
tmpbin="$TF_BIN.tmp.$$"
# The ldflags make `terraform version` print the release version (without them it says -dev).
CGO_ENABLED=0 GOFLAGS=-mod=mod "$GO" build -trimpath \
  -ldflags "-s -w -X github.com/hashicorp/terraform/version.dev=no" \
  -o "$tmpbin" .
got=$(binary_version "$tmpbin")
if [ "$got" != "$TF_VERSION" ]; then
  "$tmpbin" version >&2 || true
  rm -f "$tmpbin"
  say "built binary reports version '${got:-nothing}', want $TF_VERSION"; exit 1
fi
mv -f "$tmpbin" "$TF_BIN"
"$TF_BIN" version >&2
say "built $TF_BIN in $(( $(date +%s) - start ))s"
echo "$TF_BIN"
