#!/usr/bin/env bash
# Builds the real cloud image the real-image acceptance tests boot (TestAccReal..., make
# testacc-real): Debian 12 with systemd, cloud-init (NoCloud datasource), qemu-guest-agent and
# Debian's cloud kernel, made only of Debian packages (debootstrap) and no loop device or mount (see
# tools/cloud-image.md). One 2 GiB GPT disk boots under both SeaBIOS and OVMF:
#   partition 1, the EFI system partition (FAT32, made with mkfs.fat and filled with mtools): the
#     kernel and initramfs, syslinux for BIOS (syslinux's gptmbr.bin in the MBR chains to it: the
#     partition has GPT's "legacy BIOS bootable" attribute) and systemd-boot for UEFI
#     (EFI/BOOT/BOOTX64.EFI, the removable-media path OVMF boots without any boot entry);
#   partition 2, the root file system (ext4 written by mkfs.ext4 -d from the debootstrap tree).
# Both loaders boot the same kernel with console=ttyS0, so the serial log shows the boot and
# cloud-init's stages.
#
# The image is cached under /var/cache/terraform-provider-virt/cloud-image/ (override with
# CLOUD_IMAGE_CACHE) and made again only when its inputs change: this script, or the version the
# package lists give one of the packages it names. A stamp keeps both. Progress goes to stderr
# (say lines); stdout is the image path and nothing else:
#   img=$(bash tools/cloud-image.sh)
#   bash tools/cloud-image.sh --check   # exit 0 when the cached image is current, 1 otherwise
set -euo pipefail

CACHE_DIR="${CLOUD_IMAGE_CACHE:-/var/cache/terraform-provider-virt/cloud-image}"
IMAGE="$CACHE_DIR/debian-12-cloud.qcow2"
STAMP="$CACHE_DIR/stamp"
SCRIPT="$(readlink -f "${BASH_SOURCE[0]}")"
MIRROR="${CLOUD_IMAGE_MIRROR:-http://deb.debian.org/debian}"
SUITE=bookworm
check_only=
case "${1:-}" in
  "") ;;
  --check) check_only=1 ;;
  *) printf 'usage: %s [--check]\n' "$0" >&2; exit 2 ;;
esac

# What the guest holds, besides debootstrap's minbase: systemd as init, Debian's cloud kernel (it
# has virtio, virtiofs and the CD-ROM's iso9660) with an initramfs, cloud-init with growpart
# (cloud-guest-utils: the root partition grows to a bigger boot disk), the guest agent, and iproute2
# (cloud-init's networkd renderer and the agent's network calls). Networking is systemd-networkd,
# which systemd ships: cloud-init renders network_config for it (see 99-virt.cfg below).
# debootstrap does not resolve virtual packages: python3-cffi-backend provides the
# python3-cffi-backend-api-* that python3-cryptography (cloud-init, through python3-oauthlib) needs.
PACKAGES=(systemd-sysv udev dbus linux-image-cloud-amd64 initramfs-tools zstd cloud-init cloud-guest-utils
  qemu-guest-agent iproute2 ca-certificates python3-cffi-backend)
# Modules the initramfs loads to find the root file system: virtio disks and SCSI disks (the
# provider's boot disk is on a virtio-scsi controller), ext4.
INITRAMFS_MODULES=(virtio_pci virtio_scsi virtio_blk sd_mod ext4)
DISK_MIB=2048
ESP_MIB=128
# Fixed identities, so that two builds from the same inputs make the same partition table and file
# systems, and the loaders can name the root file system without reading it.
DISK_GUID=6d5a1f3e-2c1b-4c8e-9a51-7c3a4e0b9d01
ESP_GUID=6d5a1f3e-2c1b-4c8e-9a51-7c3a4e0b9d02
ROOT_PARTUUID=6d5a1f3e-2c1b-4c8e-9a51-7c3a4e0b9d03
ROOT_UUID=6d5a1f3e-2c1b-4c8e-9a51-7c3a4e0b9d04
ESP_SERIAL=5eed0c1d
KERNEL_CMDLINE="root=UUID=$ROOT_UUID ro console=tty0 console=ttyS0,115200"

say() { printf 'cloud-image: %s\n' "$*" >&2; }

