package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFirmwareProblems(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		t    Template
		want []string // fields with a problem
	}{
		"nothing set":                {t: Template{}},
		"efi":                        {t: Template{Shape: Shape{Hardware: Hardware{Firmware: FirmwareEFI}}}},
		"secure boot on q35":         {t: Template{Shape: Shape{Hardware: Hardware{Firmware: FirmwareEFI, SecureBoot: true, Machine: "q35"}}}},
		"secure boot on pc-q35-7.2":  {t: Template{Shape: Shape{Hardware: Hardware{Firmware: FirmwareEFI, SecureBoot: true, Machine: "pc-q35-7.2"}}}},
		"secure boot without efi":    {t: Template{Shape: Shape{Hardware: Hardware{SecureBoot: true, Machine: "q35"}}}, want: []string{"secure_boot"}},
		"secure boot on the default": {t: Template{Shape: Shape{Hardware: Hardware{Firmware: FirmwareEFI, SecureBoot: true}}}, want: []string{"secure_boot"}},
		"secure boot on bios and pc": {t: Template{Shape: Shape{Hardware: Hardware{Firmware: FirmwareBIOS, SecureBoot: true, Machine: "pc"}}}, want: []string{"secure_boot", "secure_boot"}},
		"custom with model":          {t: Template{Shape: Shape{Hardware: Hardware{CPU: &CPU{Mode: CPUCustom, Model: "qemu64"}}}}},
		"custom without model":       {t: Template{Shape: Shape{Hardware: Hardware{CPU: &CPU{Mode: CPUCustom}}}}, want: []string{"cpu.model"}},
		"passthrough with model":     {t: Template{Shape: Shape{Hardware: Hardware{CPU: &CPU{Mode: CPUHostPassthrough, Model: "qemu64"}}}}, want: []string{"cpu.model"}},
		"host-model":                 {t: Template{Shape: Shape{Hardware: Hardware{CPU: &CPU{Mode: CPUHostModel}}}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, p := range FirmwareProblems(tc.t) {
				got = append(got, p.Field)
				if p.Problem == "" {
					t.Errorf("%s: a problem without words", p.Field)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestFirmwareDiff: the change classes of firmware, secure boot, machine and cpu, with their
// reasons, and the NVRAM the desired instance names.
func TestFirmwareDiff(t *testing.T) {
	t.Parallel()
	base := Template{Shape: Shape{DomainType: "qemu", VCPU: 1, MemoryMiB: 64}, BootDisk: BootDisk{SizeMiB: 16}}
	with := func(f func(*Template)) Template { t := base; f(&t); return t }
	efi := with(func(t *Template) { t.Firmware = FirmwareEFI })
	cases := map[string]struct {
		from, to Template
		action   Action
		reasons  []string
	}{
		"bios written out is bios": {from: base, to: with(func(t *Template) { t.Firmware = FirmwareBIOS }), action: ActionNone},
		"bios to efi":              {from: base, to: efi, action: ActionReplace, reasons: []string{"firmware bios -> efi"}},
		"efi to bios":              {from: efi, to: base, action: ActionReplace, reasons: []string{"firmware efi -> bios"}},
		"secure boot on": {from: with(func(t *Template) { t.Firmware, t.Machine = FirmwareEFI, "q35" }),
			to: with(func(t *Template) { t.Firmware, t.Machine, t.SecureBoot = FirmwareEFI, "q35", true }), action: ActionReplace, reasons: []string{"secure_boot false -> true"}},
		"machine set":     {from: base, to: with(func(t *Template) { t.Machine = "q35" }), action: ActionRestart, reasons: []string{"machine default -> q35"}},
		"machine changed": {from: with(func(t *Template) { t.Machine = "pc" }), to: with(func(t *Template) { t.Machine = "pc-i440fx-7.2" }), action: ActionRestart, reasons: []string{"machine pc -> pc-i440fx-7.2"}},
		"cpu set":         {from: base, to: with(func(t *Template) { t.CPU = &CPU{Mode: CPUHostModel} }), action: ActionRestart, reasons: []string{"cpu default -> host-model"}},
		"cpu model": {from: with(func(t *Template) { t.CPU = &CPU{Mode: CPUCustom, Model: "qemu64"} }), to: with(func(t *Template) { t.CPU = &CPU{Mode: CPUCustom, Model: "Westmere"} }),
			action: ActionRestart, reasons: []string{"cpu custom qemu64 -> custom Westmere"}},
		"same cpu":             {from: with(func(t *Template) { t.CPU = &CPU{Mode: CPUHostModel} }), to: with(func(t *Template) { t.CPU = &CPU{Mode: CPUHostModel} }), action: ActionNone},
		"cpu on an efi member": {from: efi, to: with(func(t *Template) { t.Firmware, t.CPU = FirmwareEFI, &CPU{Mode: CPUHostModel} }), action: ActionRestart, reasons: []string{"cpu default -> host-model"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			action, reasons := Diff(tc.from, tc.to)
			var got []string
			for _, r := range reasons {
				got = append(got, r.What)
			}
			if action != tc.action {
				t.Errorf("action %s, want %s", action, tc.action)
			}
			if diff := cmp.Diff(tc.reasons, got); diff != "" {
				t.Errorf("reasons (-want +got):\n%s", diff)
			}
		})
	}
	if got := Desire("db-1", efi, PreservedState{}, PreservedState{}).NVRAM; got != "db-1-nvram.fd" {
		t.Errorf("an EFI member's NVRAM is %q, want db-1-nvram.fd", got)
	}
	if got := Desire("db-1", base, PreservedState{}, PreservedState{}).NVRAM; got != "" {
		t.Errorf("a BIOS member has NVRAM %q", got)
	}
}

// TestFirmwareKeepsRevisions: a template and a desired instance without the new fields hash as
// they did before the fields existed (the hashes are those canon_test.go pins for such values),
// and each new field, once set, changes them.
func TestFirmwareKeepsRevisions(t *testing.T) {
	t.Parallel()
	base := Template{Shape: Shape{DomainType: "qemu", VCPU: 1, MemoryMiB: 64}, BootDisk: BootDisk{SizeMiB: 16}}
	const before = `{"domain_type":"qemu","vcpu":1,"memory_mib":64,"boot_disk":{"size_mib":16}}`
	if got := string(templateJSON(base.Canonical())); got != before {
		t.Errorf("a template without the new fields encodes as\n%s\nnot\n%s", got, before)
	}
	bios := base
	bios.Firmware = FirmwareBIOS
	if bios.Revision() != base.Revision() {
		t.Errorf("firmware = bios changes the revision %s -> %s", base.Revision(), bios.Revision())
	}
	seen := map[string]string{base.Revision(): "none"}
	for name, tt := range map[string]Template{
		"efi":     func() Template { t := base; t.Firmware = FirmwareEFI; return t }(),
		"secure":  func() Template { t := base; t.Firmware, t.SecureBoot, t.Machine = FirmwareEFI, true, "q35"; return t }(),
		"machine": func() Template { t := base; t.Machine = "q35"; return t }(),
		"cpu":     func() Template { t := base; t.CPU = &CPU{Mode: CPUHostModel}; return t }(),
		"model":   func() Template { t := base; t.CPU = &CPU{Mode: CPUCustom, Model: "qemu64"}; return t }(),
	} {
		r := tt.Revision()
		if other, dup := seen[r]; dup {
			t.Errorf("%s has the revision of %s", name, other)
		}
		seen[r] = name
	}
	d := Desire("db-1", base, PreservedState{}, PreservedState{})
	if got := string(desiredJSON(d)); got != `{"name":"db-1","domain_type":"qemu","vcpu":1,"memory_mib":64,"disks":[{"device_name":"boot","source":"db-1-boot.qcow2","size_mib":16}]}` {
		t.Errorf("a desired instance without the new fields encodes as %s", got)
	}
}
