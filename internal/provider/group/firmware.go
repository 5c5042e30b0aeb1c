package group

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/store"
)

// The template's firmware, machine and cpu: schema, model conversion, and the checks at plan,
// against each other (engine.FirmwareProblems) and against the host's domain capabilities.

func firmwareAttribute() schema.Attribute {
	return schema.StringAttribute{
		MarkdownDescription: "`bios` (SeaBIOS, the default when not set) or `efi` (UEFI: OVMF, which the host must have, Debian's `ovmf` package; libvirt picks the build from the host's firmware descriptors). An EFI member has its own NVRAM, the raw volume `<member>-nvram.fd` in the group's pool (which must be a directory pool), holding its UEFI variables (boot entries): libvirt makes it from the firmware's template at the member's first start; it is kept across restarts, made fresh when the member is replaced, and deleted with the member. A change replaces the members (REPLACE): a boot disk is made for one firmware. Checked at plan against the member's host.",
		Optional:            true,
		Validators:          []validator.String{stringvalidator.OneOf(engine.Firmwares...)},
	}
}

func secureBootAttribute() schema.Attribute {
	return schema.BoolAttribute{
		MarkdownDescription: "With `firmware = \"efi\"` on a q35 `machine`: boot with an OVMF build that enforces Secure Boot, its NVRAM made from a variable store with the usual keys enrolled (SMM is turned on). Default `false`. A change replaces the members (REPLACE): the keys live in the NVRAM, which a new member gets fresh.",
		Optional:            true,
	}
}

func machineAttribute() schema.Attribute {
	return schema.StringAttribute{
		MarkdownDescription: "The QEMU machine type: `pc` (i440fx), `q35`, or a versioned name the host lists (`pc-q35-7.2`; `virsh capabilities` lists them). Default: libvirt's (`pc`). Compared as written, never as libvirt expands it. Checked at plan against the member's host. A change restarts the members (RESTART).",
		Optional:            true,
		Validators:          []validator.String{stringvalidator.LengthAtLeast(1)},
	}
}

func cpuBlock() schema.Block {
	return schema.SingleNestedBlock{
		MarkdownDescription: "The guest CPU; without the block, libvirt's default CPU model. Checked at plan against what the member's host offers a domain of the template's `domain_type` (`virsh domcapabilities --virttype <type>`): under `qemu` (TCG) `host-passthrough` is not offered. A change restarts the members (RESTART).",
		Attributes: map[string]schema.Attribute{
			"mode": schema.StringAttribute{
				MarkdownDescription: "`host-passthrough` (the host's CPU as it is), `host-model` (a model close to the host's, with its features) or `custom` (the named `model`). Required in the block.",
				Optional:            true,
				Validators:          []validator.String{stringvalidator.OneOf(engine.CPUModes...)},
			},
			"model": schema.StringAttribute{
				MarkdownDescription: "The CPU model of mode `custom`, one the host can run (`qemu64`, `Westmere`, ...); only with `custom`.",
				Optional:            true,
				Validators:          []validator.String{stringvalidator.LengthAtLeast(1)},
			},
		},
	}
}

type cpuModel struct {
	Mode  types.String `tfsdk:"mode"`
	Model types.String `tfsdk:"model"`
}

// engineCPU is the block as the engine reads it; nil without the block.
func (c *cpuModel) engineCPU() *engine.CPU {
	if c == nil {
		return nil
	}
	return &engine.CPU{Mode: c.Mode.ValueString(), Model: c.Model.ValueString()}
}

// firmwareKnown reports whether the firmware settings are known.
func (t *HardwareModel) firmwareKnown() bool {
	if !providerdata.Known(t.Firmware, t.SecureBoot, t.Machine) {
		return false
	}
	return t.CPU == nil || providerdata.Known(t.CPU.Mode, t.CPU.Model)
}

// setFirmware fills the engine template's firmware settings from the block.
func (t *HardwareModel) setFirmware(et *engine.Template) {
	et.Firmware, et.SecureBoot, et.Machine, et.CPU = t.Firmware.ValueString(), t.SecureBoot.ValueBool(), t.Machine.ValueString(), t.CPU.engineCPU()
}

