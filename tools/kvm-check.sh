#!/usr/bin/env bash
# Tells whether KVM can really run a guest on this host, by booting one: a short-lived transient
# domain of type kvm on the tiny guest (tools/tiny-guest.sh), through the system libvirtd. /dev/kvm
# being there and opening is not enough: on some hosts (nested virtualisation without VMX/SVM
# passed through, say) every KVM guest stops at once with "KVM internal error. Suberror: 1 ...
# emulation failure", and libvirt shows the domain paused (see tools/cloud-image.md, "KVM").
#
# The verdict is recorded in /run/terraform-provider-virt/kvm-check (KVM_CHECK_FILE), valid until
# the host reboots or its kernel or QEMU changes, and printed:
#   usable yes|no
#   reason <one line>
#   kernel <uname -r>
#   qemu <qemu-system-x86_64 --version, first line>
#   checked <UTC time>
# Exit status 0 either way (a host without KVM is a normal host: guests run under TCG,
# domain_type = "qemu"); 1 only when the check itself could not run (no libvirtd).
#   bash tools/kvm-check.sh [TINY_GUEST_IMAGE]   # --force checks again whatever the record says
set -euo pipefail

URI="qemu:///system"
RESULT="${KVM_CHECK_FILE:-/run/terraform-provider-virt/kvm-check}"
NAME=virt-kvm-check
DISK=/var/lib/libvirt/images/$NAME.qcow2
SERIAL=/var/log/libvirt/qemu/$NAME.serial.log
QEMU_LOG=/var/log/libvirt/qemu/$NAME.log
# Under KVM the tiny guest prints its ready line within a few seconds of the start (10 under TCG);
# a broken KVM stops the guest before SeaBIOS prints anything, and the domain leaves "running".
WAIT_SECONDS=60

say() { printf 'kvm-check: %s\n' "$*" >&2; }

force=
image=
for a in "$@"; do
  case "$a" in
    --force) force=1 ;;
    -*) printf 'usage: %s [--force] [TINY_GUEST_IMAGE]\n' "$0" >&2; exit 2 ;;
    *) image="$a" ;;
  esac
done

kernel="$(uname -r)"
qemu="$(qemu-system-x86_64 --version 2>/dev/null | head -n1 || true)"
# record USABLE REASON: writes and prints the verdict.
record() {
  mkdir -p "$(dirname "$RESULT")"
  printf 'usable %s\nreason %s\nkernel %s\nqemu %s\nchecked %s\n' "$1" "$2" "$kernel" "$qemu" "$(date -u +%FT%TZ)" >"$RESULT.new"
  mv -f "$RESULT.new" "$RESULT"
  cat "$RESULT"
}

if [ -z "$force" ] && [ -f "$RESULT" ] &&
  [ "$(sed -n 's/^kernel //p' "$RESULT")" = "$kernel" ] && [ "$(sed -n 's/^qemu //p' "$RESULT")" = "$qemu" ]; then
  say "checked before on this boot ($RESULT)"
  cat "$RESULT"; exit 0
fi

if [ ! -c /dev/kvm ]; then record no "there is no /dev/kvm"; exit 0; fi
virsh -c "$URI" version >/dev/null 2>&1 || { say "libvirtd does not answer on $URI"; exit 1; }
if ! caps=$(virsh -c "$URI" domcapabilities --virttype kvm 2>&1); then
  record no "libvirt offers no kvm domains: $(head -n1 <<<"$caps")"; exit 0
fi
[ -n "$image" ] || image="$(bash "$(dirname "${BASH_SOURCE[0]}")/tiny-guest.sh")"

mkdir -p "$(dirname "$RESULT")"
exec 8>"$(dirname "$RESULT")/kvm-check.lock"
flock 8
cleanup() {
  virsh -c "$URI" destroy "$NAME" >/dev/null 2>&1 || true
  rm -f "$DISK" "$SERIAL"
}
trap cleanup EXIT
cleanup
cp "$image" "$DISK"
chmod 0644 "$DISK"
xml="$(mktemp /tmp/kvm-check.XXXXXX.xml)"
cat >"$xml" <<XML
<domain type='kvm'>
  <name>$NAME</name>
  <memory unit='MiB'>128</memory>
  <vcpu>1</vcpu>
  <os><type arch='x86_64'>hvm</type><boot dev='hd'/></os>
  <on_crash>destroy</on_crash>
  <devices>
    <disk type='file' device='disk'>
      <driver name='qemu' type='qcow2'/>
      <source file='$DISK'/>
      <target dev='vda' bus='virtio'/>
    </disk>
    <serial type='file'><source path='$SERIAL'/><target port='0'/></serial>
  </devices>
</domain>
XML
: >"$QEMU_LOG" 2>/dev/null || true
if ! out=$(virsh -c "$URI" create "$xml" 2>&1); then
  rm -f "$xml"
  record no "a kvm domain does not start: $(tr '\n' ' ' <<<"$out")"; exit 0
fi
rm -f "$xml"
verdict=
for _ in $(seq 1 $((WAIT_SECONDS * 4))); do
  if grep -q "TINYGUEST ready" "$SERIAL" 2>/dev/null; then
    verdict=yes; break
  fi
  state="$(virsh -c "$URI" domstate "$NAME" --reason 2>/dev/null || echo "gone")"
  case "$state" in
    running*) ;;
    *)
      why="$(grep -m1 -o 'KVM internal error.*' "$QEMU_LOG" 2>/dev/null || true)"
      grep -q 'emulation failure' "$QEMU_LOG" 2>/dev/null && why="$why, emulation failure"
      verdict="no"
      reason="a kvm guest stopped before its first line: libvirt says \"$state\"${why:+; the QEMU log says: $why}"
      break
      ;;
  esac
  sleep 0.25
done
case "$verdict" in
  yes) record yes "a kvm guest (the tiny guest) booted to its ready line" ;;
  no) record no "$reason" ;;
  *) record no "a kvm guest printed nothing in $WAIT_SECONDS s (state $(virsh -c "$URI" domstate "$NAME" --reason 2>/dev/null || echo gone))" ;;
esac
