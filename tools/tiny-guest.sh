#!/usr/bin/env bash
# Builds the tiny guest the acceptance tests boot: a ~64 MiB qcow2 disk that SeaBIOS boots under
# TCG in a few seconds, made only of Debian packages (see tools/tiny-guest.md). A FAT16 file system
# written with mtools (no loop mount) carries syslinux, Debian's kernel (taken out of the
# linux-image package with dpkg-deb -x, never installed on this host) and an initramfs built here:
# a static busybox, Debian's QEMU guest agent (qemu-ga) with the shared libraries it loads, the
# block, CD-ROM and virtio-serial modules of that kernel, /bin/tiny-service (a switchable service
# for health probes) and /init, which reads the NoCloud seed, counts boots on the data disk, starts
# the agent and the service and watches the seed for a live media change. tiny-guest-broken.qcow2,
# next to the image, is the same guest whose service never starts.
#
# The image is cached under /var/cache/terraform-provider-virt/tiny-guest/ (override with
# TINY_GUEST_CACHE) and made again only when this script changes: a stamp keeps its sha256.
# Progress goes to stderr (say lines); stdout is the image path and nothing else, so
#   img=$(bash tools/tiny-guest.sh)
#   broken=$(bash tools/tiny-guest.sh --broken)   # tiny-guest-broken.qcow2, built with it
set -euo pipefail

CACHE_DIR="${TINY_GUEST_CACHE:-/var/cache/terraform-provider-virt/tiny-guest}"
IMAGE="$CACHE_DIR/tiny-guest.qcow2"
BROKEN="$CACHE_DIR/tiny-guest-broken.qcow2"
STAMP="$CACHE_DIR/stamp"
SCRIPT="$(readlink -f "${BASH_SOURCE[0]}")"
case "${1:-}" in
  "") OUT="$IMAGE" ;;
  --broken) OUT="$BROKEN" ;;
  *) printf 'usage: %s [--broken]\n' "$0" >&2; exit 2 ;;
esac

# Modules the guest loads (with their dependencies from modules.dep, in load order): virtio and
# SCSI disks, IDE (PIIX) for a CD-ROM on that bus, the CD-ROM and its file system, virtio-serial
# (virtio_console) for the guest agent's channel, and virtio network cards. The cloud kernel has no
# SATA (AHCI) driver: the provider puts every disk and the seed on virtio-scsi.
MODULES=(virtio_pci virtio_blk virtio_scsi ata_piix sd_mod sr_mod cdrom isofs virtio_console virtio_net)
# Parameters for some of them: synchronous SCSI scanning, so disks exist when insmod returns.
declare -A MODULE_PARAMS=([scsi_mod]="scan=sync")
KERNEL_CMDLINE="console=ttyS0,115200 quiet"
IMAGE_MIB=64
FAT_LABEL=TINYBOOT

say() { printf 'tiny-guest: %s\n' "$*" >&2; }

want_hash="$(sha256sum "$SCRIPT" | cut -d' ' -f1)"
current() { [ -f "$IMAGE" ] && [ -f "$BROKEN" ] && [ -f "$STAMP" ] && [ "$(head -n1 "$STAMP")" = "script-sha256 $want_hash" ]; }

if current; then
  say "image up to date ($(sed -n 's/^kernel //p' "$STAMP"), stamp $STAMP)"
  printf '%s\n' "$OUT"; exit 0
fi

if [ "$(id -u)" != 0 ]; then
  say "must run as root to build the image (it installs packages and makes device nodes)"; exit 1
fi

mkdir -p "$CACHE_DIR"
# Two test runs may ask at once: one builds, the other waits and then finds the image current.
exec 9>"$CACHE_DIR/.lock"
flock 9
if current; then
  say "image built meanwhile by another run"
  printf '%s\n' "$OUT"; exit 0
fi
if [ -f "$STAMP" ]; then say "script changed since the image was built: building it again"
else say "no image yet: building it"; fi