// firmwareSpec stores the firmware settings as written.
func (t *HardwareModel) firmwareSpec(s *store.ResourceTemplate) {
	s.Firmware, s.Machine = providerdata.OptString(t.Firmware), providerdata.OptString(t.Machine)
	if !t.SecureBoot.IsNull() && !t.SecureBoot.IsUnknown() {
		v := t.SecureBoot.ValueBool()
		s.SecureBoot = &v
	}
	if c := t.CPU; c != nil {
		s.CPU = &store.CPU{Mode: c.Mode.ValueString(), Model: c.Model.ValueString()}
	}
}

// firmwareFromSpec fills the firmware settings from the stored configuration.
func (t *HardwareModel) firmwareFromSpec(s store.ResourceTemplate) {
	t.Firmware, t.Machine, t.SecureBoot = providerdata.FromOptString(s.Firmware), providerdata.FromOptString(s.Machine), types.BoolNull()
	if s.SecureBoot != nil {
		t.SecureBoot = types.BoolValue(*s.SecureBoot)
	}
	if c := s.CPU; c != nil {
		t.CPU = &cpuModel{Mode: types.StringValue(c.Mode), Model: types.StringNull()}
		if c.Model != "" {
			t.CPU.Model = types.StringValue(c.Model)
		}
	}
}

// checkFirmware refuses firmware, machine and cpu settings that contradict each other, on the
// attribute each is about. A block without mode is refused here too: the framework does not
// enforce a nested attribute's presence in an optional single block.
func checkFirmware(diags *diag.Diagnostics, t *TemplateModel) {
	if t == nil || !t.firmwareKnown() {
		return
	}
	tp := path.Root("template")
	if t.CPU != nil && t.CPU.Mode.IsNull() {
		diags.AddAttributeError(tp.AtName("cpu").AtName("mode"), "Missing cpu mode", fmt.Sprintf("the cpu block needs mode: one of %s.", strings.Join(engine.CPUModes, ", ")))
		return
	}
	var et engine.Template
	t.setFirmware(&et)
	for _, p := range engine.FirmwareProblems(et) {
		at := tp
		for _, part := range strings.Split(p.Field, ".") {
			at = at.AtName(part)
		}
		diags.AddAttributeError(at, "Invalid "+p.Field, p.Problem+".")
	}
}

// firmwareChanged reports whether the settings that the host's capabilities judge changed.
func firmwareChanged(t, prior *TemplateModel) bool {
	if prior == nil {
		return true
	}
	return !t.Firmware.Equal(prior.Firmware) || !t.SecureBoot.Equal(prior.SecureBoot) || !t.Machine.Equal(prior.Machine) ||
		!t.DomainType.Equal(prior.DomainType) || !cpuEqual(t.CPU, prior.CPU)
}

func cpuEqual(a, b *cpuModel) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Mode.Equal(b.Mode) && a.Model.Equal(b.Model)
}

