package provider

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"libvirt.org/go/libvirtxml"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// The acceptance tests of firmware, machine and cpu (issue 32). The EFI members boot no OS: OVMF
// finds nothing to boot, writes its boot entries into the member's NVRAM and idles in its boot
// manager, which is enough to show the firmware and what happens to the NVRAM.

// nvramDir is the directory of the test pool, where an EFI member's NVRAM file lives.
func nvramDir(t *testing.T) string {
	t.Helper()
	p, err := testLibvirt(t).LookupPool(context.Background(), testPool())
	if err != nil || p.Path == "" {
		t.Fatalf("the test pool %s has no directory (%v)", testPool(), err)
	}
	return p.Path
}

func nvramPath(t *testing.T, member string) string {
	return filepath.Join(nvramDir(t), member+"-nvram.fd")
}

// uefiVar is one variable of an OVMF variable store, with the state byte that says whether it
// is live (0x3f) or deleted.
type uefiVar struct {
	Name  string
	State byte
}

// authVarHeader is the size of an authenticated variable's header in OVMF's store: StartId,
// State, Reserved, Attributes, MonotonicCount, TimeStamp, PubKeyIndex, NameSize, DataSize and
// VendorGuid.
const authVarHeader = 60

// uefiVars walks the variable store of an OVMF NVRAM image (edk2's VariableFormat.h): the
// firmware volume header, the variable store header (28 bytes), then variables, each 4-byte
// aligned, until a header that does not start with 0x55AA. end is where the next variable goes.
func uefiVars(b []byte) (vars []uefiVar, end int, err error) {
	if len(b) < 0x40 {
		return nil, 0, fmt.Errorf("%d bytes is no firmware volume", len(b))
	}
	off := int(binary.LittleEndian.Uint16(b[0x30:])) + 28
	for {
		off = (off + 3) &^ 3
		if off+authVarHeader > len(b) || binary.LittleEndian.Uint16(b[off:]) != 0x55AA {
			return vars, off, nil
		}
		nameSize := int(binary.LittleEndian.Uint32(b[off+36:]))
		dataSize := int(binary.LittleEndian.Uint32(b[off+40:]))
		if off+authVarHeader+nameSize+dataSize > len(b) || nameSize%2 != 0 {
			return vars, off, fmt.Errorf("a variable at %d runs past the store", off)
		}
		raw := b[off+authVarHeader : off+authVarHeader+nameSize]
		u := make([]uint16, 0, nameSize/2)
		for i := 0; i+1 < len(raw); i += 2 {
			if c := binary.LittleEndian.Uint16(raw[i:]); c != 0 {
				u = append(u, c)
			}
		}
		vars = append(vars, uefiVar{Name: string(utf16.Decode(u)), State: b[off+2]})
		off += authVarHeader + nameSize + dataSize
	}
}

// liveVar reports whether the store has the variable, not deleted.
func liveVar(vars []uefiVar, name string) bool {
	for _, v := range vars {
		if v.Name == name && v.State == 0x3f {
			return true
		}
	}
	return false
}

// hasBootEntries reports whether OVMF has written its boot entries.
func hasBootEntries(vars []uefiVar) bool {
	return liveVar(vars, "BootOrder") && liveVar(vars, "Boot0000")
}

// nvramMarker is the variable the test adds to a stopped member's NVRAM: a variable OVMF does not
// know keeps its place across boots, and only a fresh NVRAM lacks it.
const nvramMarker = "TfaccMarker"