# Host tools, as tools/libvirt-up.sh installs its own.
need_pkgs=()
for p in syslinux syslinux-common mtools dosfstools cpio gzip kmod qemu-utils; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need_pkgs+=("$p")
done
if [ ${#need_pkgs[@]} -gt 0 ]; then
  say "installing ${need_pkgs[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq </dev/null >/dev/null
  apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" </dev/null >/dev/null
  say "installed ${need_pkgs[*]}"
else
  say "host tools already installed"
fi

work="$(mktemp -d /tmp/tiny-guest.XXXXXX)"
trap 'rm -rf "$work"' EXIT

# kernel_pkg: the versioned package linux-image-cloud-amd64 points at
# (linux-image-6.1.0-NN-cloud-amd64). Debian's cloud kernel, not the generic one: under TCG the
# generic kernel's XZ-compressed 66 MB image took about 3 CPU-seconds to unpack before its first
# line, the cloud kernel's LZ4 image about 1 (tools/tiny-guest.md, Timings).
kernel_pkg() { apt-cache depends linux-image-cloud-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ { print $2; exit }'; }
# agent_pkgs: qemu-guest-agent and the library packages it depends on, directly or not (the
# loader below picks the files it really loads out of them).
agent_pkgs() {
  echo qemu-guest-agent
  apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
    --no-enhances qemu-guest-agent 2>/dev/null | grep -v '^ ' | grep '^lib' | grep -v perl | sort -u
}
# fetch: downloads the kernel, busybox-static and the agent's packages into $work/debs, not
# installing them.
fetch() {
  local kpkg apkgs
  kpkg="$(kernel_pkg)"
  [ -n "$kpkg" ] || return 1
  mapfile -t apkgs < <(agent_pkgs)
  [ ${#apkgs[@]} -gt 1 ] || return 1
  rm -rf "$work/debs"
  mkdir -p "$work/debs"
  (cd "$work/debs" && apt-get download -qq -o APT::Sandbox::User=root "$kpkg" busybox-static "${apkgs[@]}" </dev/null >/dev/null 2>&1)
}
if ! fetch; then
  say "package lists lack the kernel, busybox-static or qemu-guest-agent: apt-get update"
  apt-get update -qq </dev/null >/dev/null
  fetch || { say "cannot download linux-image-cloud-amd64's kernel, busybox-static and qemu-guest-agent"; exit 1; }
fi
for deb in "$work"/debs/*.deb; do
  dpkg-deb -x "$deb" "$work/x"
done
say "unpacked $(cd "$work/debs" && echo *.deb)"

kver="$(basename "$(ls -d "$work"/x/lib/modules/*/)")"
vmlinuz="$work/x/boot/vmlinuz-$kver"
[ -f "$vmlinuz" ] || { say "no /boot/vmlinuz-$kver in the kernel package"; exit 1; }
busybox="$work/x/bin/busybox"
[ -x "$busybox" ] || { say "no /bin/busybox in busybox-static"; exit 1; }
# awk reads busybox's whole help text: `head -n1` would close the pipe early, and the SIGPIPE that
# busybox may then take fails the script under pipefail (seen on a fresh machine).
bbver="$("$busybox" 2>&1 | awk 'NR == 1 { print $2 }')"
say "kernel $kver, busybox $bbver"

# Modules: the package ships no modules.dep (depmod makes it on installation), so make it here,
# in the unpacked tree only.
depmod -b "$work/x" "$kver"
moddir="$work/x/lib/modules/$kver"
declare -A modpath=()
while IFS=: read -r path _; do
  m="${path##*/}"; m="${m%%.ko*}"; modpath[${m//-/_}]="$path"
done <"$moddir/modules.dep"
declare -A loaded=()
order=()
# add NAME: its dependencies first (modules.dep lists them so that the last is loaded first), then it.
add() {
  local m="${1//-/_}" line deps d i
  [ -n "${loaded[$m]:-}" ] && return 0
  if [ -z "${modpath[$m]:-}" ]; then
    if grep -q "/${1}.ko" "$moddir/modules.builtin"; then say "$1 is built into the kernel"; return 0; fi
    say "module $1 not found in $kver"; exit 1
  fi
  line="$(grep -m1 "^${modpath[$m]}:" "$moddir/modules.dep")"
  read -r -a deps <<<"${line#*:}"
  for ((i = ${#deps[@]} - 1; i >= 0; i--)); do
    d="${deps[i]##*/}"; add "${d%%.ko*}"
  done
  loaded[$m]=1
  order+=("$m")
}
for m in "${MODULES[@]}"; do add "$m"; done

root="$work/initramfs"
mkdir -p "$root"/{bin,dev,proc,sys,run,tmp,seed,etc/tiny-guest,lib/modules}
cp "$busybox" "$root/bin/busybox"
ln -s busybox "$root/bin/sh"

# The guest agent and the shared libraries it loads, resolved by the unpacked packages' own dynamic
# loader against the unpacked library directories: every one must come from a downloaded package,
# none from this host.
x="$work/x"
qga="$x/usr/bin/qemu-ga"
[ -x "$qga" ] || qga="$x/usr/sbin/qemu-ga"
[ -x "$qga" ] || { say "no qemu-ga in qemu-guest-agent"; exit 1; }
# (libc6's /lib64/ld-linux-x86-64.so.2 is an absolute symbolic link, which would lead to this host's.)
ldso="$x/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
[ -f "$ldso" ] || { say "no /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 in libc6"; exit 1; }
libpath="$x/lib/x86_64-linux-gnu:$x/usr/lib/x86_64-linux-gnu"
libs="$("$ldso" --library-path "$libpath" --list "$qga")" || { say "the loader cannot resolve qemu-ga's libraries:"; printf '%s\n' "$libs" >&2; exit 1; }
mkdir -p "$root/lib/x86_64-linux-gnu" "$root/lib64"
cp -L "$ldso" "$root/lib64/ld-linux-x86-64.so.2"
qgalibs=()
while read -r soname arrow path _; do
  [ "$arrow" = "=>" ] || continue
  case "$soname" in /*) continue ;; esac # the loader itself
  path="$(readlink -f "$path")"
  case "$path" in
    "$x"/*) cp -L "$path" "$root/lib/x86_64-linux-gnu/$soname"; qgalibs+=("$soname") ;;
    *) say "qemu-ga's $soname resolves to $path, not to a downloaded package"; exit 1 ;;
  esac
done <<<"$libs"
cp "$qga" "$root/bin/qemu-ga"
qgaver="$(dpkg-deb -f "$work"/debs/qemu-guest-agent_*.deb Version)"
say "qemu-ga $qgaver with ${qgalibs[*]}"
# The kernel opens /dev/console for /init before anything is mounted.
mknod -m 600 "$root/dev/console" c 5 1
mknod -m 666 "$root/dev/null" c 1 3
# unsign FILE: drops the signature Debian appends to each module (the kernel's 28-byte marker, a
# 12-byte descriptor whose last 4 bytes are the signature's length, big-endian, and the signature).
# The kernel then loads it unverified, as a kernel without enforcement does (it notes a taint once):
# checking 19 signatures under TCG cost about a CPU-second of every boot.
unsign() {
  local f=$1 size len
  [ "$(tail -c 28 "$f")" = "~Module signature appended~" ] || return 0
  size=$(stat -c %s "$f")
  len=$(tail -c 32 "$f" | head -c 4 | od -An -tu1 | awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4 }')
  truncate -s $((size - 28 - 12 - len)) "$f"
}
: >"$root/etc/tiny-guest/modules"
for m in "${order[@]}"; do
  src="$moddir/${modpath[$m]}"
  case "$src" in
    *.ko) cp "$src" "$root/lib/modules/$m.ko" ;;
    *.ko.xz) xz -dc "$src" >"$root/lib/modules/$m.ko" ;;
    *.ko.zst) zstd -qdc "$src" >"$root/lib/modules/$m.ko" ;;
    *) say "cannot unpack $src"; exit 1 ;;
  esac
  unsign "$root/lib/modules/$m.ko"
  printf '%s %s\n' "$m" "${MODULE_PARAMS[$m]:-}" >>"$root/etc/tiny-guest/modules"
done
say "modules, in load order: ${order[*]}"

cat >"$root/init" <<'INIT'
#!/bin/sh
# tiny-guest /init (busybox ash), written by tools/tiny-guest.sh. Every line it prints goes to
# /dev/console, the serial port ttyS0; the ones tests read start with "TINYGUEST ".
/bin/busybox --install -s /bin
PATH=/bin
export PATH
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1

say() { echo "TINYGUEST $*"; }
tab="$(printf '\t')"
cr="$(printf '\r')"

while read -r m args; do
  [ -n "$m" ] || continue
  # shellcheck disable=SC2086 # args are words
  insmod "/lib/modules/$m.ko" $args || echo "tiny-guest: insmod $m failed"
done </etc/tiny-guest/modules
# The seed is opened every second. Linux would close an open tray on each open (autoclose) and lock
# the door while it is open (lock): either can make the host's live media change (virsh change-media
# --update: open the tray, remove, insert, close) fail with "Tray of the device is not open".
echo 0 >/proc/sys/dev/cdrom/autoclose
echo 0 >/proc/sys/dev/cdrom/lock
# From here on only emergencies reach the console: a kernel message (an I/O error on the CD-ROM
# while its tray is open, say) could otherwise land in the middle of a TINYGUEST line.
dmesg -n 1
# Loopback, for guest-network-get-interfaces and anything in the guest that talks to itself.
ip link set lo up

# bytes DEV OFFSET COUNT: those bytes of DEV, NULs dropped.
bytes() { dd if="$1" bs=1 skip="$2" count="$3" 2>/dev/null | tr -d '\000'; }
# hex DEV OFFSET COUNT: those bytes of DEV in hex.
hex() { dd if="$1" bs=1 skip="$2" count="$3" 2>/dev/null | od -An -tx1 | tr -d ' \n'; }
# disks: the block devices, sorted by name.
disks() {
  for d in /sys/block/*; do
    n="${d##*/}"
    case "$n" in loop*|ram*|zram*|md*|dm-*|fd*) continue ;; esac
    [ -b "/dev/$n" ] && echo "$n"
  done
}

# find_seed: prints the device of the NoCloud seed, an ISO 9660 volume labelled cidata.
find_seed() {
  for n in $(disks); do
    dd if="/dev/$n" of=/tmp/pvd bs=2048 skip=16 count=1 2>/dev/null || continue
    [ "$(bytes /tmp/pvd 1 5)" = CD001 ] || continue
    label="$(bytes /tmp/pvd 40 32 | sed 's/ *$//')"
    case "$label" in cidata|CIDATA) echo "/dev/$n"; return 0 ;; esac
  done
  return 1
}

# load_seed: mounts the seed read-only, copies its files to /run/seed.new and unmounts it (a
# device left unmounted is opened again on each check, so the kernel notices a media change).
load_seed() {
  rm -rf /run/seed.new
  mkdir -p /run/seed.new
  dev="$(find_seed)" || return 1
  mount -t iso9660 -o ro "$dev" /seed 2>/dev/null || return 1
  for f in meta-data user-data network-config; do
    if [ -f "/seed/$f" ]; then cp "/seed/$f" "/run/seed.new/$f"; fi
  done
  umount /seed
  seed_dev="$dev"
  return 0
}
seed_sum() { (cd /run/seed.new && md5sum meta-data user-data network-config 2>/dev/null); }

# meta FILE: prints key=value for each top-level "key: value" line of a simple YAML file, the
# value's quotes removed. Nested maps and lists, comments and block scalars are left out.
meta() {
  while IFS= read -r line || [ -n "$line" ]; do
    line="${line%"$cr"}"
    case "$line" in ''|'#'*|' '*|"$tab"*|'-'*) continue ;; *:*) ;; *) continue ;; esac
    key="${line%%:*}"
    val="${line#*:}"
    case "$key" in ''|*[!A-Za-z0-9_.-]*) continue ;; esac
    case "$val" in ''|' '*|"$tab"*) ;; *) continue ;; esac
    val="$(printf '%s' "$val" | sed 's/^[[:space:]]*//; s/[[:space:]]*$//')"
    case "$val" in
      ''|'|'*|'>'*) continue ;;
      \"*\") val="${val#\"}"; val="${val%\"}" ;;
      \'*\') val="${val#\'}"; val="${val%\'}" ;;
      *) val="$(printf '%s' "${val%% #*}" | sed 's/[[:space:]]*$//')" ;;
    esac
    echo "$key=$val"
  done <"$1"
}