// checkHostFirmware checks the template's firmware, machine and cpu against what host offers a
// domain of domainType: the machine must be one it lists, EFI and Secure Boot need the firmware
// installed, the cpu mode must be supported and a custom model usable. Each refusal names the
// attribute, the value, and what the host offers or what to install.
func checkHostFirmware(ctx context.Context, diags *diag.Diagnostics, b backend.Host, host, domainType string, t engine.Template, poolDir bool) {
	tp := path.Root("template")
	if t.Machine == "" && !t.EFI() && t.CPU == nil {
		return
	}
	caps, err := b.DomainCaps(ctx, domainType, t.Machine)
	switch {
	case errors.Is(err, backend.ErrNotFound) && t.Machine != "" && !slices.Contains(caps.Machines, t.Machine):
		diags.AddAttributeError(tp.AtName("machine"), "Unknown machine",
			fmt.Sprintf("machine = %q is not a machine type %s lists for %s domains. Use pc, q35, or a versioned name it lists (%s; `virsh capabilities` there lists them all).", t.Machine, providerdata.OnHost(host), domainType, newestMachines(caps.Machines)))
		return
	case err != nil:
		diags.AddError("Cannot read the host's domain capabilities", fmt.Sprintf("%s, domain type %q: %s", providerdata.OnHost(host), domainType, err))
		return
	}
	if t.EFI() {
		switch {
		case !caps.EFI:
			diags.AddAttributeError(tp.AtName("firmware"), "No UEFI firmware on the host",
				fmt.Sprintf("firmware = %q, but %s has no UEFI firmware that libvirt can use for %s domains on machine %s. Install OVMF there (Debian and Ubuntu: `apt-get install ovmf`; Fedora: `edk2-ovmf`), or use firmware = %q.", engine.FirmwareEFI, providerdata.OnHost(host), domainType, caps.CanonicalMachine, engine.FirmwareBIOS))
		case t.SecureBoot && !caps.SecureBoot:
			diags.AddAttributeError(tp.AtName("secure_boot"), "No Secure Boot firmware on the host",
				fmt.Sprintf("secure_boot = true, but %s has no OVMF build that enforces Secure Boot for machine %s (it has %s). Install Debian's `ovmf` package (it has OVMF_CODE_4M.secboot.fd), or leave secure_boot out.", providerdata.OnHost(host), caps.CanonicalMachine, strings.Join(caps.Loaders, ", ")))
		}
		if !poolDir {
			diags.AddAttributeError(tp.AtName("firmware"), "EFI needs a directory pool",
				fmt.Sprintf("firmware = %q keeps each member's NVRAM as a file in the group's pool, and the pool on %s is not a directory pool. Use a directory pool (virt_pool makes one).", engine.FirmwareEFI, providerdata.OnHost(host)))
		}
	}
	if c := t.CPU; c != nil {
		p := tp.AtName("cpu")
		switch {
		case !slices.Contains(caps.CPUModes, c.Mode):
			diags.AddAttributeError(p.AtName("mode"), "CPU mode not supported",
				fmt.Sprintf("cpu mode = %q is not supported for %s domains on %s, which offers %s.%s", c.Mode, domainType, providerdata.OnHost(host), orNone(caps.CPUModes), tcgHint(domainType, c.Mode)))
		case c.Mode == engine.CPUCustom && !slices.Contains(caps.CPUModels, c.Model):
			why := "is not a model it knows"
			if slices.Contains(caps.UnusableCPUModels, c.Model) {
				why = "is one it knows but cannot run"
			}
			diags.AddAttributeError(p.AtName("model"), "CPU model not usable",
				fmt.Sprintf("cpu model = %q %s for %s domains on %s. Usable there: %s.", c.Model, why, domainType, providerdata.OnHost(host), orNone(caps.CPUModels)))
		}
	}
}

// tcgHint says what to use instead of host-passthrough under TCG.
func tcgHint(domainType, mode string) string {
	if domainType == "qemu" && mode == engine.CPUHostPassthrough {
		return " Under TCG (domain_type = \"qemu\") there is no host CPU to pass through: use host-model, or custom with a model."
	}
	return ""
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}

// newestMachines names the aliases and the newest versioned pc and q35 machines of a listing,
// which is long.
func newestMachines(machines []string) string {
	var out []string
	newest := map[string]string{}
	for _, m := range machines {
		switch {
		case m == "pc" || m == "q35":
			out = append(out, m)
		case strings.HasPrefix(m, "pc-q35-"):
			if newerMachine(m, newest["q35"]) {
				newest["q35"] = m
			}
		case strings.HasPrefix(m, "pc-i440fx-"):
			if newerMachine(m, newest["pc"]) {
				newest["pc"] = m
			}
		}
	}
	for _, k := range []string{"pc", "q35"} {
		if newest[k] != "" {
			out = append(out, newest[k])
		}
	}
	return orNone(out)
}

// newerMachine compares versioned machine names by their version (pc-q35-7.2 > pc-q35-7.10 is
// false).
func newerMachine(a, b string) bool {
	if b == "" {
		return true
	}
	va, vb := machineVersion(a), machineVersion(b)
	return slices.Compare(va, vb) > 0
}

func machineVersion(m string) []int {
	i := strings.LastIndexByte(m, '-')
	var out []int
	for _, part := range strings.Split(m[i+1:], ".") {
		n := 0
		for _, r := range part {
			if r < '0' || r > '9' {
				break
			}
			n = n*10 + int(r-'0')
		}
		out = append(out, n)
	}
	return out
}
