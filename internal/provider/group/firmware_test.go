package group

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// TestCheckHostFirmware checks templates against fake hosts' domain capabilities: each refusal
// is on the attribute, quotes the value and says what the host offers or what to install.
func TestCheckHostFirmware(t *testing.T) {
	t.Parallel()
	noOVMF := fake.DefaultCaps("qemu")
	noOVMF.EFI, noOVMF.SecureBoot, noOVMF.Loaders = false, false, nil
	noSecboot := fake.DefaultCaps("qemu")
	noSecboot.SecureBoot = false
	type want struct {
		Path  string
		Words []string
	}
	cases := map[string]struct {
		domainType string
		t          engine.Template
		caps       *backend.DomainCaps
		notDir     bool
		want       []want
	}{
		"nothing asked": {domainType: "qemu", t: engine.Template{}},
		"efi":           {domainType: "qemu", t: engine.Template{Shape: engine.Shape{Hardware: engine.Hardware{Firmware: engine.FirmwareEFI}}}},
		"efi without ovmf": {domainType: "qemu", t: engine.Template{Shape: engine.Shape{Hardware: engine.Hardware{Firmware: engine.FirmwareEFI}}}, caps: &noOVMF,
			want: []want{{"template.firmware", []string{`firmware = "efi"`, "apt-get install ovmf", `firmware = "bios"`}}}},
		"secure boot without a secboot build": {domainType: "qemu", t: engine.Template{Shape: engine.Shape{Hardware: engine.Hardware{Firmware: engine.FirmwareEFI, SecureBoot: true, Machine: "q35"}}}, caps: &noSecboot,
			want: []want{{"template.secure_boot", []string{"secure_boot = true", "ovmf"}}}},
		"efi in a pool that is no directory": {domainType: "qemu", t: engine.Template{Shape: engine.Shape{Hardware: engine.Hardware{Firmware: engine.FirmwareEFI}}}, notDir: true,
			want: []want{{"template.firmware", []string{"directory pool"}}}},
		"machine q35":       {domainType: "qemu", t: engine.Template{Shape: engine.Shape{Hardware: engine.Hardware{Machine: "q35"}}}},
		"versioned machine": {domainType: "qemu", t: engine.Template{Shape: engine.Shape{Hardware: engine.Hardware{Machine: "pc-q35-7.2"}}}},
		"unknown machine": {domainType: "qemu", t: engine.Template{Shape: engine.Shape{Hardware: engine.Hardware{Machine: "pc-q35-99.0"}}},
			want: []want{{"template.machine", []string{`machine = "pc-q35-99.0"`, "pc, q35, pc-i440fx-7.2, pc-q35-7.2"}}}},
		"host-passthrough under kvm": {domainType: "kvm", t: engine.Template{Shape: engine.Shape{Hardware: engine.Hardware{CPU: &engine.CPU{Mode: engine.CPUHostPassthrough}}}}},
		"host-passthrough under tcg": {domainType: "qemu", t: engine.Template{Shape: engine.Shape{Hardware: engine.Hardware{CPU: &engine.CPU{Mode: engine.CPUHostPassthrough}}}},
			want: []want{{"template.cpu.mode", []string{`cpu mode = "host-passthrough"`, "offers host-model, custom", "TCG"}}}},
		"host-model under tcg": {domainType: "qemu", t: engine.Template{Shape: engine.Shape{Hardware: engine.Hardware{CPU: &engine.CPU{Mode: engine.CPUHostModel}}}}},
		"usable model":         {domainType: "qemu", t: engine.Template{Shape: engine.Shape{Hardware: engine.Hardware{CPU: &engine.CPU{Mode: engine.CPUCustom, Model: "Westmere"}}}}},
		"unusable model": {domainType: "qemu", t: engine.Template{Shape: engine.Shape{Hardware: engine.Hardware{CPU: &engine.CPU{Mode: engine.CPUCustom, Model: "EPYC"}}}},
			want: []want{{"template.cpu.model", []string{`cpu model = "EPYC"`, "cannot run", "Westmere, kvm64, qemu64"}}}},
		"unknown model": {domainType: "qemu", t: engine.Template{Shape: engine.Shape{Hardware: engine.Hardware{CPU: &engine.CPU{Mode: engine.CPUCustom, Model: "Bogus-CPU"}}}},
			want: []want{{"template.cpu.model", []string{`cpu model = "Bogus-CPU"`, "not a model it knows"}}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := fake.New()
			if tc.caps != nil {
				b.Caps = map[string]backend.DomainCaps{tc.domainType: *tc.caps}
			}
			var diags diag.Diagnostics
			checkHostFirmware(context.Background(), &diags, b, "default", tc.domainType, tc.t, !tc.notDir)
			var got []want
			for _, d := range diags {
				p := ""
				if a, ok := d.(diag.DiagnosticWithPath); ok {
					p = a.Path().String()
				}
				w := want{Path: p}
				for _, tw := range tc.want {
					for _, word := range tw.Words {
						if tw.Path == p && strings.Contains(d.Detail(), word) {
							w.Words = append(w.Words, word)
						}
					}
				}
				got = append(got, w)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s\n%v", diff, diags)
			}
			if len(tc.t.Machine)+len(tc.t.Firmware) == 0 && tc.t.CPU == nil && b.Calls["domain-caps"] > 0 {
				t.Error("a template without firmware settings read the host's capabilities")
			}
		})
	}
}

// TestCheckFirmware: the settings that contradict each other are refused at plan on their
// attribute, whatever the host.
func TestCheckFirmware(t *testing.T) {
	t.Parallel()
	str := types.StringValue
	null := types.StringNull()
	cases := map[string]struct {
		t    TemplateModel
		want []string
	}{
		"none":    {t: TemplateModel{HardwareModel: HardwareModel{Firmware: null, Machine: null, SecureBoot: types.BoolNull()}}},
		"efi q35": {t: TemplateModel{HardwareModel: HardwareModel{Firmware: str("efi"), Machine: str("q35"), SecureBoot: types.BoolValue(true)}}},
		"secure boot on bios": {t: TemplateModel{HardwareModel: HardwareModel{Firmware: str("bios"), Machine: str("q35"), SecureBoot: types.BoolValue(true)}},
			want: []string{"template.secure_boot"}},
		"secure boot on pc": {t: TemplateModel{HardwareModel: HardwareModel{Firmware: str("efi"), Machine: null, SecureBoot: types.BoolValue(true)}},
			want: []string{"template.secure_boot"}},
		"cpu without mode": {t: TemplateModel{HardwareModel: HardwareModel{Firmware: null, Machine: null, SecureBoot: types.BoolNull(), CPU: &cpuModel{Mode: null, Model: null}}},
			want: []string{"template.cpu.mode"}},
		"custom without model": {t: TemplateModel{HardwareModel: HardwareModel{Firmware: null, Machine: null, SecureBoot: types.BoolNull(), CPU: &cpuModel{Mode: str("custom"), Model: null}}},
			want: []string{"template.cpu.model"}},
		"model without custom": {t: TemplateModel{HardwareModel: HardwareModel{Firmware: null, Machine: null, SecureBoot: types.BoolNull(), CPU: &cpuModel{Mode: str("host-model"), Model: str("qemu64")}}},
			want: []string{"template.cpu.model"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var diags diag.Diagnostics
			checkFirmware(&diags, &tc.t)
			var got []string
			for _, d := range diags {
				if a, ok := d.(diag.DiagnosticWithPath); ok {
					got = append(got, a.Path().String())
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s\n%v", diff, diags)
			}
		})
	}
}
