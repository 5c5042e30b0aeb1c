package engine

import (
	"fmt"
	"slices"
	"sort"
)

// This file holds the members' hardware beyond size, disks and interfaces: the Hardware struct
// that Shape embeds (and with it Template, DesiredInstance and backend.DomainSpec), and its devices (graphics, the
// entropy device, virtiofs shares) with their canonical encoding and their change classes. A new
// VM option is a field of Hardware, its canonical encoding (hardware) and its change class
// (devicesDiff), all here; CONTRIBUTING.md lists the other files it touches.

// Hardware is the members' firmware, machine, cpu and devices, as the template gives them and as
// each member's domain must have them: one struct, embedded in Shape (template.go), so that
// Desire, the store's conversion and the domain spec carry a new field without being edited.
type Hardware struct {
	// Firmware is FirmwareEFI for UEFI; "" (or FirmwareBIOS) is BIOS. An EFI member has its own
	// NVRAM volume (NVRAMVolumeName).
	Firmware string
	// SecureBoot asks for the firmware build that enforces Secure Boot (EFI on q35 only).
	SecureBoot bool
	// Machine is the machine type as configured (pc, q35, pc-q35-7.2, ...); "" is libvirt's
	// default. It is compared as written, never as libvirt expands it.
	Machine string
	// CPU is the guest CPU; nil is libvirt's default.
	CPU *CPU
	// Graphics is the members' console; nil gives none.
	Graphics *Graphics
	// RNG gives the members a virtio entropy device fed from the host's /dev/urandom.
	RNG bool
	// Filesystems are host directories shared with the members through virtiofs.
	Filesystems []Filesystem
	// TPM gives the members an emulated TPM (swtpm); nil gives none.
	TPM *TPM
}

// canonical returns a copy of h in canonical form: bios written out as the default it is, no
// pointer shared with h, shares sorted by target and none as nil.
func (h Hardware) canonical() Hardware {
	c := h
	if h.Firmware == FirmwareBIOS {
		// bios is the default written out: the same template as one that leaves it out.
		c.Firmware = ""
	}
	if h.CPU != nil {
		cpu := *h.CPU
		c.CPU = &cpu
	}
	if h.Graphics != nil {
		g := *h.Graphics
		c.Graphics = &g
	}
	c.Filesystems = sortedFilesystems(h.Filesystems)
	if h.TPM != nil {
		tpm := *h.TPM
		c.TPM = &tpm
	}
	return c
}

// hardware writes h's keys, each only when set, so that a template without an option has the
// bytes (and so the revision) it had before the option existed. nvram is the desired instance's
// (DesiredInstance.NVRAM), "" for a template; it sits between secure_boot and machine, where
// the hashes written on hosts have it.
func (c *canon) hardware(h Hardware, nvram string) {
	c.firmware(h.Firmware, h.SecureBoot, h.Machine, h.CPU, nvram)
	c.graphics(h.Graphics)
	c.optTrue("rng", h.RNG)
	c.filesystems(h.Filesystems)
	if t := h.TPM; t != nil {
		c.key("tpm")
		c.open()
		c.str("model", t.Model)
		c.str("version", t.Version)
		c.close()
	}
}

// Graphics types, as users write them.
const (
	GraphicsVNC   = "vnc"
	GraphicsSpice = "spice"
	// DefaultGraphicsListen is the address a console listens on when the template names none:
	// the host's loopback, reachable only through an SSH tunnel or from the host itself.
	DefaultGraphicsListen = "127.0.0.1"
	// MaxVNCPasswordLength is the longest VNC password: the protocol's DES challenge uses 8
	// bytes, and QEMU ignores the rest, so a longer one would be weaker than it looks.
	MaxVNCPasswordLength = 8
)

// GraphicsTypes lists the allowed graphics types.
var GraphicsTypes = []string{GraphicsVNC, GraphicsSpice}

// Graphics is a member's graphical console: VNC or SPICE on a port libvirt picks (autoport).
// The password itself is write-only and never part of a template: only its version is, so that
// a new version is a change the plan shows and the apply carries out with the password of its
// configuration. PasswordVersion 0 means no password.
type Graphics struct {
	Type            string
	Listen          string
	PasswordVersion int64
}

// TPM models and versions, as libvirt names them and users write them.
const (
	TPMModelCRB = "tpm-crb"
	TPMModelTIS = "tpm-tis"
	TPMVersion2 = "2.0"
	// DefaultTPMModel is the model of a tpm block without one: CRB, the TPM 2.0 interface that
	// Windows 11 and current firmware expect.
	DefaultTPMModel = TPMModelCRB
)

// TPMModels and TPMVersions list the allowed values. Only 2.0 is offered: 1.2 is what neither
// Windows 11 nor measured boot with current firmware uses, and tpm-crb does not do it.
var (
	TPMModels   = []string{TPMModelCRB, TPMModelTIS}
	TPMVersions = []string{TPMVersion2}
)

// TPM is an emulated TPM: libvirt runs swtpm for the member and keeps the TPM's state (its keys,
// its NVRAM) under /var/lib/libvirt/swtpm/<domain UUID> on the member's host.
type TPM struct {
	Model   string
	Version string
}

