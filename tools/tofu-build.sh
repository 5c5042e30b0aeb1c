#!/usr/bin/env bash
# Builds OpenTofu from the Go module proxy (no other network access needed) and caches the binary,
# so that the acceptance tests can run under it (make tofu, make testacc-tofu). Idempotent: a cached
# binary that answers `tofu version` with the wanted version is reused. The path of the binary is
# the last line on stdout; everything else goes to stderr.
#
#   TOFU_VERSION  version to build (default v1.10.7)
#   TOFU_BIN      where to put the binary (default /var/cache/terraform-provider-virt/tofu-$TOFU_VERSION/tofu)
#   GO            go command (default go)
#
# The module is copied out of the (read-only) module cache and built inside that copy, where its
# go.mod, and so its one replace directive, is honoured; `go install module@version` would refuse it.
# About 7 minutes on 2 cores.
set -euo pipefail

TOFU_VERSION="${TOFU_VERSION:-v1.10.7}"
TOFU_BIN="${TOFU_BIN:-/var/cache/terraform-provider-virt/tofu-${TOFU_VERSION}/tofu}"
GO="${GO:-go}"
MODULE="github.com/opentofu/opentofu"

say() { printf 'tofu-build: %s\n' "$*" >&2; }

# Prints the version a binary reports (e.g. v1.10.7), or nothing when it does not run.
binary_version() {
  "$1" version -json 2>/dev/null | sed -n 's/.*"terraform_version": *"\([^"]*\)".*/v\1/p' | head -1
}

if [ -x "$TOFU_BIN" ] && [ "$(binary_version "$TOFU_BIN")" = "$TOFU_VERSION" ]; then
  say "cached: $TOFU_BIN ($TOFU_VERSION)"
  echo "$TOFU_BIN"
  exit 0
fi

mkdir -p "$(dirname "$TOFU_BIN")"
# One build at a time per target (two agents or two make runs may start it together).
exec 9>"$(dirname "$TOFU_BIN")/.build.lock"
flock 9
if [ -x "$TOFU_BIN" ] && [ "$(binary_version "$TOFU_BIN")" = "$TOFU_VERSION" ]; then
  say "cached (built meanwhile): $TOFU_BIN ($TOFU_VERSION)"
  echo "$TOFU_BIN"
  exit 0
fi

start=$(date +%s)
say "downloading $MODULE@$TOFU_VERSION from the Go module proxy"
dir=$(cd / && GOFLAGS=-mod=mod "$GO" mod download -json "$MODULE@$TOFU_VERSION" | sed -n 's/^[[:space:]]*"Dir": *"\([^"]*\)".*/\1/p')
if [ -z "$dir" ] || [ ! -d "$dir" ]; then
  say "go mod download gave no directory for $MODULE@$TOFU_VERSION"; exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/tofu-build.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
cp -R "$dir" "$work/src"
chmod -R u+w "$work/src"

say "building ./cmd/tofu in a copy of $dir (takes several minutes)"
tmpbin="$TOFU_BIN.tmp.$$"
(
  cd "$work/src"
  # The module's own go.mod and go.sum decide the dependencies; the ldflags set what `tofu version`
  # prints as a release would (without them it says -dev).
  CGO_ENABLED=0 GOFLAGS=-mod=mod "$GO" build -trimpath \
    -ldflags "-s -w -X github.com/opentofu/opentofu/version.dev=no" \
    -o "$tmpbin" ./cmd/tofu
)
got=$(binary_version "$tmpbin")
if [ "$got" != "$TOFU_VERSION" ]; then
  "$tmpbin" version >&2 || true
  rm -f "$tmpbin"
  say "built binary reports version '${got:-nothing}', want $TOFU_VERSION"; exit 1
fi
mv -f "$tmpbin" "$TOFU_BIN"
"$TOFU_BIN" version >&2
say "built $TOFU_BIN in $(( $(date +%s) - start ))s"
echo "$TOFU_BIN"