# inputs: this script's hash and the candidate version of every package named above, as the
# host's package lists give them (the mirror is a fixed snapshot, so they change only when the lists
# do). Empty when the lists do not know them all (no apt-get update yet).
inputs() {
  local versions
  versions="$(apt-cache policy "${PACKAGES[@]}" 2>/dev/null | awk '/^[^ ]/ { p = $1 } /Candidate:/ { print p, $2 }')"
  if [ "$(grep -vc '(none)' <<<"$versions")" != "${#PACKAGES[@]}" ]; then return 0; fi
  printf '%s\n' "$versions" | tr '\n' ' ' | sed 's/ *$//'
}
want_hash="$(sha256sum "$SCRIPT" | cut -d' ' -f1)"
want_inputs="$(inputs)"
# current: the image and its stamp exist, the stamp has this script's hash and, when the package
# lists can tell, the same package versions.
current() {
  [ -f "$IMAGE" ] && [ -f "$STAMP" ] || return 1
  [ "$(sed -n 's/^script-sha256 //p' "$STAMP")" = "$want_hash" ] || return 1
  [ -z "$want_inputs" ] || [ "$(sed -n 's/^packages //p' "$STAMP")" = "$want_inputs" ]
}

if current; then
  say "image up to date ($(sed -n 's/^kernel //p' "$STAMP"), cloud-init $(sed -n 's/^cloud-init //p' "$STAMP"), stamp $STAMP)"
  printf '%s\n' "$IMAGE"; exit 0
fi
[ -z "$check_only" ] || { say "no current image at $IMAGE"; exit 1; }

if [ "$(id -u)" != 0 ]; then
  say "must run as root to build the image (debootstrap)"; exit 1
fi

mkdir -p "$CACHE_DIR"
# Two runs may ask at once: one builds, the other waits and then finds the image current.
exec 9>"$CACHE_DIR/.lock"
flock 9
if current; then
  say "image built meanwhile by another run"
  printf '%s\n' "$IMAGE"; exit 0
fi
if [ -f "$STAMP" ]; then say "this script or the package versions changed since the image was built: building it again"
else say "no image yet: building it (about 10 minutes on 2 cores)"; fi
started=$(date +%s)

need_pkgs=()
for p in debootstrap mtools dosfstools syslinux syslinux-common fdisk e2fsprogs qemu-utils; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need_pkgs+=("$p")
done
export DEBIAN_FRONTEND=noninteractive
if [ ${#need_pkgs[@]} -gt 0 ]; then
  say "installing ${need_pkgs[*]}"
  apt-get update -qq </dev/null >/dev/null
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${need_pkgs[@]}" </dev/null >/dev/null
  say "installed ${need_pkgs[*]}"
fi
[ -n "$want_inputs" ] || { apt-get update -qq </dev/null >/dev/null; want_inputs="$(inputs)"; }
[ -n "$want_inputs" ] || { say "the package lists lack one of ${PACKAGES[*]}"; exit 1; }

work="$(mktemp -d /var/tmp/cloud-image.XXXXXX)"
root="$work/root"
mounted=()
cleanup() {
  local m i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do m="${mounted[i]}"; umount -l "$m" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# 1. The root tree. debootstrap's log goes to a file shown only on failure.
say "debootstrap $SUITE from $MIRROR with ${PACKAGES[*]}"
# The downloaded packages are kept beside the image: a rebuild fetches only what changed.
mkdir -p "$CACHE_DIR/debs"
if ! debootstrap --cache-dir="$CACHE_DIR/debs" --variant=minbase --components=main --include="$(IFS=,; echo "${PACKAGES[*]}")" \
  "$SUITE" "$root" "$MIRROR" >"$work/debootstrap.log" 2>&1; then
  tail -n 40 "$work/debootstrap.log" >&2
  [ -f "$root/debootstrap/debootstrap.log" ] && tail -n 40 "$root/debootstrap/debootstrap.log" >&2
  say "debootstrap failed"; exit 1
fi
say "debootstrap done after $(($(date +%s) - started)) s"

# in_root CMD...: runs CMD in the tree, with /proc, /sys and /dev there (initramfs-tools and
# systemctl want them), mounted for the build only.
for fs in proc sys dev; do
  case "$fs" in
    proc) mount -t proc proc "$root/proc" ;;
    sys) mount -t sysfs sysfs "$root/sys" ;;
    dev) mount --bind /dev "$root/dev" ;;
  esac
  mounted+=("$root/$fs")
done
in_root() { LC_ALL=C chroot "$root" "$@"; }