// addMarker appends the marker variable (non-volatile, boot and runtime access) to the NVRAM of a
// stopped member, as OVMF would write it.
func addMarker(t *testing.T, member string) {
	t.Helper()
	path := nvramPath(t, member)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, end, err := uefiVars(b)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	name := append(utf16.Encode([]rune(nvramMarker)), 0)
	data := []byte(member)
	v := make([]byte, authVarHeader, authVarHeader+2*len(name)+len(data))
	binary.LittleEndian.PutUint16(v[0:], 0x55AA)
	v[2] = 0x3f                                // VAR_ADDED
	binary.LittleEndian.PutUint32(v[4:], 0x07) // NON_VOLATILE | BOOTSERVICE_ACCESS | RUNTIME_ACCESS
	binary.LittleEndian.PutUint32(v[36:], uint32(2*len(name)))
	binary.LittleEndian.PutUint32(v[40:], uint32(len(data)))
	copy(v[44:], []byte("tfacc-nvram-mark")) // the vendor GUID
	for _, c := range name {
		v = binary.LittleEndian.AppendUint16(v, c)
	}
	v = append(v, data...)
	if end+len(v) > len(b) || !bytes.Equal(b[end:end+len(v)], bytes.Repeat([]byte{0xff}, len(v))) {
		t.Fatalf("%s: no free space at the end of the variables (offset %d)", path, end)
	}
	copy(b[end:], v)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// nvramState reads a member's NVRAM: its checksum and its variables.
func nvramState(t *testing.T, member string) (sum string, vars []uefiVar, err error) {
	b, err := os.ReadFile(nvramPath(t, member))
	if err != nil {
		return "", nil, err
	}
	s := sha256.Sum256(b)
	vars, _, err = uefiVars(b)
	return hex.EncodeToString(s[:]), vars, err
}

// settledNVRAM reads a running member's NVRAM as nvramState does, again while its variable store
// does not parse: OVMF may be writing a variable at the moment of the read (seen once at a load of
// 6: "a variable at 16684 runs past the store", its header written and its name not yet). It reads
// for at most a minute; a missing file is not read again.
func settledNVRAM(t *testing.T, member string) (sum string, vars []uefiVar, err error) {
	deadline := time.Now().Add(time.Minute)
	for {
		sum, vars, err = nvramState(t, member)
		if err == nil || errors.Is(err, fs.ErrNotExist) || time.Now().After(deadline) {
			return sum, vars, err
		}
		time.Sleep(time.Second)
	}
}

// waitBootEntries waits until OVMF has written its boot entries into each member's NVRAM, which
// under TCG takes it a minute or two after the start; it polls the file, for at most 10 minutes.
func waitBootEntries(t *testing.T, members ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	for _, m := range members {
		for {
			_, vars, err := nvramState(t, m)
			if err == nil && hasBootEntries(vars) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("OVMF wrote no boot entries into %s's NVRAM in 10 minutes (%v, variables %v)", m, err, vars)
			}
			time.Sleep(2 * time.Second)
		}
	}
}

// nvramSums remembers NVRAM checksums between steps.
type nvramSums map[string]string

func (s nvramSums) record(t *testing.T, members ...string) {
	t.Helper()
	for _, m := range members {
		sum, _, err := nvramState(t, m)
		if err != nil {
			t.Fatal(err)
		}
		s[m] = sum
	}
}

// same checks that the members' NVRAMs have the bytes they had.
func (s nvramSums) same(t *testing.T, members ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for _, m := range members {
			sum, _, err := nvramState(t, m)
			if err != nil {
				return err
			}
			if sum != s[m] {
				return fmt.Errorf("%s's NVRAM has checksum %s, had %s", m, sum, s[m])
			}
		}
		return nil
	}
}

// checkMarker checks whether each member's NVRAM holds the marker (and OVMF's boot entries, when
// it holds it).
func checkMarker(t *testing.T, want bool, members ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for _, m := range members {
			_, vars, err := settledNVRAM(t, m)
			switch {
			case errors.Is(err, fs.ErrNotExist) && !want:
				continue // not started yet: libvirt makes it fresh at the start
			case err != nil:
				return err
			case liveVar(vars, nvramMarker) != want:
				return fmt.Errorf("%s's NVRAM has the marker: %t, want %t (variables %v)", m, !want, want, vars)
			case want && !hasBootEntries(vars):
				return fmt.Errorf("%s's NVRAM lost its boot entries (variables %v)", m, vars)
			}
		}
		return nil
	}
}

