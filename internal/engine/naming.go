package engine

import (
	"crypto/sha256"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// BootDeviceName is the device name reserved for an instance's boot disk.
const BootDeviceName = "boot"

// NVRAMDeviceName is reserved for an EFI member's NVRAM volume (NVRAMVolumeName): no disk may
// take it, so that no disk's volume is ever mistaken for it.
const NVRAMDeviceName = "nvram"

// ReservedDeviceNames are the device names no template or config disk may take.
var ReservedDeviceNames = []string{BootDeviceName, NVRAMDeviceName}

// VolumeFormat is the on-disk format of every volume the provider creates.
const VolumeFormat = "qcow2"

// NamePattern is the rule for a group's name, a base instance name and a provider host's name:
// a DNS label of 1 to 63 lower case letters, digits and hyphens that starts with a letter and
// does not end with a hyphen. It is exported so that the schema validators check the same rule
// the engine does, and say it with NameRule.
var NamePattern = regexp.MustCompile(`^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$`)

// NameRule says NamePattern in words, as a validator's message.
const NameRule = "must be a DNS label: 1 to 63 lower case letters, digits and hyphens, starting with a letter and not ending with a hyphen"

// ValidName reports whether s can name a group or be a base instance name (NamePattern).
func ValidName(s string) bool { return NamePattern.MatchString(s) }

// DeviceNamePattern is the rule for a disk's device name: a lower case letter followed by up to
// 31 lower case letters, digits, hyphens or underscores. The name BootDeviceName is reserved
// besides (ValidDeviceName).
var DeviceNamePattern = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// DeviceNameRule says DeviceNamePattern in words, as a validator's message.
const DeviceNameRule = "must be a lower case letter followed by up to 31 lower case letters, digits, hyphens or underscores"

// ValidDeviceName reports whether s can name a disk: DeviceNamePattern, and not the boot disk's
// reserved name.
func ValidDeviceName(s string) bool {
	return DeviceNamePattern.MatchString(s) && !slices.Contains(ReservedDeviceNames, s)
}

// InstanceName is the stable name of instance index of a group.
func InstanceName(base string, index int) string { return fmt.Sprintf("%s-%d", base, index) }

// ParseInstanceIndex returns the index of an instance name in the "<base>-<i>" scheme, or false
// when the name is outside it.
func ParseInstanceIndex(base, name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, base+"-")
	if !ok || rest == "" || rest[0] == '0' {
		return 0, false
	}
	i, err := strconv.Atoi(rest)
	if err != nil || i < 1 {
		return 0, false
	}
	return i, true
}

// VolumeName is the deterministic name of an instance's volume for a device.
func VolumeName(instance, device string) string {
	return instance + "-" + device + "." + VolumeFormat
}

// NVRAMVolumeName is the raw volume that holds an EFI member's UEFI variables (its NVRAM):
// VolumeName's scheme for the reserved device name, with the extension of a firmware image.
func NVRAMVolumeName(instance string) string { return instance + "-" + NVRAMDeviceName + ".fd" }

// SeedVolumeName is the volume of a member's NoCloud seed, named after the NoCloud volume label.
// Device names cannot hold a dot, so it never collides with a disk's volume.
func SeedVolumeName(instance string) string { return instance + "-cidata.iso" }

// MACAddress is the MAC address of a member's network interface at position nic: derived from
// the group, the member's name and the position, so that every definition of the member (a
// restart, a replacement, a re-creation after scale-in and out) has the same one, and a DHCP
// server gives it the same address. It is a locally administered unicast address (the second
// lowest bit of the first octet set, the lowest clear), which no manufacturer assigns.
func MACAddress(group, instance string, nic int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%d", group, instance, nic))
	sum[0] = sum[0]&^0x03 | 0x02
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", sum[0], sum[1], sum[2], sum[3], sum[4], sum[5])
}

// MACAddresses are the MAC addresses of a member with n network interfaces.
func MACAddresses(group, instance string, n int) []string {
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = MACAddress(group, instance, i)
	}
	return out
}

// ScaleOut returns the n indices to add to existing: the lowest free ones, in increasing order.
func ScaleOut(existing []int, n int) []int {
	used := make(map[int]bool, len(existing))
	for _, i := range existing {
		used[i] = true
	}
	var out []int
	for i := 1; len(out) < n; i++ {
		if !used[i] {
			out = append(out, i)
		}
	}
	return out
}

// ScaleIn returns the n indices to remove from existing: the highest first.
func ScaleIn(existing []int, n int) []int {
	sorted := append([]int(nil), existing...)
	sort.Sort(sort.Reverse(sort.IntSlice(sorted)))
	if n > len(sorted) {
		n = len(sorted)
	}
	if n < 0 {
		n = 0
	}
	return sorted[:n]
}

// Resize returns the indices a group has after reconciling existing to target members, with the
// indices to create and to delete on the way. A scale-in removes the highest indices.
func Resize(existing []int, target int) (final, create, remove []int) {
	return ResizeBy(existing, target, func(n int) []int { return ScaleIn(existing, n) })
}

// ResizeBy is Resize with the members a scale-in removes chosen by pick, which returns n of
// the existing indices.
func ResizeBy(existing []int, target int, pick func(n int) []int) (final, create, remove []int) {
	return ResizeSkipping(existing, nil, target, pick)
}

// ResizeSkipping is ResizeBy that never creates an index of skip: the indices of names the
// group abandons, which stay someone else's while listed. They count as no member.
func ResizeSkipping(existing, skip []int, target int, pick func(n int) []int) (final, create, remove []int) {
	switch {
	case len(existing) < target:
		create = ScaleOut(append(slices.Clone(existing), skip...), target-len(existing))
	case len(existing) > target:
		remove = pick(len(existing) - target)
	}
	gone := make(map[int]bool, len(remove))
	for _, i := range remove {
		gone[i] = true
	}
	for _, i := range existing {
		if !gone[i] {
			final = append(final, i)
		}
	}
	final = append(final, create...)
	sort.Ints(final)
	return final, create, remove
}

// MaxTargetSize bounds a group's size: past it, names, records and plans stop being something a
// single libvirt host can carry.
const MaxTargetSize = 10000

// PoolNamePattern is the rule for a storage pool's name that virt_pool creates: libvirt refuses
// a "/" in one, and the provider keeps to names that read well in virsh and in an import ID
// ("<host>/<name>").
var PoolNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
