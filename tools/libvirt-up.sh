#!/usr/bin/env bash
# Brings up a local libvirt for the demo and the acceptance tests, with every transport the
# provider speaks (tools/transports-up.sh: TCP and TLS listeners on 127.0.0.1, an sshd, and the
# session daemons of two other users, which are also the hosts h2 and h3 of the multi-host
# tests). Idempotent: every step checks first and says what it did; a libvirtd that already
# answers on the unix socket, TCP and TLS is left alone, and one that does not listen yet is
# restarted only under the acceptance-test lock. Daemons are started without the descriptors this
# script inherited (see detached), so none keeps the lock. cmd/chaos runs this script to
# bring back the libvirtd it kills.
#
# --demo brings up only what make demo uses (tools/demo.sh): the packages of libvirt and QEMU (and
# the tiny guest's build tools and jq, in the same apt-get run), the user, groups and directories
# libvirtd needs, a system libvirtd answering on its unix socket and the pool. No certificates,
# listeners, sshd, session daemons (h2, h3), network "default", virtiofsd, OVMF or KVM check: the
# demo's members run under TCG on user networking. A later make harness adds them (it restarts a
# libvirtd that does not listen, under the acceptance-test lock; guests keep running).
#
# VIRT_UP_TIMES=FILE appends a line "<phase>\t<seconds>" to FILE as each phase ends (make demo's
# table of step times).
set -euo pipefail

mode=full
case "${1:-}" in
  "") ;;
  --demo) mode=demo ;;
  *) printf 'usage: %s [--demo]\n' "$0" >&2; exit 2 ;;
esac

POOL_NAME="${VIRT_POOL:-virt}"
POOL_DIR="${VIRT_POOL_DIR:-/var/lib/libvirt/virt-pool}"
URI="qemu:///system"

say() { printf 'libvirt-up: %s\n' "$*"; }
# phase NAME: the time since the previous phase ended (or the script started), into VIRT_UP_TIMES.
phase_t0=$(date +%s.%N)
phase() {
  local now
  now=$(date +%s.%N)
  [ -z "${VIRT_UP_TIMES:-}" ] || awk -v n="$1" -v a="$phase_t0" -v b="$now" 'BEGIN { printf "%s\t%.1f\n", n, b - a }' >>"$VIRT_UP_TIMES"
  phase_t0=$now
}
# shellcheck source=tools/transports-up.sh
. "$(dirname "${BASH_SOURCE[0]}")/transports-up.sh"

if [ "$(id -u)" != 0 ]; then
  say "must run as root (it installs packages and starts daemons)"; exit 1
fi

# libvirt and QEMU: what the demo needs. The harness adds sshd and openssl (transports), genisoimage
# (a seed test compares the provider's ISO with it), dnsmasq-base (the network "default") and OVMF,
# the UEFI firmware of firmware = "efi" members (libvirt finds its builds, with and without Secure
# Boot, by their descriptors in /usr/share/qemu/firmware), and swtpm with swtpm-tools, which
# libvirt runs for the emulated TPM of tpm {} members (the demo has none). The tiny guest's build tools
# (tools/tiny-guest.sh's need_pkgs, which it installs itself when missing) come in the same apt-get
# run: on a fresh machine one run instead of two.
pkgs=(libvirt-daemon-system libvirt-clients qemu-system-x86 qemu-utils syslinux syslinux-common mtools dosfstools cpio gzip kmod)
if [ "$mode" = demo ]; then
  pkgs+=(jq) # demo.sh reads plans with it
else
  pkgs+=(openssh-server openssl genisoimage dnsmasq-base ovmf swtpm swtpm-tools)
