#!/usr/bin/env bash
# The bench's many hosts (make bench-cli BENCH_HOSTS=N, cmd/bench/cli_hosts.go): N libvirt session
# daemons on this machine, each run by a system user of its own, tfbench-h01 .. tfbench-hNN, made
# as the harness makes its hosts h2 and h3 (tools/transports-up.sh's session_up): libvirtd --daemon
# as that user with XDG_RUNTIME_DIR=/run/tfbench-hNN, reached by root at
# qemu+unix:///session?socket=/run/tfbench-hNN/libvirt/libvirt-sock, with a running dir pool named
# as the bench's pool (VIRT_POOL, default virt) in /var/lib/tfbench-hNN/virt-pool. They are the
# bench's own: h2, h3 and the system daemon are never touched, and nothing here takes the
# acceptance lock (the bench that calls it holds it; a daemon of these users is nobody else's).
#
#   bash tools/bench-hosts.sh up N     users made when missing, daemons started when they do not
#                                      answer, pools defined and started; prints the time it took and
#                                      the daemons' total RSS
#   bash tools/bench-hosts.sh uris N   the N URIs, one a line (nothing started)
#   bash tools/bench-hosts.sh down     stops every tfbench-hNN user's daemon (SIGTERM, SIGKILL after
#                                      30 s), then removes what the daemon kept: its domains'
#                                      definitions, its secrets (group records) and its pool's files
#   bash tools/bench-hosts.sh purge    down, then removes the users and their homes
#   bash tools/bench-hosts.sh rss      the running daemons' count and total RSS
#
# Each daemon probes QEMU's capabilities once, when first asked (the first domain defined), and
# caches them in its user's ~/.cache/libvirt: up asks for them (virsh domcapabilities), so that the
# probe, about a second of CPU per user, is not inside a timed create. A second up finds the cache.
set -euo pipefail

# shellcheck source=tools/transports-up.sh
. "$(dirname "${BASH_SOURCE[0]}")/transports-up.sh"
say() { printf 'bench-hosts: %s\n' "$*"; }

BENCH_USER_PREFIX=tfbench-h
SESSION_POOL=${VIRT_POOL:-virt}
# How many daemons start at once: each start is mostly waiting for the daemon to answer, and a
# batch bounds the CPU of their first moments (and of the capability probes) on a shared machine.
BATCH=${BENCH_HOSTS_BATCH:-5}
MAX_HOSTS=99

user_of() { printf '%s%02d' "$BENCH_USER_PREFIX" "$1"; }

# bench_vars I: session_vars for the bench host I.
bench_vars() {
  local u
  u=$(user_of "$1")
  session_vars "$u" "/run/$u" "/var/lib/$u"
}

uri_of() { bench_vars "$1"; printf '%s\n' "$S_URI"; }

# bench_users: the tfbench-hNN users that exist, one a line.
bench_users() { getent passwd | cut -d: -f1 | grep -E "^${BENCH_USER_PREFIX}[0-9]{2}\$" || true; }

# host_up I: session_up for the bench host I, then its capabilities probed (cached after).
host_up() {
  bench_vars "$1"
  session_up "$S_USER" "$S_RUNTIME" "$S_HOME" >/dev/null
  local caps=$S_HOME/.cache/libvirt/qemu/cache/capabilities
  if [ -z "$(ls -A "$caps" 2>/dev/null)" ]; then
    timeout 120 virsh -c "$S_URI" domcapabilities --virttype qemu >/dev/null
  fi
}

rss() {
  local total=0 n=0 u pid kib
  for u in $(bench_users); do
    session_vars "$u" "/run/$u" "/var/lib/$u"
    if pid=$(session_pid); then
      kib=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)
      total=$((total + kib))
      n=$((n + 1))
    fi
  done
  say "$n daemons running, RSS $((total / 1024)) MiB in all ($((n > 0 ? total / n / 1024 : 0)) MiB each)"
}

up() {
  local n=$1 i t0 pids=() failed=0
  t0=$(date +%s.%N)
  for i in $(seq 1 "$n"); do
    host_up "$i" &
    pids+=($!)
    if [ "${#pids[@]}" -ge "$BATCH" ] || [ "$i" -eq "$n" ]; then
      for p in "${pids[@]}"; do wait "$p" || failed=$((failed + 1)); done
      pids=()
    fi
  done
  if [ "$failed" -gt 0 ]; then
    say "$failed of $n hosts did not come up (logs in /var/lib/${BENCH_USER_PREFIX}NN/.cache/libvirt/libvirtd.log)"
    return 1
  fi
  # Every host answers with its pool running, checked after the batches.
  # (The output is captured first: with pipefail, grep -q closing the pipe early would fail virsh.)
  local info
  for i in $(seq 1 "$n"); do
    bench_vars "$i"
    info=$(timeout 30 virsh -c "$S_URI" pool-info "$SESSION_POOL" 2>&1) || true
    grep -Eq '^State:[[:space:]]+running' <<<"$info" ||
      { say "host $i ($S_URI): pool $SESSION_POOL is not running: $info"; return 1; }
  done
  say "$n hosts up in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s (${BATCH} at a time): $(uri_of 1) .. $(uri_of "$n"), pool $SESSION_POOL"
  rss
}

# clean_home U: what the stopped daemon of user U kept of the bench: its domains' definitions, its
# secrets (the group records) and its pool's files. Its pool's definition and capability cache stay.
clean_home() {
  session_vars "$1" "/run/$1" "/var/lib/$1"
  local cfg=$S_HOME/.config/libvirt
  rm -f "$cfg"/qemu/*.xml "$cfg"/qemu/autostart/*.xml "$cfg"/secrets/*.xml "$cfg"/secrets/*.base64
  rm -rf "$S_HOME/.local/share/libvirt/qemu/nvram"
  if [ -d "$S_POOL_DIR" ]; then find "$S_POOL_DIR" -mindepth 1 -delete; fi
}

down() {
  local u pid stopped=0 users
  users=$(bench_users)
  for u in $users; do
    session_vars "$u" "/run/$u" "/var/lib/$u"
    if pid=$(session_pid); then
      stop_pid "$pid" "$u's session daemon" >/dev/null &
      stopped=$((stopped + 1))
    fi
  done
  wait
  for u in $users; do
    session_vars "$u" "/run/$u" "/var/lib/$u"
    if session_pid >/dev/null; then
      say "$u's session daemon is still running"
      return 1
    fi
    clean_home "$u"
  done
  say "stopped $stopped daemons; removed the domains, secrets and pool files of $(wc -w <<<"$users") users"
}

purge() {
  down
  local u
  for u in $(bench_users); do
    userdel -r "$u" 2>/dev/null || userdel "$u"
    rm -rf "/var/lib/$u" "/run/$u"
  done
  say "removed the users ${BENCH_USER_PREFIX}NN and their homes"
}

count() {
  [[ ${1:-} =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ] && [ "$1" -le "$MAX_HOSTS" ] ||
    { echo "bench-hosts: N must be 1..$MAX_HOSTS" >&2; exit 2; }
}

[ "$(id -u)" = 0 ] || { say "must run as root"; exit 1; }
case "${1:-}" in
up) count "${2:-}"; up "$2" ;;
uris) count "${2:-}"; for i in $(seq 1 "$2"); do uri_of "$i"; done ;;
down) down ;;
purge) purge ;;
rss) rss ;;
*)
  sed -n '11,20p' "$0" >&2
  exit 2
  ;;
esac