# 2. The guest's configuration.
# cloud-init: NoCloud only (the seed CD-ROM labelled cidata the provider attaches), None when there
# is no seed (so a boot without one does not wait on network datasources); network_config is
# rendered for systemd-networkd.
cat >"$root/etc/cloud/cloud.cfg.d/99-virt.cfg" <<'CFG'
# Written by terraform-provider-virt's tools/cloud-image.sh.
datasource_list: [ NoCloud, None ]
system_info:
  network:
    renderers: [ networkd ]
    activators: [ networkd ]
CFG
in_root systemctl enable systemd-networkd.service >/dev/null 2>&1
# Without a network_config cloud-init's fallback configuration asks DHCP on the first card. A card
# with no DHCP server must not hold the boot: networkd-wait-online gives up after 30 s, not 2 min.
mkdir -p "$root/etc/systemd/system/systemd-networkd-wait-online.service.d"
cat >"$root/etc/systemd/system/systemd-networkd-wait-online.service.d/virt.conf" <<'CONF'
[Service]
ExecStart=
ExecStart=/lib/systemd/systemd-networkd-wait-online --any --timeout=30
CONF
# Timers and jobs that would only cost a test guest CPU (e2scrub_reap alone took 20 s of a TCG boot).
for t in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service fstrim.timer; do
  in_root systemctl disable "$t" >/dev/null 2>&1 || true