# show_seed: sets the hostname and prints what the seed says.
show_seed() {
  rm -rf /run/seed
  mv /run/seed.new /run/seed
  : >/run/meta
  [ -f /run/seed/meta-data ] && meta /run/seed/meta-data >/run/meta
  host="$(sed -n 's/^local-hostname=//p' /run/meta | head -n1)"
  [ -n "$host" ] && hostname "$host"
  say "hostname=$host"
  while IFS= read -r kv; do say "meta $kv"; done </run/meta
}

# 1. The seed. Modules wait for their devices' probing, so they are there; a CD-ROM may still be
# reporting its medium, so look for a few seconds.
last=""
i=0
while :; do
  if load_seed; then
    last="$(seed_sum)"
    show_seed
    break
  fi
  i=$((i + 1))
  if [ "$i" -ge 20 ]; then say "seed=none"; break; fi
  usleep 250000
done

# 2. The data disk: the first disk, by name, other than the boot disk (our FAT label) and the seed,
# writable, that carries our counter record or no partition table or file system we know.
is_data_disk() {
  d="/dev/$1"
  [ "$1" = "${seed_dev#/dev/}" ] && return 1
  case "$1" in sr*) return 1 ;; esac
  [ "$(cat "/sys/block/$1/ro" 2>/dev/null)" = 0 ] || return 1
  [ "$(bytes "$d" 0 18)" = "TINYGUEST-COUNTER " ] && return 0
  [ "$(bytes "$d" 43 8)" = TINYBOOT ] && return 1
  for p in /sys/block/"$1"/"$1"*; do [ -e "$p" ] && return 1; done
  [ "$(hex "$d" 510 2)" = 55aa ] && return 1              # MBR, GPT, FAT, NTFS boot sector
  [ "$(hex "$d" 1080 2)" = 53ef ] && return 1             # ext2/3/4
  [ "$(bytes "$d" 0 4)" = XFSB ] && return 1              # XFS
  [ "$(bytes "$d" 512 8)" = LABELONE ] && return 1        # LVM
  [ "$(bytes "$d" 32769 5)" = CD001 ] && return 1         # ISO 9660
  [ "$(bytes "$d" 4086 10)" = SWAPSPACE2 ] && return 1    # swap
  [ "$(bytes "$d" 65600 8)" = _BHRfS_M ] && return 1      # btrfs
  return 0
}
data=""
for n in $(disks); do
  if is_data_disk "$n"; then data="/dev/$n"; break; fi
