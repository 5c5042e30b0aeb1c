package group

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/virtfleet/terraform-provider-virt/internal/diagnostics"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/store"
)

// HardwareModel is the template's hardware as configured, the attributes and blocks that become
// engine.Hardware. templateModel embeds it (the framework reads an embedded struct's fields as
// the block's own), and the methods below are the one place the provider converts it: to the
// engine (engineHardware), to the group record's configuration (hardwareSpec) and back
// (hardwareFromSpec). A new VM option is a field here, its schema in withHardwareBlocks, and a
// line in each of these. Its name is exported only because an embedded field takes its type's
// name, and the plan tests' cmp.Diff refuses unexported fields.
type HardwareModel struct {
	Firmware   types.String      `tfsdk:"firmware"`
	SecureBoot types.Bool        `tfsdk:"secure_boot"`
	Machine    types.String      `tfsdk:"machine"`
	CPU        *cpuModel         `tfsdk:"cpu"`
	Graphics   *graphicsModel    `tfsdk:"graphics"`
	RNG        *rngModel         `tfsdk:"rng"`
	Filesystem []filesystemModel `tfsdk:"filesystem"`
	TPM        *tpmModel         `tfsdk:"tpm"`
}

// hardwareKnown reports whether the hardware is known at plan time, so that it can be
// converted.
func (t *HardwareModel) hardwareKnown() bool { return t.firmwareKnown() && t.devicesKnown() }

// engineHardware is the hardware as the engine reads it.
func (t *HardwareModel) engineHardware() engine.Hardware {
	var et engine.Template
	t.setFirmware(&et)
	t.setDevices(&et)
	return et.Hardware
}

// hardwareSpec puts the hardware in the group record's configuration, as written.
func (t *HardwareModel) hardwareSpec(s *store.ResourceTemplate) {
	t.firmwareSpec(s)
	t.devicesSpec(s)
}

// hardwareFromSpec fills the hardware from the group record's configuration.
func (t *HardwareModel) hardwareFromSpec(s store.ResourceTemplate) {
	t.firmwareFromSpec(s)
	t.devicesFromSpec(s)
}

type graphicsModel struct {
	Type   types.String `tfsdk:"type"`
	Listen types.String `tfsdk:"listen"`
	// PasswordWO is write-only: Terraform sends it in the configuration of an apply and never
	// keeps it; in plans and state it is null.
	PasswordWO        types.String `tfsdk:"password_wo"`
	PasswordWOVersion types.Int64  `tfsdk:"password_wo_version"`
}

// rngModel is the rng block, which has no attributes: its presence is the setting.
type rngModel struct{}

type tpmModel struct {
	Model   types.String `tfsdk:"model"`
	Version types.String `tfsdk:"version"`
}

// engineTPM is the block as the engine reads it: nil without the block, its defaults filled.
func (t *tpmModel) engineTPM() *engine.TPM {
	if t == nil {
		return nil
	}
	out := &engine.TPM{Model: t.Model.ValueString(), Version: t.Version.ValueString()}
	if t.Model.IsNull() {
		out.Model = engine.DefaultTPMModel
	}
	if t.Version.IsNull() {
		out.Version = engine.TPMVersion2
	}
	return out
}

type filesystemModel struct {
	Source   types.String `tfsdk:"source"`
	Target   types.String `tfsdk:"target"`
	ReadOnly types.Bool   `tfsdk:"read_only"`
}

var (
	pathGraphics   = path.Root("template").AtName("graphics")
	pathFilesystem = path.Root("template").AtName("filesystem")
)

// engineGraphics is the block as the engine reads it: nil without the block, the listen address
// defaulted, and only the password's version.
func (g *graphicsModel) engineGraphics() *engine.Graphics {
	if g == nil {
		return nil
	}
	out := &engine.Graphics{Type: g.Type.ValueString(), Listen: g.Listen.ValueString(), PasswordVersion: g.PasswordWOVersion.ValueInt64()}
	if g.Listen.IsNull() {
		out.Listen = engine.DefaultGraphicsListen
	}
	return out
}

// engineFilesystems are the shares as the engine reads them, each source cleaned: it is the
// directory libvirt gets.
func engineFilesystems(fs []filesystemModel) []engine.Filesystem {
	var out []engine.Filesystem
	for _, f := range fs {
		out = append(out, engine.Filesystem{Source: filepath.Clean(f.Source.ValueString()), Target: f.Target.ValueString(), ReadOnly: f.ReadOnly.ValueBool()})
	}
	return out
}