// checkNVRAMGone checks that the members' NVRAM files are deleted.
func checkNVRAMGone(t *testing.T, members ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for _, m := range members {
			if _, err := os.Stat(nvramPath(t, m)); !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%s's NVRAM %s is still there (%v)", m, nvramPath(t, m), err)
			}
		}
		return nil
	}
}

// liveDomain reads a member's definition as it runs (libvirt fills in the firmware it chose).
func liveDomain(t *testing.T, member string) (libvirtxml.Domain, error) {
	return readDomain(t, member, 0)
}

// readDomain reads a member's definition with the flags given (golibvirt.DomainXMLInactive: the
// persistent one, as the provider defined it, host-model not yet expanded to a model).
func readDomain(t *testing.T, member string, flags golibvirt.DomainXMLFlags) (libvirtxml.Domain, error) {
	var dom libvirtxml.Domain
	l := testLibvirt(t).Raw()
	d, err := l.DomainLookupByName(member)
	if err != nil {
		return dom, err
	}
	doc, err := l.DomainGetXMLDesc(d, flags)
	if err != nil {
		return dom, err
	}
	err = dom.Unmarshal(doc)
	return dom, err
}

// checkEFIDomains checks that each member runs OVMF from its own NVRAM file in the pool, with
// the CPU given ("" for libvirt's default).
func checkEFIDomains(t *testing.T, cpu string, members ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for _, m := range members {
			dom, err := liveDomain(t, m)
			if err != nil {
				return err
			}
			o := dom.OS
			switch {
			case o.Loader == nil || !strings.Contains(o.Loader.Path, "OVMF"):
				return fmt.Errorf("%s runs no OVMF loader: %+v", m, o.Loader)
			case o.NVRam == nil || o.NVRam.NVRam != nvramPath(t, m):
				return fmt.Errorf("%s's NVRAM is %+v, want %s", m, o.NVRam, nvramPath(t, m))
			}
			// The CPU as defined: a running host-model domain shows the model it was expanded to.
			if dom, err = readDomain(t, m, golibvirt.DomainXMLInactive); err != nil {
				return err
			}
			got := ""
			if c := dom.CPU; c != nil {
				got = c.Mode
				if c.Model != nil && c.Mode == "custom" {
					got += " " + c.Model.Value
				}
			}
			if cpu != "" && got != cpu {
				return fmt.Errorf("%s's CPU is %q, want %q", m, got, cpu)
			}
		}
		return nil
	}
}

// efiGroup is the configuration of the EFI group: size members with a data disk, the cpu block
// given, and the extra group attributes.
func efiGroup(name string, size int, cpu, extra string) string {
	return groupConfig(name, size, "    firmware = \"efi\"\n"+cpu+diskBlocks(16, "data"), extra)
}