done
if [ -n "$data" ]; then
  dd if="$data" of=/tmp/sector bs=512 count=1 2>/dev/null
  count="$(head -n1 /tmp/sector | tr -d '\000' | sed -n 's/^TINYGUEST-COUNTER \([0-9][0-9]*\).*/\1/p')"
  count=$((${count:-0} + 1))
  dd if=/dev/zero of=/tmp/record bs=512 count=1 2>/dev/null
  printf 'TINYGUEST-COUNTER %d\n' "$count" | dd of=/tmp/record conv=notrunc 2>/dev/null
  dd if=/tmp/record of="$data" bs=512 count=1 conv=fsync 2>/dev/null
  sync
  say "boot=$count disk=$data"
else
  say "disk=none"
fi

# 3. The guest agent, on the virtio-serial port named org.qemu.guest_agent.0 (devtmpfs made its
# /dev/vportNpM node; virtio_console may still be setting ports up, so look for a moment).
agent_port() {
  for p in /sys/class/virtio-ports/*; do
    if [ "$(cat "$p/name" 2>/dev/null)" = org.qemu.guest_agent.0 ]; then echo "/dev/${p##*/}"; return 0; fi
  done
  return 1
}
i=0
while ! port="$(agent_port)"; do
  i=$((i + 1))
  if [ "$i" -ge 10 ]; then port=""; break; fi
  usleep 100000