// devicesKnown reports whether the devices are known at plan time. The password is left out:
// it is never in a plan.
func (t *HardwareModel) devicesKnown() bool {
	if g := t.Graphics; g != nil && !providerdata.Known(g.Type, g.Listen, g.PasswordWOVersion) {
		return false
	}
	for _, f := range t.Filesystem {
		if !providerdata.Known(f.Source, f.Target, f.ReadOnly) {
			return false
		}
	}
	return t.TPM == nil || providerdata.Known(t.TPM.Model, t.TPM.Version)
}

// setDevices puts the template's devices in the engine's template.
func (t *HardwareModel) setDevices(et *engine.Template) {
	et.Graphics = t.Graphics.engineGraphics()
	et.RNG = t.RNG != nil
	et.Filesystems = engineFilesystems(t.Filesystem)
	et.TPM = t.TPM.engineTPM()
}

// devicesSpec puts the devices in the group record's configuration; the password is never
// there, only its version.
func (t *HardwareModel) devicesSpec(s *store.ResourceTemplate) {
	if g := t.Graphics; g != nil {
		s.Graphics = &store.ResourceGraphics{Type: g.Type.ValueString(), Listen: providerdata.OptString(g.Listen)}
		if !g.PasswordWOVersion.IsNull() && !g.PasswordWOVersion.IsUnknown() {
			v := g.PasswordWOVersion.ValueInt64()
			s.Graphics.PasswordVersion = &v
		}
	}
	s.RNG = t.RNG != nil
	for _, f := range t.Filesystem {
		s.Filesystems = append(s.Filesystems, store.ResourceFilesystem{Source: f.Source.ValueString(), Target: f.Target.ValueString(), ReadOnly: optBool(f.ReadOnly)})
	}
	if tpm := t.TPM; tpm != nil {
		s.TPM = &store.ResourceTPM{Model: providerdata.OptString(tpm.Model), Version: providerdata.OptString(tpm.Version)}
	}
}

// devicesFromSpec fills the devices from the group record's configuration; the password is
// null, as Terraform keeps a write-only attribute.
func (t *HardwareModel) devicesFromSpec(s store.ResourceTemplate) {
	if g := s.Graphics; g != nil {
		t.Graphics = &graphicsModel{Type: types.StringValue(g.Type), Listen: providerdata.FromOptString(g.Listen), PasswordWO: types.StringNull(), PasswordWOVersion: types.Int64Null()}
		if g.PasswordVersion != nil {
			t.Graphics.PasswordWOVersion = types.Int64Value(*g.PasswordVersion)
		}
	}
	if s.RNG {
		t.RNG = &rngModel{}
	}
	// An empty list, as Terraform has a list of blocks that the configuration leaves out (as
	// decodeGroupSpec does for disks and interfaces).
	t.Filesystem = []filesystemModel{}
	for _, f := range s.Filesystems {
		fm := filesystemModel{Source: types.StringValue(f.Source), Target: types.StringValue(f.Target), ReadOnly: types.BoolNull()}
		if f.ReadOnly != nil {
			fm.ReadOnly = types.BoolValue(*f.ReadOnly)
		}
		t.Filesystem = append(t.Filesystem, fm)
	}
	if tpm := s.TPM; tpm != nil {
		t.TPM = &tpmModel{Model: providerdata.FromOptString(tpm.Model), Version: providerdata.FromOptString(tpm.Version)}
	}
}

func optBool(b types.Bool) *bool {
	if b.IsNull() || b.IsUnknown() {
		return nil
	}
	v := b.ValueBool()
	return &v
}

// graphicsPassword reads the console's write-only password from an apply's configuration: ""
// when there is none (no graphics block, no password, or a null value).
func graphicsPassword(ctx context.Context, config tfsdk.Config, diags *diag.Diagnostics) string {
	var pw types.String
	diags.Append(config.GetAttribute(ctx, pathGraphics.AtName("password_wo"), &pw)...)
	if pw.IsNull() || pw.IsUnknown() {
		return ""
	}
	return pw.ValueString()
}