done
cat >"$root/etc/fstab" <<FSTAB
# Written by terraform-provider-virt's tools/cloud-image.sh.
UUID=$ROOT_UUID / ext4 errors=remount-ro 0 1
FSTAB
# Each guest gets its own identity: an empty machine-id is filled at first boot; cloud-init sets the
# hostname from local-hostname.
: >"$root/etc/machine-id"
rm -f "$root/var/lib/dbus/machine-id"
echo debian >"$root/etc/hostname"
printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"
rm -f "$root/etc/resolv.conf"
printf 'deb %s %s main\n' "$MIRROR" "$SUITE" >"$root/etc/apt/sources.list"
# The initramfs: only the modules that find the root file system (initramfs-tools' "dep" cannot
# tell them inside a build tree; "most" triples its size and the time the loaders take to read it).
sed -i 's/^MODULES=.*/MODULES=list/; s/^COMPRESS=.*/COMPRESS=zstd/' "$root/etc/initramfs-tools/initramfs.conf"
printf '%s\n' "${INITRAMFS_MODULES[@]}" >>"$root/etc/initramfs-tools/modules"
in_root update-initramfs -u -k all >"$work/initramfs.log" 2>&1 || { cat "$work/initramfs.log" >&2; say "update-initramfs failed"; exit 1; }
kver="$(basename "$(ls -d "$root"/lib/modules/*/ | tail -n1)")"
[ -f "$root/boot/vmlinuz-$kver" ] && [ -f "$root/boot/initrd.img-$kver" ] || { say "no kernel or initramfs for $kver in /boot"; exit 1; }
modinfo -b "$root" -k "$kver" virtiofs >/dev/null 2>&1 || { say "kernel $kver has no virtiofs module"; exit 1; }
cloudinit_ver="$(in_root dpkg-query -W -f='${Version}' cloud-init)"
systemd_ver="$(in_root dpkg-query -W -f='${Version}' systemd)"
qga_ver="$(in_root dpkg-query -W -f='${Version}' qemu-guest-agent)"
say "kernel $kver, systemd $systemd_ver, cloud-init $cloudinit_ver, qemu-guest-agent $qga_ver"
for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount "${mounted[i]}"; done
mounted=()

# What a guest never needs from the build: package caches and lists, documentation, manuals,
# translations (locales stay: C.UTF-8 is built in).
rm -rf "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
  "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/* \
  "$root"/var/log/*.log "$root"/var/log/apt/* "$root"/debootstrap "$root"/var/cache/debconf/*-old
say "root tree $(du -sm "$root" | cut -f1) MiB"

# 3. The EFI system partition: a FAT32 file system of its own file, its hidden-sector count the
# partition's start (syslinux's boot sector adds it to find ldlinux.sys on the disk).
esp="$work/esp.img"
esp_start=2048
truncate -s "${ESP_MIB}M" "$esp"
mkfs.fat -F 32 -n EFI -i "$ESP_SERIAL" -h "$esp_start" "$esp" >/dev/null
export MTOOLS_SKIP_CHECK=1
cat >"$work/syslinux.cfg" <<CFG
SERIAL 0 115200
DEFAULT debian
PROMPT 0
TIMEOUT 0
LABEL debian
  LINUX /vmlinuz
  INITRD /initrd.img
  APPEND $KERNEL_CMDLINE
CFG
printf 'default debian.conf\ntimeout 0\n' >"$work/loader.conf"
cat >"$work/debian.conf" <<CONF
title Debian 12 (terraform-provider-virt cloud image)
linux /vmlinuz
initrd /initrd.img
options $KERNEL_CMDLINE
CONF
(cd "$work" && apt-get download -qq -o APT::Sandbox::User=root systemd-boot-efi </dev/null >/dev/null 2>&1) ||
  { say "cannot download systemd-boot-efi"; exit 1; }
dpkg-deb -x "$work"/systemd-boot-efi_*.deb "$work/sdboot"
sdboot="$work/sdboot/usr/lib/systemd/boot/efi/systemd-bootx64.efi"
[ -f "$sdboot" ] || { say "no systemd-bootx64.efi in systemd-boot-efi"; exit 1; }
sdboot_ver="$(dpkg-deb -f "$work"/systemd-boot-efi_*.deb Version)"
mmd -i "$esp" ::EFI ::EFI/BOOT ::loader ::loader/entries
mcopy -i "$esp" "$root/boot/vmlinuz-$kver" ::vmlinuz
mcopy -i "$esp" "$root/boot/initrd.img-$kver" ::initrd.img
mcopy -i "$esp" "$work/syslinux.cfg" ::syslinux.cfg
mcopy -i "$esp" "$sdboot" ::EFI/BOOT/BOOTX64.EFI
mcopy -i "$esp" "$work/loader.conf" ::loader/loader.conf
mcopy -i "$esp" "$work/debian.conf" ::loader/entries/debian.conf
syslinux --install "$esp"

# 4. The root file system, filling the rest of the disk (less GPT's backup at the end).
root_start=$(((esp_start * 512 + ESP_MIB * 1024 * 1024) / 512))
root_sectors=$((DISK_MIB * 2048 - root_start - 2048))
rootfs="$work/root.img"
truncate -s $((root_sectors * 512)) "$rootfs"
mkfs.ext4 -q -F -L root -U "$ROOT_UUID" -E "hash_seed=$ROOT_UUID" -d "$root" "$rootfs"

# 5. The disk: GPT written by sfdisk into the file, the two file systems copied to their
# partitions, syslinux's GPT-aware MBR code in the first 440 bytes.
raw="$work/disk.raw"
truncate -s "${DISK_MIB}M" "$raw"
sfdisk -q --no-reread --no-tell-kernel "$raw" <<SFDISK
label: gpt
label-id: $DISK_GUID
unit: sectors
first-lba: 2048
start=$esp_start, size=$((ESP_MIB * 2048)), type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B, uuid=$ESP_GUID, name="EFI", attrs="LegacyBIOSBootable"
start=$root_start, size=$root_sectors, type=0FC63DAF-8483-4772-8E79-3D69D8477DE4, uuid=$ROOT_PARTUUID, name="root"
SFDISK
dd if="$esp" of="$raw" bs=512 seek="$esp_start" conv=notrunc,sparse status=none
dd if="$rootfs" of="$raw" bs=1M seek=$((root_start / 2048)) conv=notrunc,sparse status=none
dd if=/usr/lib/syslinux/mbr/gptmbr.bin of="$raw" bs=440 count=1 conv=notrunc status=none
qemu-img convert -c -f raw -O qcow2 "$raw" "$work/image.qcow2"
rm -f "$STAMP"
mv -f "$work/image.qcow2" "$IMAGE"
took=$(($(date +%s) - started))
printf 'script-sha256 %s\npackages %s\nkernel %s\nsystemd %s\ncloud-init %s\nqemu-guest-agent %s\nsystemd-boot %s\nbuild-seconds %s\nbuilt %s\n' \
  "$want_hash" "$want_inputs" "$kver" "$systemd_ver" "$cloudinit_ver" "$qga_ver" "$sdboot_ver" "$took" "$(date -u +%FT%TZ)" >"$STAMP"
say "built $IMAGE in $took s ($(du -m "$IMAGE" | cut -f1) MiB on disk, $DISK_MIB MiB virtual)"
printf '%s\n' "$IMAGE"