done
if [ -n "$port" ]; then
  mkdir -p /run/qemu-ga
  # In the background rather than -d: its daemonizing parent would wait for glib to load first.
  qemu-ga -m virtio-serial -p "$port" -t /run/qemu-ga -f /run/qemu-ga.pid -l /run/qemu-ga.log </dev/null >/dev/null 2>&1 &
  say "agent=$port"
else
  say "agent=none"
fi

# 4. The network: every card asks for an address by DHCP (busybox udhcpc, in the background so that
# a card on a network without DHCP costs the boot nothing), and a small HTTP server on port 80
# answers /healthz with the service's status.
for n in /sys/class/net/*; do
  n="${n##*/}"
  [ "$n" = lo ] && continue
  ip link set "$n" up
  udhcpc -f -i "$n" -s /bin/udhcpc-script -T 2 -A 2 </dev/null >/dev/null 2>&1 &
done
nc -ll -p 80 -e /bin/tiny-http </dev/null >/dev/null 2>&1 &

# 5. The service: started unless this image or the meta-data says it is broken.
service() {
  tiny-service start >/dev/null 2>&1
  say "service=$(tiny-service status 2>&1 | head -n1)"
}
service

say ready

# 6. Watch the seed: every second (and at once on SIGHUP) read it again; print it when it changed.
# A change of the seed (to meta-data tiny_service: broken or from it) stops or starts the service.
# Once a seed is found, a second's check is one md5sum of its device's bytes (opening the device
# is what makes the kernel notice new media), and the seed is mounted and read again only when
# they changed: finding, mounting and copying it every second took about 25 processes, which
# under TCG cost each running guest about 0.05 CPU-seconds a second, half of its idle CPU.
hup=0
trap 'hup=1' HUP
sig=""
while :; do
  sleep 1
  if [ -n "$seed_dev" ] && [ "$hup" = 0 ]; then
    now_sig="$(md5sum <"$seed_dev" 2>&1)"
    [ "$now_sig" = "$sig" ] && continue
    sig="$now_sig"
  fi
  if load_seed; then
    now="$(seed_sum)"
    if [ "$now" != "$last" ] || [ "$hup" = 1 ]; then
      last="$now"
      say reread
      show_seed
      if grep -qx 'tiny_service=broken' /run/meta; then
        tiny-service stop 'meta-data tiny_service: broken' >/dev/null 2>&1
        say "service=$(tiny-service status 2>&1 | head -n1)"
      elif ! tiny-service status >/dev/null 2>&1; then
        service
      fi
    fi
  elif [ "$hup" = 1 ]; then
    say "reread seed=none"
  fi
  hup=0