// checkDevices reports, at validate time, what the devices' attributes cannot tell alone: a
// graphics type, a VNC password the protocol can carry, and read-only shares, which libvirt
// refuses.
func checkDevices(ctx context.Context, config tfsdk.Config, diags *diag.Diagnostics) {
	// What is not known yet (a dynamic block, a value from another resource) is checked at the
	// plan that knows it, so nothing here reads an unknown value into the model.
	var obj types.Object
	var ignored diag.Diagnostics
	ignored.Append(config.GetAttribute(ctx, pathGraphics, &obj)...)
	var g graphicsModel
	if !obj.IsNull() && !obj.IsUnknown() && !obj.As(ctx, &g, basetypes.ObjectAsOptions{UnhandledUnknownAsEmpty: true}).HasError() {
		if g.Type.IsNull() {
			diags.Append(diagnostics.RequiredInBlock(pathGraphics.AtName("type"), `"vnc" or "spice"`))
		}
		if providerdata.Known(g.Type, g.PasswordWO) && g.Type.ValueString() == engine.GraphicsVNC && len(g.PasswordWO.ValueString()) > engine.MaxVNCPasswordLength {
			diags.AddAttributeError(pathGraphics.AtName("password_wo"), "Invalid value",
				fmt.Sprintf("%s has %d characters; a VNC password has at most %d (the protocol uses no more, so a longer one would be weaker than it looks). Use a shorter one, or type = \"spice\".",
					pathGraphics.AtName("password_wo"), len(g.PasswordWO.ValueString()), engine.MaxVNCPasswordLength))
		}
	}
	var list types.List
	ignored.Append(config.GetAttribute(ctx, pathFilesystem, &list)...)
	if list.IsNull() || list.IsUnknown() {
		return
	}
	for i, el := range list.Elements() {
		o, ok := el.(types.Object)
		if !ok || o.IsNull() || o.IsUnknown() {
			continue
		}
		var f filesystemModel
		if o.As(ctx, &f, basetypes.ObjectAsOptions{UnhandledUnknownAsEmpty: true}).HasError() {
			continue
		}
		if providerdata.Known(f.ReadOnly) && f.ReadOnly.ValueBool() {
			at := pathFilesystem.AtListIndex(i).AtName("read_only")
			diags.AddAttributeError(at, "Read-only shares are not supported",
				fmt.Sprintf("%s = true: libvirt 9.0 refuses a read-only virtiofs share (\"virtiofs does not yet support read-only mode\"), and the provider does not give the guest a writable share instead. Remove read_only (or set it to false) and mount the share read-only in the guest (mount -o ro -t virtiofs %s /mnt), or share a directory the guest may write.",
					at, f.Target.ValueString()))
		}
	}
}

// FilesystemSourceProblem judges a share's source on one host: it must exist (said first, when
// the host's files can be seen), the provider must allow host paths, and the directory it
// resolves to is judged as any host path.
func FilesystemSourceProblem(src string, allowHostPaths bool, facts providerdata.HostFacts) providerdata.PathJudgement {
	if facts.Local && filepath.IsAbs(src) {
		if _, err := filepath.EvalSymlinks(src); err != nil {
			if j := providerdata.HostPathProblem(src, providerdata.DirPath, false, facts); j.Problem != "" {
				return j
			}
		}
	}
	if !allowHostPaths {
		return providerdata.PathJudgement{Problem: fmt.Sprintf("%q is a host directory, and host paths need allow_host_paths = true in the provider block: every member's guest can read and write the shared directory with the rights of virtiofsd (root for qemu:///system)", src)}
	}
	return providerdata.HostPathProblem(filepath.Clean(src), providerdata.DirPath, false, facts)
}

// checkFilesystems checks the shares' sources on every host of the group that the plan could
// put a member on: for a new or changed share all of them, else only the hosts the plan adds (as
// checkConsoleLogDir).
func (r *StatefulGroupResource) checkFilesystems(ctx context.Context, diags *diag.Diagnostics, plan, prior *StatefulGroupModel) {
	t := plan.Template
	if t == nil || len(t.Filesystem) == 0 {
		return
	}
	hosts := plan.hosts(ctx, diags)
	if len(hosts) == 0 {
		hosts = []string{engine.DefaultHost}
	}
	var priorHosts []string
	var priorShares []engine.Filesystem
	if prior != nil && prior.Template != nil {
		if priorHosts = prior.hosts(ctx, diags); len(priorHosts) == 0 {
			priorHosts = []string{engine.DefaultHost}
		}
		priorShares = engineFilesystems(prior.Template.Filesystem)
	}
	for i, f := range t.Filesystem {
		if !providerdata.Known(f.Source) {
			continue
		}
		src := f.Source.ValueString()
		unchanged := slices.ContainsFunc(priorShares, func(p engine.Filesystem) bool { return p.Source == filepath.Clean(src) })
		at := pathFilesystem.AtListIndex(i).AtName("source")
		for _, h := range hosts {
			if unchanged && slices.Contains(priorHosts, h) {
				continue
			}
			b, err := r.Data.Host(h)
			if err != nil {
				continue // an unknown host name is refused with distribution_policy.hosts
			}
			facts := providerdata.HostFactsOf(b)
			j := FilesystemSourceProblem(src, r.Data.AllowHostPaths, facts)
			switch {
			case j.Problem != "":
				diags.AddAttributeError(at, "Invalid filesystem source", fmt.Sprintf("filesystem %q source on host %s: %s.", f.Target.ValueString(), h, j.Problem))
			case j.Unseen:
				summary, detail := providerdata.UnseenWarning("filesystem source", src, facts.Name)
				diags.AddAttributeWarning(at, summary, detail)
			}
		}
	}
}