// TestAccFirmware_efiNVRAM: an EFI group of 2 boots OVMF, each member from its own NVRAM volume
// in the pool. The NVRAM keeps its bytes across a restart that leaves the member stopped (the
// whole file's checksum) and its variables across a restart of a running member caused by a cpu
// change (a marker variable the test wrote, and OVMF's boot entries), while the data disks keep
// their bytes; a replacement gives a fresh NVRAM; scale-in and destroy delete the NVRAM volumes.
func TestAccFirmware_efiNVRAM(t *testing.T) {
	name := testPrefix + "efi"
	m1, m2 := name+"-1", name+"-2"
	nv, sums, uuids := nvramSums{}, checksums{}, domainUUIDs{}
	hostModel := "    cpu {\n      mode = \"host-model\"\n    }\n"
	custom := "    cpu {\n      mode  = \"custom\"\n      model = \"qemu64\"\n    }\n"
	stopped := "  running = false\n"
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(s *terraform.State) error {
			if err := checkNothingLeft(t, name)(s); err != nil {
				return err
			}
			return checkNVRAMGone(t, m1, m2)(s)
		},
		Steps: []resource.TestStep{
			{
				Config: efiGroup(name, 2, "", ""),
				Check:  resource.ComposeTestCheckFunc(checkEFIDomains(t, "", m1, m2), uuids.record(t, name)),
			},
			{
				// OVMF writes its boot entries, then the members stop: their NVRAM may be read.
				PreConfig: func() { waitBootEntries(t, m1, m2) },
				Config:    efiGroup(name, 2, "", stopped),
			},
			{
				// A RESTART of stopped members (a cpu change): the new definition, no start.
				PreConfig: func() {
					for _, m := range []string{m1, m2} {
						addMarker(t, m)
						sums.write(t, m+"-data.qcow2", 0x5a)
					}
					nv.record(t, m1, m2)
				},
				Config: efiGroup(name, 2, hostModel, stopped),
				Check: resource.ComposeTestCheckFunc(
					nv.same(t, m1, m2), sums.same(t, m1+"-data.qcow2"), sums.same(t, m2+"-data.qcow2"),
					uuids.check(t, name, m1, true), uuids.check(t, name, m2, true),
				),
			},
			{
				Config: efiGroup(name, 2, hostModel, ""),
				Check:  resource.ComposeTestCheckFunc(checkEFIDomains(t, "host-model", m1, m2), checkMarker(t, true, m1, m2)),
			},
			{
				// A RESTART of running members: the NVRAM is the same file, with the marker.
				Config: efiGroup(name, 2, custom, ""),
				Check: resource.ComposeTestCheckFunc(
					uuids.check(t, name, m1, true), uuids.check(t, name, m2, true),
					checkEFIDomains(t, "custom qemu64", m1, m2), checkMarker(t, true, m1, m2),
					sums.same(t, m1+"-data.qcow2"), sums.same(t, m2+"-data.qcow2"),
				),
			},
			{
				// A REPLACE of the first member only: its NVRAM is fresh, the other's untouched.
				Config: efiGroup(name, 2, custom, "") + pic("n1", m1, nil, map[string]string{"role": "new"}, `  minimal_action = "REPLACE"`),
				Check: resource.ComposeTestCheckFunc(
					uuids.check(t, name, m1, false), uuids.check(t, name, m2, true),
					checkMarker(t, false, m1), checkMarker(t, true, m2), checkEFIDomains(t, "custom qemu64", m1, m2),
				),
			},
			{
				// Scale-in deletes the removed member's NVRAM volume, and only its.
				Config: efiGroup(name, 1, custom, ""),
				Check:  resource.ComposeTestCheckFunc(checkNVRAMGone(t, m2), checkEFIDomains(t, "custom qemu64", m1)),
			},
			{
				// What a scale-in killed between the deletion of the NVRAM and the undefinition
				// used to leave: the removed member's NVRAM with no domain, which the group's
				// inventory still holds (the killed run never wrote its end). The group's destroy
				// sweeps it (CheckDestroy), though the pool never listed it. (An NVRAM the
				// inventory does not hold is left: TestAccStatefulGroup_destroyLeavesWhatTheGroupDidNotMake.)
				PreConfig: func() {
					if err := os.WriteFile(nvramPath(t, m2), make([]byte, 64<<10), 0o600); err != nil {
						t.Fatal(err)
					}
					anotherApplyChanges(t, name, testPrefix+"killed-scale-in", func(s *engine.GroupState) {
						s.Inventory.Items = append(s.Inventory.Items, engine.Made{Kind: engine.MadeNVRAM, Host: engine.DefaultHost, Name: engine.NVRAMVolumeName(m2), Confirmed: true})
					})
				},
				Config: efiGroup(name, 1, custom, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
			},
		},
	})
}

