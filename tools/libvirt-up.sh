#!/usr/bin/env bash
# Brings up a local libvirt for the demo and the acceptance tests. Idempotent: every step checks
# first and says what it did, and a libvirtd that already answers is left alone.
set -euo pipefail

POOL_NAME="${VIRT_POOL:-virt}"
POOL_DIR="${VIRT_POOL_DIR:-/var/lib/libvirt/virt-pool}"
URI="qemu:///system"

say() { printf 'libvirt-up: %s\n' "$*"; }

if [ "$(id -u)" != 0 ]; then
  say "must run as root (it installs packages and starts daemons)"; exit 1
fi

need_pkgs=()
for p in libvirt-daemon-system libvirt-clients qemu-system-x86 qemu-utils; do
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
  say "/dev/kvm is usable: domain_type defaults to kvm"
else
  say "/dev/kvm is not usable here: guests run under TCG (domain_type = \"qemu\")"
fi

# alive NAME: a process of that name runs. A killed daemon whose parent does not reap it stays a
# zombie, which pgrep would count; ps shows its state.
alive() { ps -C "$1" -o stat= 2>/dev/null | grep -qv '^Z'; }

if virsh -c "$URI" version >/dev/null 2>&1; then
  say "libvirtd already answers on $URI: leaving it alone"
else
  if ! alive virtlogd; then
    virtlogd --daemon
    say "started virtlogd"
  fi
  # A stale pid file from an earlier, killed daemon would stop a new one from starting.
  if [ -f /var/run/libvirtd.pid ] && ! alive libvirtd; then
    rm -f /var/run/libvirtd.pid
  fi
  alive libvirtd || { libvirtd --daemon; say "started libvirtd"; }
  for _ in $(seq 1 100); do
    virsh -c "$URI" version >/dev/null 2>&1 && break
    sleep 0.1
  done
  virsh -c "$URI" version >/dev/null 2>&1 || { say "libvirtd did not answer on $URI; see /var/log/libvirt"; exit 1; }
  say "libvirtd answers on $URI"
fi

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
virsh -c "$URI" pool-refresh "$POOL_NAME" >/dev/null
say "pool $POOL_NAME is ready"