fi
need_pkgs=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need_pkgs+=("$p")
done
if [ ${#need_pkgs[@]} -gt 0 ]; then
  say "installing ${need_pkgs[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq </dev/null >/dev/null
  # Debian's postinst scripts try to start services; in a container without systemd that fails
  # harmlessly, so policy-rc.d keeps them from trying at all.
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d
  apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" </dev/null >/dev/null
  rm -f /usr/sbin/policy-rc.d
  say "installed ${need_pkgs[*]}"
else
  say "packages already installed"
fi
phase packages

# full_only: the rest of the harness, which make demo leaves out (--demo).
full_only() { [ "$mode" = full ]; }

# virtiofs shares (template.filesystem): libvirt finds virtiofsd through QEMU's vhost-user
# descriptions of type "fs". Debian 12 ships the C virtiofsd in qemu-system-common with its
# description (/usr/share/qemu/vhost-user/50-qemu-virtiofsd.json -> /usr/lib/qemu/virtiofsd);
# later releases have a separate virtiofsd package, installed when no description is there.
virtiofsd_json() { grep -ls '"type": *"fs"' /usr/share/qemu/vhost-user/*.json 2>/dev/null | head -1; }
if full_only && [ -z "$(virtiofsd_json)" ] && apt-cache show virtiofsd >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends virtiofsd </dev/null >/dev/null && say "installed virtiofsd"
fi
if full_only; then
  vfs_json=$(virtiofsd_json)
  vfs_bin=$(sed -n 's/.*"binary": *"\([^"]*\)".*/\1/p' "${vfs_json:-/dev/null}" 2>/dev/null)
  if [ -n "$vfs_bin" ] && [ -x "$vfs_bin" ]; then
    say "virtiofsd: $vfs_bin (from $vfs_json)"
  else
    say "no virtiofsd that libvirt can find: virtiofs shares (template.filesystem) will not start"
  fi
fi

# swtpm's local CA (the emulated TPM's EK certificates): libvirt runs swtpm as tss, the user
# swtpm-tools makes, but a libvirtd started before that package was installed runs it as root, and
# the files root leaves in /var/lib/swtpm-localca then lock tss out after the next libvirtd start
# ("Need read/write rights on /var/lib/swtpm-localca/.lock.swtpm-localca for user tss"). Root can
# write what tss owns, so the directory goes back to tss at every harness run.
if full_only && getent passwd tss >/dev/null && [ -d /var/lib/swtpm-localca ]; then
  if [ -n "$(find /var/lib/swtpm-localca ! -user tss -print -quit)" ]; then
    chown -R tss:root /var/lib/swtpm-localca
    say "gave /var/lib/swtpm-localca back to tss (swtpm's local CA)"
  fi
fi

getent group kvm >/dev/null || { groupadd --system kvm; say "created group kvm"; }
getent group libvirt-qemu >/dev/null || { groupadd --system libvirt-qemu; say "created group libvirt-qemu"; }
getent passwd libvirt-qemu >/dev/null || {
  useradd --system --no-create-home --home-dir /var/lib/libvirt -g kvm -s /usr/sbin/nologin libvirt-qemu
  say "created user libvirt-qemu"
}
for d in /var/log/libvirt /var/log/libvirt/qemu /var/run/libvirt /var/lib/libvirt/images; do
  [ -d "$d" ] || { mkdir -p "$d"; say "created $d"; }
done

# Debian's udev rule gives /dev/kvm to group kvm, mode 0660; without udev it can stay root's
# alone. libvirt probes QEMU as root (KVM there) but checks /dev/kvm as libvirt-qemu (no KVM),
# finds its capability cache stale on every domain definition, and probes QEMU again each time:
# 40 s per define on these machines. Do what udev would.
if [ -c /dev/kvm ] && [ "$(stat -c %G:%a /dev/kvm)" != "kvm:660" ]; then
  chgrp kvm /dev/kvm && chmod 0660 /dev/kvm && say "gave /dev/kvm to group kvm, mode 0660, as Debian's udev rule does"
fi

if [ -e /dev/kvm ] && [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
  say "/dev/kvm opens (whether KVM runs guests is checked by booting one, at the end)"
else
  say "/dev/kvm is not usable here: guests run under TCG (domain_type = \"qemu\")"
fi

# alive NAME: a process of that name runs as root (a session daemon of another user is not the
# system's). A killed daemon whose parent does not reap it stays a zombie, which pgrep would count;
# ps shows its state.
alive() { ps -C "$1" -o uid=,stat= 2>/dev/null | awk '$1 == 0 && $2 !~ /^Z/ { found = 1 } END { exit !found }'; }

# The certificates and the listeners' configuration come first: libvirtd with --listen does not
# start without them.
if full_only; then
  transports_pki
  transports_libvirtd_conf
fi
phase setup

# start_libvirtd: virtlogd and the system libvirtd, listening as libvirtd.conf says (--listen: the
# TCP and TLS listeners are off without it; --demo starts it without), then waits until it answers.
start_libvirtd() {
  local listen=--listen
  full_only || listen=
  if ! alive virtlogd; then
    detached virtlogd --daemon
    say "started virtlogd"
  fi
  # A stale pid file from an earlier, killed daemon would stop a new one from starting.
  if [ -f /var/run/libvirtd.pid ] && ! alive libvirtd; then
    rm -f /var/run/libvirtd.pid
  fi
  # detached: a daemon must not inherit the acceptance lock this script may run under.
  # shellcheck disable=SC2086 # listen is one word or none
  alive libvirtd || { detached libvirtd --daemon $listen; say "started libvirtd $listen"; }
  for _ in $(seq 1 100); do
    virsh -c "$URI" version >/dev/null 2>&1 && break
    sleep 0.1
  done
  virsh -c "$URI" version >/dev/null 2>&1 || { say "libvirtd did not answer on $URI; see /var/log/libvirt"; exit 1; }
  say "libvirtd answers on $URI"
}

# restart_libvirtd: a system libvirtd that answers on its socket but not on TCP or TLS (started
# before the harness listened, or before its certificates changed) is stopped and started again
# with --listen. Guests keep running: their QEMU processes outlive libvirtd.
restart_libvirtd() {
  if transports_listening; then
    say "libvirtd listens on TCP and TLS now (restarted while this waited)"
    return 0
  fi
  local pid
  for pid in $(ps -C libvirtd -o pid=,uid=,stat= | awk '$2 == 0 && $3 !~ /^Z/ { print $1 }'); do
    stop_pid "$pid" "libvirtd"
  done
  start_libvirtd
}

# wait_listening: after a start, the TCP and TLS listeners answer too.
wait_listening() {
  local ok=
  for _ in $(seq 1 50); do transports_listening && { ok=1; break; }; sleep 0.1; done
  [ -n "$ok" ] || { say "libvirtd does not answer on qemu+tcp://127.0.0.1:$TCP_PORT/system or qemu+tls://127.0.0.1:$TLS_PORT/system; see /var/log/libvirt"; exit 1; }
  say "libvirtd answers on tcp 127.0.0.1:$TCP_PORT and tls 127.0.0.1:$TLS_PORT"
}

if ! full_only; then
  if virsh -c "$URI" version >/dev/null 2>&1; then
    say "libvirtd already answers on $URI: leaving it alone"
  else
    start_libvirtd
  fi
elif virsh -c "$URI" version >/dev/null 2>&1; then
  if transports_listening; then
    say "libvirtd already answers on $URI, tcp 127.0.0.1:$TCP_PORT and tls 127.0.0.1:$TLS_PORT: leaving it alone"
  else
    say "libvirtd answers on $URI but not on tcp 127.0.0.1:$TCP_PORT and tls 127.0.0.1:$TLS_PORT: restarting it with --listen"
    with_acc_lock restart_libvirtd
    wait_listening
  fi
else
  start_libvirtd
  wait_listening
fi
phase libvirtd

if ! virsh -c "$URI" pool-info "$POOL_NAME" >/dev/null 2>&1; then
  mkdir -p "$POOL_DIR"
  virsh -c "$URI" pool-define-as "$POOL_NAME" dir --target "$POOL_DIR" >/dev/null
  say "defined dir pool $POOL_NAME at $POOL_DIR"
fi
# The output is captured first: with pipefail, grep -q closing the pipe early would fail virsh.
pool_info=$(virsh -c "$URI" pool-info "$POOL_NAME")
if ! grep -q running <<<"$pool_info"; then
  virsh -c "$URI" pool-start "$POOL_NAME" >/dev/null
  say "started pool $POOL_NAME"
fi
virsh -c "$URI" pool-autostart "$POOL_NAME" >/dev/null 2>&1 || true
# A refresh is refused while a volume job runs in the pool (another agent's tests, or the chaos run
# this script restarts libvirtd for): the pool is active then, and the refresh can wait for next time.
refreshed=
for _ in $(seq 1 20); do
  if out=$(virsh -c "$URI" pool-refresh "$POOL_NAME" 2>&1 >/dev/null); then refreshed=1; break; fi
  grep -q "asynchronous jobs running" <<<"$out" || { printf '%s\n' "$out" >&2; exit 1; }
  sleep 0.5
done
[ -n "$refreshed" ] || say "pool $POOL_NAME has volume jobs running: not refreshed this time"
say "pool $POOL_NAME is ready"
phase pool
if ! full_only; then
  say "ready for make demo (make harness brings up the rest: listeners, sshd, session daemons, network default)"
  exit 0
fi

# The network "default" (NAT, DHCP by dnsmasq on virbr0, 192.168.122.0/24), which Debian's
# libvirt defines but does not start here: the tests of tcp and http health probes put the tiny
# guest on it and reach it from this machine at the address it leased.
NET_NAME="${VIRT_NETWORK:-default}"
if net_info=$(virsh -c "$URI" net-info "$NET_NAME" 2>/dev/null); then
  if grep -qE '^Active: +yes' <<<"$net_info"; then
    say "network $NET_NAME is active"
  elif out=$(virsh -c "$URI" net-start "$NET_NAME" 2>&1); then
    say "started network $NET_NAME"
  else
    say "network $NET_NAME does not start ($out): the tcp and http probe tests will be skipped"
  fi
else
  say "there is no network $NET_NAME: the tcp and http probe tests will be skipped"
fi

transports_sshd
transports_session
transports_summary
phase transports

# The tiny guest the acceptance tests boot (tools/tiny-guest.md): built from Debian packages once
# and cached; when it is current this only prints its path.
tiny=$(bash "$(dirname "${BASH_SOURCE[0]}")/tiny-guest.sh")
say "tiny guest image: $tiny"
say "tiny guest image whose service never starts: $(bash "$(dirname "${BASH_SOURCE[0]}")/tiny-guest.sh" --broken)"
phase tiny-guest

# The real cloud image the TestAccReal tests boot (tools/cloud-image.md) is not built here: it takes
# 2.5 to 7 minutes from Debian packages, and only the real-image targets use it (make cloud-image,
# a prerequisite of make testacc-real and testacc-real-short), not the demo or make testacc.

# Whether KVM can really run a guest here, found by booting the tiny guest as a kvm domain
# (tools/kvm-check.sh; recorded in /run/terraform-provider-virt/kvm-check until the next boot).
# The tests use domain_type = "qemu" whatever it says.
kvm=$(bash "$(dirname "${BASH_SOURCE[0]}")/kvm-check.sh" "$tiny")
if grep -qx 'usable yes' <<<"$kvm"; then
  say "KVM runs guests here: $(sed -n 's/^reason //p' <<<"$kvm")"
else
  say "KVM cannot run guests here: $(sed -n 's/^reason //p' <<<"$kvm"); use domain_type = \"qemu\""
fi
phase kvm-check
