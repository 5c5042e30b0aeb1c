package engine

import (
	"fmt"
	"maps"
	"sort"
)

// Delete rules and modes of a preserved disk; NEVER and READ_WRITE are the defaults.
const (
	DeleteNever               = "NEVER"
	DeleteOnPermanentDeletion = "ON_PERMANENT_INSTANCE_DELETION"
	ModeReadWrite             = "READ_WRITE"
	ModeReadOnly              = "READ_ONLY"
	defaultDeleteRule         = DeleteNever
	defaultMode               = ModeReadWrite
)

// DeleteRules and DiskModes list the allowed values, as users write them.
var (
	DeleteRules = []string{DeleteNever, DeleteOnPermanentDeletion}
	DiskModes   = []string{ModeReadWrite, ModeReadOnly}
)

// PolicyDisk is a template disk the stateful policy makes stateful in every instance.
type PolicyDisk struct {
	DeviceName string
	DeleteRule string
}

// Policy is a group's stateful policy.
type Policy struct {
	Disks []PolicyDisk
}

// ConfigDisk is a disk a per-instance config preserves: a volume of the group's pool by name, or
// an absolute path. It need not be in the template.
type ConfigDisk struct {
	DeviceName string
	Source     string
	Mode       string
	DeleteRule string
}

// InstanceConfig is the per-instance config of one instance.
type InstanceConfig struct {
	Disks    []ConfigDisk
	Metadata map[string]string
	// NetworkIPs pin the addresses of the member's interfaces.
	NetworkIPs []NetworkIP
}

// PreservedDisk is one disk of a preserved state.
type PreservedDisk struct {
	DeviceName string
	Source     string
	Mode       string
	DeleteRule string
}

// PreservedState is what is kept for one instance across recreation, from one origin.
type PreservedState struct {
	Disks    map[string]PreservedDisk
	Metadata map[string]string
	// NetworkIPs are the pinned addresses, by interface name ("nic0").
	NetworkIPs map[string]string
}