done
INIT
chmod 755 "$root/init"

cat >"$root/bin/tiny-service" <<'SERVICE'
#!/bin/sh
# tiny-service status | stop [REASON] | start (busybox ash), written by tools/tiny-guest.sh: a
# service for health probes. It runs as a process of its own (a long sleep, its pid in
# /run/tiny-service.pid); "status" exits 0 printing "ok" while that process lives, else exits 1
# printing why it does not (kept in /run/tiny-service.why).
PATH=/bin
pidf=/run/tiny-service.pid
whyf=/run/tiny-service.why
running() { [ -f "$pidf" ] && kill -0 "$(cat "$pidf")" 2>/dev/null; }
case "$1" in
status)
  if running; then echo ok; exit 0; fi
  if [ -f "$whyf" ]; then cat "$whyf"; else echo "tiny-service: not started"; fi
  exit 1 ;;
stop)
  if running; then kill "$(cat "$pidf")"; fi
  rm -f "$pidf"
  echo "tiny-service: stopped (${2:-by tiny-service stop})" >"$whyf"
  cat "$whyf" ;;
start)
  if grep -qw 'tiny_service=broken' /proc/cmdline; then
    echo "tiny-service: not started (this image's service is broken: tiny_service=broken on the kernel command line)" >"$whyf"
    cat "$whyf"; exit 1
  fi
  if grep -qx 'tiny_service=broken' /run/meta 2>/dev/null; then
    echo "tiny-service: not started (meta-data tiny_service: broken)" >"$whyf"
    cat "$whyf"; exit 1
  fi
  if running; then echo ok; exit 0; fi
  # Its own session and no descriptor of the caller's: guest-exec waits until the output pipes it
  # gave close, which a child holding them would never let happen.
  # It writes its own pid (setsid may fork), and this waits for it to be written.
  rm -f "$pidf"
  setsid sh -c 'echo $$ >/run/tiny-service.pid.new && mv /run/tiny-service.pid.new /run/tiny-service.pid && exec sleep 2147483647' </dev/null >/dev/null 2>&1 &
  i=0
  while ! running; do
    i=$((i + 1))
    if [ "$i" -ge 100 ]; then echo "tiny-service: did not start" >"$whyf"; cat "$whyf"; exit 1; fi
    usleep 50000
  done
  rm -f "$whyf"
  echo ok ;;
*)
  echo "usage: tiny-service status | stop [REASON] | start" >&2; exit 2 ;;
esac
SERVICE
chmod 755 "$root/bin/tiny-service"

