package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
)

// The engine's hashes (Template.Revision, DesiredInstance.Hash) are written on hosts and compared
// with what later runs compute, so the bytes they hash are fixed: the JSON that encoding/json
// wrote for these types when they carried struct tags (keys in field order, fields with
// omitempty left out when empty, strings and string maps as json.Marshal writes them: map keys
// sorted, HTML characters escaped). The canonical encoder below writes exactly those bytes, and
// canon_test.go holds the hashes of many values computed before it existed.

// canon appends one JSON object's members.
type canon struct {
	b     []byte
	first bool
}

func (c *canon) open() { c.b = append(c.b, '{'); c.first = true }

func (c *canon) close() { c.b = append(c.b, '}'); c.first = false }

// key writes the member's name and the colon.
func (c *canon) key(name string) {
	if !c.first {
		c.b = append(c.b, ',')
	}
	c.first = false
	c.b = append(c.b, '"')
	c.b = append(c.b, name...)
	c.b = append(c.b, '"', ':')
}

// value appends v as json.Marshal writes it: used for strings and string maps, whose encoding
// (escaping, key order) is encoding/json's.
func (c *canon) value(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic("engine: a string or string map cannot be encoded: " + err.Error())
	}
	c.b = append(c.b, b...)
}

func (c *canon) str(name, v string) { c.key(name); c.value(v) }

func (c *canon) optStr(name, v string) {
	if v != "" {
		c.str(name, v)
	}
}

func (c *canon) int(name string, v int64) { c.key(name); c.b = strconv.AppendInt(c.b, v, 10) }

func (c *canon) optInt(name string, v int64) {
	if v != 0 {
		c.int(name, v)
	}
}

func (c *canon) optTrue(name string, v bool) {
	if v {
		c.key(name)
		c.b = append(c.b, "true"...)
	}
}

func (c *canon) optMap(name string, m map[string]string) {
	if len(m) > 0 {
		c.key(name)
		c.value(m)
	}
}

// list writes n elements with each, as a JSON array.
func (c *canon) list(n int, each func(i int)) {
	c.b = append(c.b, '[')
	for i := range n {
		if i > 0 {
			c.b = append(c.b, ',')
		}
		each(i)
	}
	c.b = append(c.b, ']')
	c.first = false
}

func (c *canon) nics(nics []NIC) {
	if len(nics) == 0 {
		return
	}
	c.key("nics")
	c.list(len(nics), func(i int) {
		c.open()
		c.optStr("network", nics[i].Network)
		c.str("type", nics[i].Type)
		c.optStr("address", nics[i].Address)
		c.close()
	})
}

func (c *canon) cloudInit(ci *CloudInit) {
	if ci == nil {
		return
	}
	c.key("cloud_init")
	c.open()
	c.optStr("user_data", ci.UserData)
	c.optStr("network_config", ci.NetworkConfig)
	// Only the version: nothing derived from the write-only value is kept anywhere.
	c.optInt("user_data_wo_version", ci.UserDataWOVersion)
	c.close()
}

// firmware writes the firmware, machine and CPU keys, each only when set: a template without
// them has the bytes (and so the revision) it had before they existed.
func (c *canon) firmware(firmware string, secureBoot bool, machine string, cpu *CPU, nvram string) {
	c.optStr("firmware", firmware)
	c.optTrue("secure_boot", secureBoot)
	c.optStr("nvram", nvram)
	c.optStr("machine", machine)
	if cpu != nil {
		c.key("cpu")
		c.open()
		c.str("mode", cpu.Mode)
		c.optStr("model", cpu.Model)
		c.close()
	}
}

// shapeSize and shapeSettings write s's keys, where templates and desired instances have them:
// its type and size first, the rest after the metadata. A new field of Shape is one key in
// shapeSettings, written only when set, so that a template without it keeps its revision and a
// member its hash. nvram is the desired instance's (see hardware).
func (c *canon) shapeSize(s Shape) {
	c.str("domain_type", s.DomainType)
	c.int("vcpu", s.VCPU)
	c.int("memory_mib", s.MemoryMiB)
}

func (c *canon) shapeSettings(s Shape, nvram string) {
	c.optMap("labels", s.Labels)
	c.optStr("description", s.Description)
	c.cloudInit(s.CloudInit)
	c.optStr("console_log_dir", s.ConsoleLogDir)
	c.hardware(s.Hardware, nvram)
}

// templateJSON is the canonical encoding of t.
func templateJSON(t Template) []byte {
	var c canon
	c.open()
	c.shapeSize(t.Shape)
	c.key("boot_disk")
	c.open()
	c.optStr("source_image", t.BootDisk.SourceImage)
	c.int("size_mib", t.BootDisk.SizeMiB)
	c.close()
	if len(t.Disks) > 0 {
		c.key("disks")
		c.list(len(t.Disks), func(i int) {
			c.open()
			c.str("device_name", t.Disks[i].DeviceName)
			c.int("size_mib", t.Disks[i].SizeMiB)
			c.close()
		})
	}
	c.nics(t.NICs)
	c.optMap("metadata", t.Metadata)
	c.shapeSettings(t.Shape, "")
	c.optTrue("adopted", t.Adopted)
	c.close()
	return c.b
}

// desiredJSON is the canonical encoding of d. Its disks are always written: null when there are
// none (nil), [] when the list is empty.
func desiredJSON(d DesiredInstance) []byte {
	var c canon
	c.open()
	c.str("name", d.Name)
	c.shapeSize(d.Shape)
	c.nics(d.NICs)
	c.optStr("boot_image", d.BootImage)
	c.key("disks")
	if d.Disks == nil {
		c.b = append(c.b, "null"...)
	} else {
		c.list(len(d.Disks), func(i int) {
			x := d.Disks[i]
			c.open()
			c.str("device_name", x.DeviceName)
			c.str("source", x.Source)
			c.optTrue("read_only", x.ReadOnly)
			c.optInt("size_mib", x.SizeMiB)
			c.optTrue("preserved", x.Preserved)
			c.optStr("delete_rule", x.DeleteRule)
			c.close()
		})
	}
	c.optMap("metadata", d.Metadata)
	c.shapeSettings(d.Shape, d.NVRAM)
	c.close()
	return c.b
}

// shortHash is the first 16 hex digits of the SHA-256 of b.
func shortHash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}
