#!/usr/bin/env bash
# Builds Terraform from the Go module proxy (no other network access needed) and caches the binary,
# so that the acceptance tests run under it (make terraform, make testacc). Idempotent: a cached
# binary that reports the wanted version is reused. The path of the binary is the last line on
# stdout; everything else goes to stderr. About 8 minutes on 2 cores.
#
#   TF_VERSION  version to build (default v1.14.0)
#   TF_BIN      where to put the binary (default /var/cache/terraform-provider-virt/terraform-$TF_VERSION/terraform)
#   GO          go command (default go)
#   TF_PROFILE_HOOK  1: build a Terraform that writes its CPU profile to
#               $VIRT_CPUPROFILE_DIR/terraform-<pid>.pprof when that variable is set (Terraform has no
#               switch of its own for it), beside the provider's cpu-<pid>.pprof; default TF_BIN
#               /var/cache/terraform-provider-virt/terraform-$TF_VERSION-profiled/terraform. For
#               make bench-cli BENCH_PROFILE=1.
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
PROFILE_HOOK="${TF_PROFILE_HOOK:-}"
if [ "$PROFILE_HOOK" = 1 ]; then
  BIN="${TF_BIN:-/var/cache/terraform-provider-virt/terraform-${VERSION}-profiled/terraform}"
else
  BIN="${TF_BIN:-/var/cache/terraform-provider-virt/terraform-${VERSION}/terraform}"
fi
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
# Terraform 1.11's go.mod sets godebug tlskyber=0, a setting newer Go toolchains no longer know
# (and refuse to load the module with): it only turned off a TLS key exchange.
sed -i -E '/^[[:space:]]*godebug[[:space:]]+tlskyber=/d' go.mod
say "left out the backends ${missing[*]:-none} (their modules are not in the zip)"

if [ "$PROFILE_HOOK" = 1 ]; then
  # main is `os.Exit(realMain())`: the hook wraps realMain, so that the profile is stopped and
  # written before the exit.
  grep -q '^[[:space:]]*os.Exit(realMain())' main.go || { say "main.go has no os.Exit(realMain()) to hook"; exit 1; }
  sed -i -E 's/^([[:space:]]*)os\.Exit\(realMain\(\)\)/\1os.Exit(virtProfiled(realMain))/' main.go
  cat >zz_virt_profile.go <<'GO'
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
)

// virtProfiled runs realMain, writing its CPU profile to $VIRT_CPUPROFILE_DIR/terraform-<pid>.pprof
// when that variable is set (added by terraform-provider-virt's tools/terraform-build.sh).
func virtProfiled(realMain func() int) int {
	dir := os.Getenv("VIRT_CPUPROFILE_DIR")
	if dir == "" {
		return realMain()
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("terraform-%d.pprof", os.Getpid())))
	if err != nil {
		fmt.Fprintln(os.Stderr, "terraform cpu profile:", err)
		return realMain()
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "terraform cpu profile:", err)
		return realMain()
	}
	defer pprof.StopCPUProfile()
	return realMain()
}
GO
  say "with the CPU profile hook (VIRT_CPUPROFILE_DIR)"
fi
build_and_install . "-X github.com/hashicorp/terraform/version.dev=no" "$start"
