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
# The stages that need no libvirt and no real time (TEST_SIDE: vet, the fuzzing, the docs check, the
# release check, lint) run in a side lane beside the acceptance tests, from the start of
# TEST_SIDE_FROM, at nice 19: they take only the CPU the tests leave idle (a clean clone's run kept
# the 2 cores 70 % busy, the serial acceptance tests about 60 %), so they add almost nothing to the
# tests' own time and no longer come before them. Their output goes to $TEST_STAGES_DIR/side-<stage>.log
# and is printed when the lane ends; a side stage that fails stops the main lane after its
# current stage. The unit tests stay in the main lane, before the acceptance tests: some of them
# bound real time (a stalled connection's grace, a reconnect's patience), which a nice-19 process
# on a busy machine could overrun.
#
# A stage argument "A,B+C,D" is a group: A then B in the main lane, and beside them, from A's start,
# C then D in a lane of their own (at normal priority; output in $TEST_STAGES_DIR/with-<stage>.log,
# printed when the group ends). The group ends when both have; it fails if either failed. make test
# runs most of its short chaos run so, beside the real-image and smoke tests: the two share no object
# (tfchaos- names, fault proxies on sockets of the chaos run's own), and the chaos run's CPU is
# mostly idle (33 % of the 2 cores over its 4.5 minutes, measured), waiting on kills and reruns.
#
#   MAKE            make command (the GNUmakefile passes its own)
#   TEST_BG         background targets, in the order they are built (default below)
#   TEST_SIDE       side-lane stages, in order (default: none, every stage in the main lane)
#   TEST_SIDE_FROM  the main-lane stage whose start starts the side lane (default: the first stage)
#   TEST_STAGES_DIR where the logs and the table go (default /tmp/virt-test-stages)
set -uo pipefail

MAKE="${MAKE:-make}"
DIR="${TEST_STAGES_DIR:-/tmp/virt-test-stages}"
read -r -a BG <<<"${TEST_BG:-tofu release-tool lint-tool cloud-image}"
read -r -a SIDE <<<"${TEST_SIDE:-}"
SIDE_FROM="${TEST_SIDE_FROM:-${1:-}}"
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

# lane NAME NICE STAGE...: runs the stages one after the other at that nice level, each with its
# output in NAME-<stage>.log and its row in NAME-rows, stopping at the first that fails; NAME.rc is
# the lane's result and NAME.failed names the stage that failed.
lane() {
  local name=$1 level=$2 st s rc b res label
  shift 2
  label="side lane"
  [ "$name" = side ] || label="beside"
  for st in "$@"; do
    s=$(date +%s)
    rc=0
    b=$(needs "$st")
    if [ -n "$b" ] && [[ " ${BG[*]} " == *" $b "* ]]; then
      wait_bg "$b" >"$DIR/$name-$st.log" 2>&1 || rc=$?
    fi
    if [ "$rc" = 0 ]; then
      nice -n "$level" "$MAKE" --no-print-directory "$st" >>"$DIR/$name-$st.log" 2>&1 </dev/null || rc=$?
    fi
    res=ok
    [ "$rc" = 0 ] || res=FAILED
    printf '| %-28s | %-12s | %s\n' "$st ($label)" "$(fmt $(($(date +%s) - s)))" "$res" >>"$DIR/$name-rows"
    if [ "$rc" != 0 ]; then
      echo "$st" >"$DIR/$name.failed"
      echo 1 >"$DIR/$name.rc"
      return 1
    fi
  done
  echo 0 >"$DIR/$name.rc"
}

# A lane runs as this script with --lane NAME NICE STAGE..., in a process group of its own (setsid),
# so that a failed main lane can end it with its make and tests.
if [ "${1:-}" = --lane ]; then
  shift
  bg_pid="${TEST_BG_PID:-}"
  lane "$@"
  exit $?
fi

rm -f "$DIR"/bg-*.rc "$DIR"/bg-*.log "$DIR"/bg-*.secs "$DIR/harness.done" "$DIR"/side-* "$DIR"/side.* "$DIR"/with-* "$DIR"/with.*
MAKE="$MAKE" TEST_STAGES_DIR="$DIR" TEST_BG="${BG[*]}" setsid bash "$0" --background </dev/null &
bg_pid=$!