// Empty reports whether the state preserves nothing.
func (s PreservedState) Empty() bool {
	return len(s.Disks) == 0 && len(s.Metadata) == 0 && len(s.NetworkIPs) == 0
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// Preserve computes an instance's preserved state from policy and from config, kept apart. A
// policy disk counts only when the template defines it; a config entry shadows the policy entry
// of the same device name, which then leaves the policy part. Config entries are kept as given,
// whether or not the template defines them.
func Preserve(instance string, t Template, p Policy, c InstanceConfig) (fromPolicy, fromConfig PreservedState) {
	fromConfig = PreservedState{Disks: map[string]PreservedDisk{}, Metadata: map[string]string{}}
	for _, d := range c.Disks {
		fromConfig.Disks[d.DeviceName] = PreservedDisk{
			DeviceName: d.DeviceName, Source: d.Source,
			Mode: orDefault(d.Mode, defaultMode), DeleteRule: orDefault(d.DeleteRule, defaultDeleteRule),
		}
	}
	maps.Copy(fromConfig.Metadata, c.Metadata)
	fromConfig.NetworkIPs = map[string]string{}
	for _, n := range c.NetworkIPs {
		fromConfig.NetworkIPs[n.Interface] = n.Address
	}
	fromPolicy = PreservedState{Disks: map[string]PreservedDisk{}}
	for _, d := range p.Disks {
		if _, inTemplate := t.DiskByName(d.DeviceName); !inTemplate {
			continue
		}
		if _, shadowed := fromConfig.Disks[d.DeviceName]; shadowed {
			continue
		}
		fromPolicy.Disks[d.DeviceName] = PreservedDisk{
			DeviceName: d.DeviceName, Source: VolumeName(instance, d.DeviceName),
			Mode: defaultMode, DeleteRule: orDefault(d.DeleteRule, defaultDeleteRule),
		}
	}
	return normalise(fromPolicy), normalise(fromConfig)
}

func normalise(s PreservedState) PreservedState {
	if len(s.Disks) == 0 {
		s.Disks = nil
	}
	if len(s.Metadata) == 0 {
		s.Metadata = nil
	}
	if len(s.NetworkIPs) == 0 {
		s.NetworkIPs = nil
	}
	return s
}

// DesiredDisk is a disk as the instance's domain must have it.
type DesiredDisk struct {
	DeviceName string
	// Source is the volume name in the group's pool, or an absolute path.
	Source   string
	ReadOnly bool
	// SizeMiB is the size of a disk the template defines and the provider creates; 0 for a disk
	// that only a per-instance config names, whose volume exists already.
	SizeMiB int64
	// Preserved is true when the disk is in the preserved state from policy or from config.
	Preserved  bool
	DeleteRule string
}

// DesiredInstance is what an instance's domain must look like. It is not a second template: it is
// one member's template resolved (disks as that member's volumes or a config's sources, pinned
// addresses, metadata with the config's laid over, its NVRAM volume), and its hash is what a
// member's record holds. Its Shape is the template's, shared as one embedded value.
type DesiredInstance struct {
	Name string
	// Shape is the template's, as it is.
	Shape
	NICs      []NIC
	BootImage string
	Disks     []DesiredDisk // the boot disk first, then by device name
	Metadata  map[string]string
	// NVRAM is the member's own NVRAM volume in the group's pool (NVRAMVolumeName) when it boots
	// with EFI, else "". Recorded, it is what makes the volume the member's to delete.
	NVRAM string
}

// Desire computes the instance's desired domain: the template, with the preserved state from
// policy and from config laid over it. Config wins over policy and policy over template.
func Desire(instance string, t Template, fromPolicy, fromConfig PreservedState) DesiredInstance {
	t = t.Canonical()
	d := DesiredInstance{
		Name: instance, Shape: t.Shape, NICs: withPins(t.NICs, fromConfig.NetworkIPs), BootImage: t.BootDisk.SourceImage,
	}
	if t.EFI() {
		d.NVRAM = NVRAMVolumeName(instance)
	}
	disk := func(name string, size int64) DesiredDisk {
		dd := DesiredDisk{DeviceName: name, Source: VolumeName(instance, name), SizeMiB: size}
		if p, ok := fromPolicy.Disks[name]; ok {
			dd.Preserved, dd.DeleteRule = true, p.DeleteRule
		}
		if c, ok := fromConfig.Disks[name]; ok {
			dd = DesiredDisk{DeviceName: name, Source: c.Source, ReadOnly: c.Mode == ModeReadOnly,
				Preserved: true, DeleteRule: c.DeleteRule}
			if c.Source == VolumeName(instance, name) {
				// The config preserves the instance's own template volume: it keeps its size.
				dd.SizeMiB = size
			}
		}
		return dd
	}
	seen := map[string]bool{}
	if !t.Adopted {
		d.Disks = append(d.Disks, disk(BootDeviceName, t.BootDisk.SizeMiB))
		seen[BootDeviceName] = true
		for _, td := range t.Disks {
			d.Disks = append(d.Disks, disk(td.DeviceName, td.SizeMiB))
			seen[td.DeviceName] = true
		}
	}
	var extra []string
	for name := range fromConfig.Disks {
		if !seen[name] {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	for _, name := range extra {
		d.Disks = append(d.Disks, disk(name, 0))
	}
	first := 1
	if t.Adopted {
		first = 0
	}
	sort.SliceStable(d.Disks[first:], func(i, j int) bool { return d.Disks[first+i].DeviceName < d.Disks[first+j].DeviceName })
	meta := map[string]string{}
	maps.Copy(meta, t.Metadata)
	maps.Copy(meta, fromConfig.Metadata)
	if len(meta) > 0 {
		d.Metadata = meta
	}
	return d
}

// firmwareName is the firmware as users write it: "" is bios.
func firmwareName(f string) string { return orDefault(f, FirmwareBIOS) }

func equalCPU(a, b *CPU) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// cpuName says a CPU in a reason: its mode, with the model of a custom one.
func cpuName(c *CPU) string {
	switch {
	case c == nil:
		return "default"
	case c.Model != "":
		return c.Mode + " " + c.Model
	default:
		return c.Mode
	}
}

// Hash is a stable hash of the desired instance, recorded as the last-applied spec.
func (d DesiredInstance) Hash() string { return shortHash(desiredJSON(d)) }

// DiskByName returns the desired disk with that device name.
func (d DesiredInstance) DiskByName(name string) (DesiredDisk, bool) {
	for _, x := range d.Disks {
		if x.DeviceName == name {
			return x, true
		}
	}
	return DesiredDisk{}, false
}

// InstanceDiff returns the least action that takes an instance from current to desired, with
// reasons. It follows the action table: labels and description NONE; metadata, disks made
// stateful or stateless, disks attached, detached, swapped or grown, a new graphics password
// version REFRESH; vcpu, memory, network interfaces, the console log, machine, cpu, graphics
// added, removed or changed, the rng device and filesystem shares RESTART (devicesDiff;
// addresses: see addressReasons); boot image, external boot disk, domain type, firmware, secure
// boot and cloud-init's user data, network config or presence REPLACE.
func InstanceDiff(current, desired DesiredInstance) (Action, []Reason) {
	var reasons []Reason
	add := func(a Action, format string, args ...any) {
		reasons = append(reasons, Reason{Action: a, What: fmt.Sprintf(format, args...)})
	}
	if current.DomainType != desired.DomainType {
		add(ActionReplace, "domain type %s -> %s", current.DomainType, desired.DomainType)
	}
	if current.BootImage != desired.BootImage {
		add(ActionReplace, "boot image changed")
	}
	if current.VCPU != desired.VCPU {
		add(ActionRestart, "vcpu %d -> %d", current.VCPU, desired.VCPU)
	}
	if current.MemoryMiB != desired.MemoryMiB {
		add(ActionRestart, "memory %d -> %d MiB", current.MemoryMiB, desired.MemoryMiB)
	}
	if !sameNICs(current.NICs, desired.NICs) {
		add(ActionRestart, "network interfaces")
	}
	addressReasons(current.NICs, desired.NICs, add)
	if current.ConsoleLogDir != desired.ConsoleLogDir {
		add(ActionRestart, "console log")
	}
	// The boot disk was made for one firmware (a BIOS boot sector or an EFI system partition),
	// and the NVRAM holds the Secure Boot keys of the variable store it was made from: either
	// means something only to a new instance, with a fresh NVRAM.
	if cf, df := firmwareName(current.Firmware), firmwareName(desired.Firmware); cf != df {
		add(ActionReplace, "firmware %s -> %s", cf, df)
	}
	if current.SecureBoot != desired.SecureBoot {
		add(ActionReplace, "secure_boot %t -> %t", current.SecureBoot, desired.SecureBoot)
	}
	if current.Machine != desired.Machine {
		add(ActionRestart, "machine %s -> %s", orDefault(current.Machine, "default"), orDefault(desired.Machine, "default"))
	}
	if !equalCPU(current.CPU, desired.CPU) {
		add(ActionRestart, "cpu %s -> %s", cpuName(current.CPU), cpuName(desired.CPU))
	}
	devicesDiff(current, desired, add)
	// cloud-init runs user-data once per instance, and the seed's presence is a device: either
	// means something only to a new instance.
	switch c, d := current.CloudInit, desired.CloudInit; {
	case c == nil && d != nil:
		add(ActionReplace, "cloud_init added")
	case c != nil && d == nil:
		add(ActionReplace, "cloud_init removed")
	case c != nil && userDataChanged(*c, *d):
		add(ActionReplace, "%s", userDataChange(*c, *d))
	case c != nil && c.NetworkConfig != d.NetworkConfig:
		add(ActionReplace, "cloud_init network_config changed")
	}
	for _, dd := range desired.Disks {
		cd, ok := current.DiskByName(dd.DeviceName)
		switch {
		case dd.DeviceName == BootDeviceName && ok && cd.Source != dd.Source:
			add(ActionReplace, "external boot disk")
		case !ok:
			add(ActionRefresh, "disk %s attached", dd.DeviceName)
		case cd.Source != dd.Source || cd.ReadOnly != dd.ReadOnly:
			add(ActionRefresh, "disk %s swapped", dd.DeviceName)
		case dd.SizeMiB > cd.SizeMiB && cd.SizeMiB > 0:
			add(ActionRefresh, "disk %s grown %d -> %d MiB", dd.DeviceName, cd.SizeMiB, dd.SizeMiB)
		case dd.SizeMiB < cd.SizeMiB && dd.SizeMiB > 0:
			// Shrinking is refused at plan time; here it is reported as REPLACE so that it is
			// never applied silently.
			add(ActionReplace, "disk %s shrunk %d -> %d MiB", dd.DeviceName, cd.SizeMiB, dd.SizeMiB)
		case cd.Preserved != dd.Preserved || cd.DeleteRule != dd.DeleteRule:
			if dd.Preserved {
				add(ActionRefresh, "disk %s made stateful", dd.DeviceName)
			} else {
				add(ActionRefresh, "disk %s made stateless", dd.DeviceName)
			}
		}
	}
	for _, cd := range current.Disks {
		if _, ok := desired.DiskByName(cd.DeviceName); !ok {
			add(ActionRefresh, "disk %s detached", cd.DeviceName)
		}
	}
	for _, k := range sortedKeys(current.Metadata, desired.Metadata) {
		cv, cok := current.Metadata[k]
		dv, dok := desired.Metadata[k]
		switch {
		case !cok:
			add(ActionRefresh, "metadata %s added", k)
		case !dok:
			add(ActionRefresh, "metadata %s removed", k)
		case cv != dv:
			add(ActionRefresh, "metadata %s changed", k)
		}
	}
	if !maps.Equal(current.Labels, desired.Labels) {
		add(ActionNone, "labels")
	}
	if current.Description != desired.Description {
		add(ActionNone, "description")
	}
	action := ActionNone
	for _, r := range reasons {
		action = MaxAction(action, r.Action)
	}
	return action, reasons
}
