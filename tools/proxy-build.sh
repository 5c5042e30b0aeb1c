# Shared steps of the scripts that build a Go program from the Go module proxy and cache the binary
# (tools/terraform-build.sh, tools/tofu-build.sh). Sourced, not run. The caller sets NAME (for
# messages), MODULE, VERSION (a tag such as v1.14.0), BIN (the cached binary's path) and GO.
#
# The module is copied out of the (read-only) module cache and built inside that copy, where its
# go.mod, and so its replace directives, are honoured; `go install module@version` would refuse them.

say() { printf '%s-build: %s\n' "$NAME" "$*" >&2; }

# Prints the version a binary reports (e.g. v1.14.0), or nothing when it does not run. Terraform
# and OpenTofu both answer `version -json` with terraform_version.
binary_version() {
  "$1" version -json 2>/dev/null | sed -n 's/.*"terraform_version": *"\([^"]*\)".*/v\1/p' | head -1
}

# Exits, printing BIN, when the cached binary already reports VERSION; else takes the build lock
# (one build at a time per target: two agents or two make runs may start it together) and looks
# again.
reuse_cached() {
  if [ -x "$BIN" ] && [ "$(binary_version "$BIN")" = "$VERSION" ]; then
    say "cached: $BIN ($VERSION)"
    echo "$BIN"
    exit 0
  fi
  mkdir -p "$(dirname "$BIN")"
  exec 9>"$(dirname "$BIN")/.build.lock"
  flock 9
  if [ -x "$BIN" ] && [ "$(binary_version "$BIN")" = "$VERSION" ]; then
    say "cached (built meanwhile): $BIN ($VERSION)"
    echo "$BIN"
    exit 0
  fi
}

# Downloads MODULE@VERSION and copies it, writable, to $work/src; sets work (removed at exit).
copy_module() {
  say "downloading $MODULE@$VERSION from the Go module proxy"
  local dir
  dir=$(cd / && GOFLAGS=-mod=mod "$GO" mod download -json "$MODULE@$VERSION" | sed -n 's/^[[:space:]]*"Dir": *"\([^"]*\)".*/\1/p')
  if [ -z "$dir" ] || [ ! -d "$dir" ]; then
    say "go mod download gave no directory for $MODULE@$VERSION"; exit 1
  fi
  work=$(mktemp -d "${TMPDIR:-/tmp}/$NAME-build.XXXXXX")
  trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
  cp -R "$dir" "$work/src"
  chmod -R u+w "$work/src"
  say "building in a copy of $dir (takes several minutes)"
}

# Builds package pkg of the copy into BIN with ldflags, checks the version it reports, and prints
# BIN. The ldflags make the binary print the release version (without them it says -dev).
build_and_install() {
  local pkg=$1 ldflags=$2 start=$3
  local tmpbin="$BIN.tmp.$$"
  (cd "$work/src" && CGO_ENABLED=0 GOFLAGS=-mod=mod "$GO" build -trimpath -ldflags "-s -w $ldflags" -o "$tmpbin" "$pkg")
  local got
  got=$(binary_version "$tmpbin")
  if [ "$got" != "$VERSION" ]; then
    "$tmpbin" version >&2 || true
    rm -f "$tmpbin"
    say "built binary reports version '${got:-nothing}', want $VERSION"; exit 1
  fi
  mv -f "$tmpbin" "$BIN"
  "$BIN" version >&2
  say "built $BIN in $(( $(date +%s) - start ))s"
  echo "$BIN"
}