table() {
  echo
  echo "make test: wall time of each stage (background builds overlap the stages)"
  printf '| %-28s | %-12s | %s\n' stage time result
  for r in "${rows[@]}"; do printf '%s\n' "$r"; done
  [ -e "$DIR/with-rows" ] && cat "$DIR/with-rows"
  [ -e "$DIR/side-rows" ] && cat "$DIR/side-rows"
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

# start_lane NAME NICE STAGE...: starts a lane in the background; its pid is in lane_pid.
start_lane() {
  MAKE="$MAKE" TEST_STAGES_DIR="$DIR" TEST_BG="${BG[*]}" TEST_BG_PID="$bg_pid" \
    setsid bash "$0" --lane "$@" </dev/null &
  lane_pid=$!
}

# lane_report NAME STAGE...: prints a lane's logs (all of a failed stage's, the last lines of the
# others').
lane_report() {
  local name=$1 st
  shift
  for st in "$@"; do
    [ -e "$DIR/$name-$st.log" ] || continue
    echo "=== make $st ($name lane, $DIR/$name-$st.log)"
    if [ "$(cat "$DIR/$name.failed" 2>/dev/null)" = "$st" ]; then cat "$DIR/$name-$st.log"; else tail -n 5 "$DIR/$name-$st.log"; fi
  done
}

# run_group runs the stages of token "A,B+C,D": A and B here, C and D in a lane beside them.
run_group() {
  local left right rc=0 st
  local -a ls rs
  IFS=, read -r -a ls <<<"${1%%+*}"
  IFS=, read -r -a rs <<<"${1#*+}"
  rm -f "$DIR"/with.rc "$DIR"/with.failed
  start_lane with 0 "${rs[@]}"
  echo "=== beside ${ls[*]}: ${rs[*]}"
  for st in "${ls[@]}"; do
    run_stage "$st" || { rc=1; break; }
  done
  if [ "$rc" = 0 ]; then
    wait "$lane_pid"
    [ "$(cat "$DIR/with.rc" 2>/dev/null)" = 0 ] || rc=1
  else
    kill -- -"$lane_pid" 2>/dev/null
    wait "$lane_pid" 2>/dev/null
  fi
  lane_report with "${rs[@]}"
  return "$rc"
}

side_pid=
status=0
if run_stage harness; then
  touch "$DIR/harness.done"
  # The stages' own `harness` prerequisite need not check it all again (GNUmakefile).
  export VIRT_HARNESS_UP=1
  for st in "$@"; do
    if [ -z "$side_pid" ] && [ ${#SIDE[@]} -gt 0 ] && [ "$st" = "$SIDE_FROM" ]; then
      start_lane side 19 "${SIDE[@]}"
      side_pid=$lane_pid
      echo "=== side lane (nice 19, beside the stages from $st on): ${SIDE[*]}"
    fi
    if [[ "$st" == *+* ]]; then
      run_group "$st" || { status=1; break; }
    else
      run_stage "$st" || { status=1; break; }
    fi
    if [ -e "$DIR/side.failed" ]; then
      echo "test-stages: side-lane stage $(cat "$DIR/side.failed") failed: stopping after $st"
      status=1; break
    fi
  done
else
  status=1
fi
touch "$DIR/harness.done"

if [ "$status" = 0 ] && [ ${#SIDE[@]} -gt 0 ]; then
  if [ -z "$side_pid" ]; then
    echo "test-stages: TEST_SIDE_FROM=$SIDE_FROM is not one of the stages: the side lane runs now"
    start_lane side 19 "${SIDE[@]}"
    side_pid=$lane_pid
  fi
  wait "$side_pid"
  [ "$(cat "$DIR/side.rc" 2>/dev/null)" = 0 ] || status=1
elif [ -n "$side_pid" ]; then
  # The main lane failed: the side lane's stage in progress is ended with its make.
  kill -- -"$side_pid" 2>/dev/null
  wait "$side_pid" 2>/dev/null
fi
[ ${#SIDE[@]} -gt 0 ] && lane_report side "${SIDE[@]}"

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
