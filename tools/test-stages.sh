#!/usr/bin/env bash
# make test: runs the suite's stages (make targets, given as arguments) one after the other, stops
# at the first that fails, and prints each stage's wall time at the end (the table CONTRIBUTING.md
# keeps, "make test's stages").
#
# On a fresh machine the tools the later stages need are built from the Go module proxy (OpenTofu,
# goreleaser, golangci-lint: about 12 minutes of the 20 on 2 cores, Terraform 1.14 being the rest)
# and the real-image tests need the Debian cloud image (2.5 to 7 minutes of debootstrap). Paid one
# after the other before the acceptance tests they would add up; here they are made in the
# background (niced: the guests the tests wait on keep the CPU first) while the stages that do not
# need them run, and a stage that needs one waits for it. A background build that fails fails the
# run, with its output shown; the output of each is in $TEST_STAGES_DIR/bg-<target>.log.
#
#   MAKE            make command (the GNUmakefile passes its own)
#   TEST_BG         background targets, in the order they are built (default below)
#   TEST_STAGES_DIR where the logs and the table go (default /tmp/virt-test-stages)
set -uo pipefail

MAKE="${MAKE:-make}"
DIR="${TEST_STAGES_DIR:-/tmp/virt-test-stages}"
read -r -a BG <<<"${TEST_BG:-tofu release-tool lint-tool cloud-image}"
mkdir -p "$DIR"

# needs: the background target a stage waits for before it starts (make's own prerequisites of the
# stage would build it too, but at the same time as the background build).
needs() {
  case "$1" in
    testacc | testacc-tofu | testacc-tofu-smoke) echo tofu ;;
    release-check | release-snapshot) echo release-tool ;;
    lint) echo lint-tool ;;
    testacc-real | testacc-real-short) echo cloud-image ;;
  esac
}

# The harness first, in the foreground: it installs packages with apt, as the cloud image's build
# may, and the background waits for it before that build (one dpkg at a time).
t0=$(date +%s)
rows=()
fmt() { printf '%d min %02d s' $(($1 / 60)) $(($1 % 60)); }

# The background builds, in a process group of their own (setsid) so that a failed run can end
# them, make and its compilers included.
if [ "${1:-}" = --background ]; then
  for b in "${BG[@]}"; do
    if [ "$b" = cloud-image ]; then
      while [ ! -e "$DIR/harness.done" ]; do sleep 2; done
    fi
    s=$(date +%s)
    nice -n 10 "$MAKE" --no-print-directory "$b" >"$DIR/bg-$b.log" 2>&1
    rc=$?
    echo $(($(date +%s) - s)) >"$DIR/bg-$b.secs"
    echo "$rc" >"$DIR/bg-$b.rc"
  done
  exit 0
fi
rm -f "$DIR"/bg-*.rc "$DIR"/bg-*.log "$DIR"/bg-*.secs "$DIR/harness.done"
MAKE="$MAKE" TEST_STAGES_DIR="$DIR" TEST_BG="${BG[*]}" setsid bash "$0" --background </dev/null &
bg_pid=$!

# wait_bg waits for background target b to be made; it fails, showing the build's output, when
# the build failed.
wait_bg() {
  local b=$1
  while [ ! -e "$DIR/bg-$b.rc" ]; do
    if ! kill -0 "$bg_pid" 2>/dev/null && [ ! -e "$DIR/bg-$b.rc" ]; then
      echo "test-stages: the background build of $b ended without a result" >&2
      return 1
    fi
    sleep 2
  done
  if [ "$(cat "$DIR/bg-$b.rc")" != 0 ]; then
    echo "test-stages: the background build of $b failed (make $b); its output ($DIR/bg-$b.log):" >&2
    cat "$DIR/bg-$b.log" >&2
    return 1
  fi
}

table() {
  echo
  echo "make test: wall time of each stage (background builds overlap the stages)"
  printf '| %-28s | %-12s | %s\n' stage time result
  for r in "${rows[@]}"; do printf '%s\n' "$r"; done
  for b in "${BG[@]}"; do
    if [ -e "$DIR/bg-$b.rc" ]; then
      res=ok
      [ "$(cat "$DIR/bg-$b.rc")" = 0 ] || res=FAILED
      printf '| %-28s | %-12s | %s\n' "($b, background)" "$(fmt "$(cat "$DIR/bg-$b.secs")")" "$res"
    fi
  done
  printf '| %-28s | %-12s |\n' total "$(fmt $(($(date +%s) - t0)))"
}

# run_stage runs make target st, timing it, and records its row.
run_stage() {
  local st=$1 s rc res b
  s=$(date +%s)
  b=$(needs "$st")
  rc=0
  if [ -n "$b" ] && [[ " ${BG[*]} " == *" $b "* ]]; then
    wait_bg "$b" || rc=$?
  fi
  if [ "$rc" = 0 ]; then
    echo "=== make $st"
    "$MAKE" --no-print-directory "$st" || rc=$?
  fi
  res=ok
  [ "$rc" = 0 ] || res=FAILED
  rows+=("$(printf '| %-28s | %-12s | %s' "$st" "$(fmt $(($(date +%s) - s)))" "$res")")
  return "$rc"
}

status=0
if run_stage harness; then
  touch "$DIR/harness.done"
  for st in "$@"; do
    run_stage "$st" || { status=1; break; }
  done
else
  status=1
fi
touch "$DIR/harness.done"

if [ "$status" = 0 ]; then
  # Every background build must have succeeded, also one no stage waited for.
  for b in "${BG[@]}"; do
    wait_bg "$b" || status=1
  done
else
  kill -- -"$bg_pid" 2>/dev/null
fi
wait "$bg_pid" 2>/dev/null
table
[ "$status" = 0 ] && echo "make test: PASS" || echo "make test: FAILED"
exit "$status"