// TestAccFirmware_badInput: a cpu model the host does not have, an unknown machine, a cpu mode
// the domain type does not offer, Secure Boot on the default machine and a disk named nvram are
// refused at plan, naming the attribute and the value and saying what is allowed, and the group's
// member keeps its domain and definition.
func TestAccFirmware_badInput(t *testing.T) {
	name := testPrefix + "fwbad"
	member := name + "-1"
	good := groupConfig(name, 1, "", "  running = false\n")
	tmpl := func(body string) string { return groupConfig(name, 1, body, "  running = false\n") }
	var before string
	definition := func() (string, error) {
		l := testLibvirt(t).Raw()
		d, err := l.DomainLookupByName(member)
		if err != nil {
			return "", err
		}
		return l.DomainGetXMLDesc(d, 0)
	}
	unchanged := func() {
		now, err := definition()
		if err != nil || now != before {
			t.Fatalf("the member's definition changed (%v):\n%s\nwas\n%s", err, now, before)
		}
	}
	cases := []struct{ config, err string }{
		{tmpl("    cpu {\n      mode  = \"custom\"\n      model = \"Tfacc-Bogus-CPU\"\n    }\n"),
			`cpu model = "Tfacc-Bogus-CPU" is not a model it knows for qemu domains.*Usable there: .*qemu64`},
		{tmpl("    machine = \"pc-q35-99.0\"\n"), `machine = "pc-q35-99.0" is not a machine type .* lists for qemu domains.*pc, q35, pc-i440fx-`},
		{tmpl("    cpu {\n      mode = \"host-passthrough\"\n    }\n"), `cpu mode = "host-passthrough" is not supported for qemu domains.*offers host-model`},
		{tmpl("    firmware    = \"efi\"\n    secure_boot = true\n"), `secure_boot = true needs a q35 machine`},
		{tmpl(diskBlocks(16, "nvram")), `must be none of: \["boot" "nvram"\], got: "nvram"`},
	}
	steps := []resource.TestStep{{
		Config: good,
		Check: func(*terraform.State) error {
			var err error
			before, err = definition()
			return err
		},
	}}
	for _, c := range cases {
		steps = append(steps, resource.TestStep{PreConfig: unchanged, Config: c.config, ExpectError: regexpMust("(?s)" + c.err)})
	}
	steps = append(steps, resource.TestStep{PreConfig: unchanged, Config: good, PlanOnly: true})
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps:                    steps,
	})
}

// TestAccFirmware_secureBoot: a q35 EFI member with secure_boot runs the OVMF build that enforces
// Secure Boot, its NVRAM made from the variable store with the keys enrolled.
func TestAccFirmware_secureBoot(t *testing.T) {
	name := testPrefix + "secboot"
	member := name + "-1"
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(s *terraform.State) error {
			if err := checkNothingLeft(t, name)(s); err != nil {
				return err
			}
			return checkNVRAMGone(t, member)(s)
		},
		Steps: []resource.TestStep{{
			Config: groupConfig(name, 1, "    firmware    = \"efi\"\n    secure_boot = true\n    machine     = \"q35\"\n", ""),
			Check: resource.ComposeTestCheckFunc(
				checkEFIDomains(t, "", member),
				func(*terraform.State) error {
					dom, err := liveDomain(t, member)
					if err != nil {
						return err
					}
					o := dom.OS
					switch {
					case o.Loader.Secure != "yes":
						return fmt.Errorf("%s's loader %s is not a Secure Boot build", member, o.Loader.Path)
					case !strings.Contains(o.NVRam.Template, ".ms.") && !strings.Contains(o.NVRam.Template, "secboot"):
						return fmt.Errorf("%s's NVRAM template %s has no keys enrolled", member, o.NVRam.Template)
					case !strings.HasPrefix(o.Type.Machine, "pc-q35-"):
						return fmt.Errorf("%s's machine is %s", member, o.Type.Machine)
					case dom.Features == nil || dom.Features.SMM == nil || dom.Features.SMM.State != "on":
						return fmt.Errorf("%s runs without SMM", member)
					}
					return nil
				},
			),
		}},
	})
}