func (t *TPM) String() string {
	if t == nil {
		return "none"
	}
	return t.Model + " " + t.Version
}

// tpmAction is the change class of adding, removing or changing the TPM: QEMU cannot hot-plug a
// TPM, so libvirt refuses a live attach or detach, and the change is applied by a restart (the
// domain redefined with its own UUID and started again), as rng and graphics changes are. The
// swtpm state belongs to the domain's UUID, so a restart keeps it; a REPLACE defines a new
// domain with a new UUID, which starts with a fresh TPM state.
const tpmAction = ActionRestart

// Filesystem is a host directory shared with every member through virtiofs, mounted by the
// guest under the tag Target.
type Filesystem struct {
	Source   string
	Target   string
	ReadOnly bool
}

func sortedFilesystems(fs []Filesystem) []Filesystem {
	if len(fs) == 0 {
		return nil
	}
	out := slices.Clone(fs)
	sort.Slice(out, func(i, j int) bool { return out[i].Target < out[j].Target })
	return out
}

// graphics writes the console only when there is one, so that templates without it keep the
// revision they had before graphics existed.
func (c *canon) graphics(g *Graphics) {
	if g == nil {
		return
	}
	c.key("graphics")
	c.open()
	c.str("type", g.Type)
	c.str("listen", g.Listen)
	c.optInt("password_version", g.PasswordVersion)
	c.close()
}

// filesystems writes the shares only when there are any (see graphics).
func (c *canon) filesystems(fs []Filesystem) {
	if len(fs) == 0 {
		return
	}
	c.key("filesystems")
	c.list(len(fs), func(i int) {
		c.open()
		c.str("source", fs[i].Source)
		c.str("target", fs[i].Target)
		c.optTrue("read_only", fs[i].ReadOnly)
		c.close()
	})
}

// rngAction is the change class of adding or removing the entropy device. Measured on libvirt
// 9.0 with QEMU 7.2 and a SeaBIOS-only domain: a live attach works, but a live detach only asks
// the guest to eject the PCI device, and a guest that does not answer (no OS yet, or one without
// ACPI hotplug) keeps it, while libvirt reports success; on q35 a live attach also needs a free
// PCIe root port, which libvirt does not reserve. A change is therefore applied by a restart,
// which always ends with the device as the template says.
const rngAction = ActionRestart

// passwordAction is the change class of a new graphics password version: libvirt 9.0 changes a
// running VNC or SPICE console's password with DomainUpdateDeviceFlags, no guest involved
// (measured on the harness), so it is live.
const passwordAction = ActionRefresh

// devicesDiff adds the reasons of the devices' differences, each named after its attribute.
func devicesDiff(current, desired DesiredInstance, add func(a Action, format string, args ...any)) {
	switch c, d := current.Graphics, desired.Graphics; {
	case c == nil && d != nil:
		add(ActionRestart, "graphics added")
	case c != nil && d == nil:
		add(ActionRestart, "graphics removed")
	case c != nil:
		if c.Type != d.Type {
			add(ActionRestart, "graphics type %s -> %s", c.Type, d.Type)
		}
		if c.Listen != d.Listen {
			add(ActionRestart, "graphics listen %s -> %s", c.Listen, d.Listen)
		}
		if GraphicsPasswordChanged(current, desired) {
			add(passwordAction, "graphics password_wo_version %d -> %d", c.PasswordVersion, d.PasswordVersion)
		}
	}
	switch {
	case !current.RNG && desired.RNG:
		add(rngAction, "rng added")
	case current.RNG && !desired.RNG:
		add(rngAction, "rng removed")
	}
	switch c, d := current.TPM, desired.TPM; {
	case c == nil && d != nil:
		add(tpmAction, "tpm added")
	case c != nil && d == nil:
		add(tpmAction, "tpm removed")
	case c != nil && *c != *d:
		add(tpmAction, "tpm %s -> %s", c, d)
	}
	for _, d := range desired.Filesystems {
		c, ok := filesystemByTarget(current.Filesystems, d.Target)
		switch {
		case !ok:
			add(ActionRestart, "filesystem share %s added", d.Target)
		case c != d:
			add(ActionRestart, "filesystem share %s changed", d.Target)
		}
	}
	for _, c := range current.Filesystems {
		if _, ok := filesystemByTarget(desired.Filesystems, c.Target); !ok {
			add(ActionRestart, "filesystem share %s removed", c.Target)
		}
	}
}

func filesystemByTarget(fs []Filesystem, target string) (Filesystem, bool) {
	for _, f := range fs {
		if f.Target == target {
			return f, true
		}
	}
	return Filesystem{}, false
}

// GraphicsPasswordChanged reports whether a live change of a member from current to desired sets
// its console's password: same console, another password version.
func GraphicsPasswordChanged(current, desired DesiredInstance) bool {
	c, d := current.Graphics, desired.Graphics
	return c != nil && d != nil && c.Type == d.Type && c.Listen == d.Listen && c.PasswordVersion != d.PasswordVersion
}

// String renders a share for plan texts and errors.
func (f Filesystem) String() string {
	mode := "rw"
	if f.ReadOnly {
		mode = "ro"
	}
	return fmt.Sprintf("%s:%s (%s)", f.Source, f.Target, mode)
}
