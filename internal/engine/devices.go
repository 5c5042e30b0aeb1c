package engine

import (
	"fmt"
	"slices"
	"sort"
)

// This file holds the template's devices beyond disks and interfaces: graphics, the entropy
// device and virtiofs shares, with their canonical encoding and their change classes.

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

// Filesystem is a host directory shared with every member through virtiofs, mounted by the
// guest under the tag Target.
type Filesystem struct {
	Source   string
	Target   string
	ReadOnly bool
}

// canonicalDevices puts t's devices in canonical form: shares sorted by target, none as nil.
func canonicalDevices(t *Template) {
	if t.Graphics != nil {
		g := *t.Graphics
		t.Graphics = &g
	}
	t.Filesystems = sortedFilesystems(t.Filesystems)
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

// devices writes the devices of this file, each only when set.
func (c *canon) devices(g *Graphics, rng bool, fs []Filesystem) {
	c.graphics(g)
	c.optTrue("rng", rng)
	c.filesystems(fs)
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