cat >"$root/bin/udhcpc-script" <<'DHCP'
#!/bin/sh
# udhcpc's script (busybox ash), written by tools/tiny-guest.sh: puts the leased address on the
# card and the router in the default route, and says so on the console.
PATH=/bin
case "$1" in
deconfig)
  ip -4 addr flush dev "$interface"
  ip link set "$interface" up ;;
bound|renew)
  ifconfig "$interface" "$ip" netmask "${subnet:-255.255.255.0}"
  for r in $router; do
    route del default dev "$interface" 2>/dev/null
    route add default gw "$r" dev "$interface"
    break
  done
  echo "TINYGUEST net $interface=$ip" >/dev/console ;;
esac
exit 0
DHCP
chmod 755 "$root/bin/udhcpc-script"

cat >"$root/bin/tiny-http" <<'HTTP'
#!/bin/sh
# One HTTP request on standard input and output (busybox nc -ll -e runs it per connection),
# written by tools/tiny-guest.sh: GET /healthz answers 200 and "ok" while tiny-service runs, else
# 503 and why not; anything else 404. (busybox httpd runs programs only under /cgi-bin/ or by
# file suffix, so it could not answer /healthz with a status of its own.)
PATH=/bin
cr="$(printf '\r')"
read -r method path _ || exit 0
while read -r -t 2 line; do
  line="${line%"$cr"}"
  [ -n "$line" ] || break
done
respond() {
  printf 'HTTP/1.0 %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s\n' "$1" $((${#2} + 1)) "$2"
}
case "$method $path" in
"GET /healthz" | "GET /healthz?"*)
  if out="$(tiny-service status 2>&1)"; then respond "200 OK" "$out"; else respond "503 Service Unavailable" "$out"; fi ;;
GET*) respond "404 Not Found" "not found: $path" ;;
*) respond "405 Method Not Allowed" "only GET" ;;
esac
HTTP
chmod 755 "$root/bin/tiny-http"

(cd "$root" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet --owner=0:0) | gzip -9n >"$work/initrd.gz"
say "initramfs $(du -k "$work/initrd.gz" | cut -f1) KiB"

cat >"$work/syslinux.cfg" <<CFG
SERIAL 0 115200
DEFAULT tiny
PROMPT 0
TIMEOUT 0
LABEL tiny
  KERNEL /vmlinuz
  INITRD /initrd.gz
  APPEND $KERNEL_CMDLINE
CFG

raw="$work/boot.img"
truncate -s "${IMAGE_MIB}M" "$raw"
# A FAT16 file system over the whole disk, no partition table: SeaBIOS runs its boot sector,
# which syslinux --install (mtools, no mount) fills.
mkfs.fat -F 16 -n "$FAT_LABEL" -i 7419e57a "$raw" >/dev/null
export MTOOLS_SKIP_CHECK=1
mcopy -i "$raw" "$vmlinuz" ::vmlinuz
mcopy -i "$raw" "$work/initrd.gz" ::initrd.gz
mcopy -i "$raw" "$work/syslinux.cfg" ::syslinux.cfg
syslinux --install "$raw"
# The broken guest: the same disk whose syslinux.cfg adds tiny_service=broken to the kernel command
# line, which keeps tiny-service from ever starting.
cp "$raw" "$work/broken.img"
sed "s/^  APPEND .*/& tiny_service=broken/" "$work/syslinux.cfg" >"$work/syslinux-broken.cfg"
mcopy -o -i "$work/broken.img" "$work/syslinux-broken.cfg" ::syslinux.cfg
qemu-img convert -f raw -O qcow2 "$raw" "$work/tiny-guest.qcow2"
qemu-img convert -f raw -O qcow2 "$work/broken.img" "$work/tiny-guest-broken.qcow2"
rm -f "$STAMP"
mv -f "$work/tiny-guest.qcow2" "$IMAGE"
mv -f "$work/tiny-guest-broken.qcow2" "$BROKEN"
printf 'script-sha256 %s\nkernel %s\nbusybox %s\nqemu-guest-agent %s\nbuilt %s\n' "$want_hash" "$kver" "$bbver" "$qgaver" "$(date -u +%FT%TZ)" >"$STAMP"
say "built $IMAGE ($(du -k "$IMAGE" | cut -f1) KiB on disk, ${IMAGE_MIB} MiB virtual) and $BROKEN"
printf '%s\n' "$OUT"
