package group

import (
	"fmt"
	"net"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/validators"
)

// The template's devices beyond disks and interfaces: a graphical console, an entropy device, a
// TPM and virtiofs shares (engine/devices.go holds their rules and change classes).

func graphicsBlock() schema.SingleNestedBlock {
	return schema.SingleNestedBlock{
		MarkdownDescription: "A graphical console on each member, on a port libvirt picks when the member starts (autoport; `virt_managed_instances` shows it as `graphics_port`). Adding or removing the block, or changing `type` or `listen`, restarts the members (RESTART). A new `password_wo_version` sets the password of the running consoles live, with no restart (REFRESH). The console is reachable by anyone who can reach `listen` on the host and, with a password, knows it: keep the default loopback address and reach it through an SSH tunnel (`ssh -L 5900:127.0.0.1:<port> host`), or give a password and a firewall.",
		Attributes: map[string]schema.Attribute{
			"type": schema.StringAttribute{
				MarkdownDescription: "`vnc` or `spice`. Required in the block.",
				Optional:            true,
				Validators:          []validator.String{stringvalidator.OneOf(engine.GraphicsTypes...)},
			},
			"listen": schema.StringAttribute{
				MarkdownDescription: fmt.Sprintf("IP address on the host the console listens on; %#q when not set (only the host itself). `0.0.0.0` or `::` listens on every address of the host.", engine.DefaultGraphicsListen),
				Optional:            true,
				Validators:          []validator.String{ipAddressValidator},
			},
			"password_wo": schema.StringAttribute{
				MarkdownDescription: fmt.Sprintf("The console's password, write-only (Terraform 1.11 or later): it is never in the plan, the state, the group record or the logs; only `password_wo_version` is kept. Terraform sends it to the provider at each apply, and the provider sets it when it defines a member (created, restarted or replaced) or when `password_wo_version` changes. Terraform cannot see a change of the password alone, so running members keep the old one until the version changes: change `password_wo_version` with it. A VNC password has at most %d characters (the protocol uses no more). libvirt keeps the password in each member's definition on the host, readable by whoever may read the domain's secure XML there. Needs `password_wo_version`.", engine.MaxVNCPasswordLength),
				Optional:            true,
				Sensitive:           true,
				WriteOnly:           true,
				Validators:          []validator.String{stringvalidator.LengthAtLeast(1), stringvalidator.AlsoRequires(path.MatchRelative().AtParent().AtName("password_wo_version"))},
			},
			"password_wo_version": schema.Int64Attribute{
				MarkdownDescription: "A number you change whenever `password_wo` changes, at least 1: a new version sets the password of the members' consoles live (REFRESH); the members a restart or replacement defines get it too. A new version (and a new group) needs `password_wo`; the version the group already has may stand alone, as in the configuration `terraform query -generate-config-out` writes (`password_wo = null`): the members keep the password their definitions hold. An apply of another resource (a per-instance config) that restarts or replaces a member keeps the password the member's domain has, since only the group's apply has the write-only value.",
				Optional:            true,
				Validators:          []validator.Int64{int64validator.AtLeast(1)},
			},
		},
	}
}

func rngBlock() schema.SingleNestedBlock {
	return schema.SingleNestedBlock{
		MarkdownDescription: "A virtio-rng entropy device on each member, fed from the host's `/dev/urandom`, so that a guest has entropy early in its boot (key generation by cloud-init, TLS). The block has no attributes: `rng {}`. Adding or removing it restarts the members (RESTART): libvirt attaches the device live, but removing it live needs the guest to release it, which a guest may never do (measured on libvirt 9.0), so both go through a restart, which always ends as the template says.",
	}
}

func tpmBlock() schema.SingleNestedBlock {
	return schema.SingleNestedBlock{
		MarkdownDescription: fmt.Sprintf("An emulated TPM 2.0 on each member, what Windows 11, BitLocker and measured boot need: libvirt runs `swtpm` for the member on its host (Debian's `swtpm` and `swtpm-tools` packages, and libvirtd restarted after installing them). Checked at plan against each member host's domain capabilities: TPM support, the `model`, the emulator backend (which libvirt lists only when it finds swtpm) and the `version`; a host whose libvirt does not report the TPM is not checked, and a member's start there fails with libvirt's message. `tpm {}` gives a %#q TPM 2.0. The TPM's state (its keys and NVRAM) lives on the member's host under `/var/lib/libvirt/swtpm/<domain UUID>`: it is kept across restarts, and a member that is replaced (REPLACE) is a new domain with a new UUID, so it starts with a fresh, empty TPM (anything sealed to the old one, such as a BitLocker key protected by the TPM alone, is not there); libvirt deletes the old state when it undefines the old domain. Adding or removing the block, or changing `model`, restarts the members (RESTART): QEMU cannot add or remove a TPM while the guest runs.", engine.DefaultTPMModel),
		Attributes: map[string]schema.Attribute{
			"model": schema.StringAttribute{
				MarkdownDescription: fmt.Sprintf("The TPM's interface: %#q (CRB, the TPM 2.0 interface current firmware and Windows 11 use) or %#q (TIS, for older guests). Default %#q.", engine.TPMModelCRB, engine.TPMModelTIS, engine.DefaultTPMModel),
				Optional:            true,
				Validators:          []validator.String{stringvalidator.OneOf(engine.TPMModels...)},
			},
			"version": schema.StringAttribute{
				MarkdownDescription: fmt.Sprintf("The TPM version: only %#q (the default) is offered.", engine.TPMVersion2),
				Optional:            true,
				Validators:          []validator.String{stringvalidator.OneOf(engine.TPMVersions...)},
			},
		},
	}
}

// filesystemTargetRegexp is the share's tag: virtio-fs carries it in 36 bytes.
var filesystemTargetRegexp = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,35}$`)

func filesystemBlock() schema.ListNestedBlock {
	return schema.ListNestedBlock{
		MarkdownDescription: "A host directory shared with each member through virtiofs (libvirt runs QEMU's `virtiofsd` for it on the member's host). The guest mounts it by its tag: `mount -t virtiofs <target> /mnt/<target>` (the guest kernel needs the `virtiofs` module). A member with a share gets shared memory backing (memfd), which virtiofs needs. The source is a host path under the same consent rule as disk sources outside pools: refused at plan unless the provider sets `allow_host_paths = true`, and then judged by the directory it resolves to. Every member shares the same directory, with the rights of the user libvirt runs `virtiofsd` as (root for `qemu:///system`): the guest's root can read and write everything in it. Adding, removing or changing a share restarts the members (RESTART).",
		Validators:          []validator.List{validators.UniqueListAttribute("target")},
		NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
			"source": schema.StringAttribute{
				MarkdownDescription: "Absolute path of the directory on the member's host. It must exist when the plan is made.",
				Required:            true,
				Validators:          []validator.String{stringvalidator.RegexMatches(providerdata.AbsolutePathRegexp, "must be an absolute path on the libvirt host")},
			},
			"target": schema.StringAttribute{
				MarkdownDescription: "The tag the guest mounts the share by: 1 to 36 letters, digits, `.`, `_` or `-`, starting with a letter or digit. Unique within the template.",
				Required:            true,
				Validators:          []validator.String{stringvalidator.RegexMatches(filesystemTargetRegexp, "must be 1 to 36 letters, digits, '.', '_' or '-', starting with a letter or digit")},
			},
			"read_only": schema.BoolAttribute{
				MarkdownDescription: "Whether the guest may only read the share. Only `false` (the default) is accepted for now: libvirt 9.0 refuses a read-only virtiofs share (\"virtiofs does not yet support read-only mode\"), and the provider refuses `true` at plan rather than give a share the guest could write to. Mount it read-only in the guest (`mount -o ro`) meanwhile, or share a directory the guest may write.",
				Optional:            true,
			},
		}},
	}
}

// ipAddressValidator accepts an IPv4 or IPv6 address.
var ipAddressValidator = validators.Parsed("an IPv4 or IPv6 address such as \"127.0.0.1\", \"0.0.0.0\" or \"::1\"", func(v string) error {
	if net.ParseIP(v) == nil {
		return fmt.Errorf("%q is not an IP address", v)
	}
	return nil
})

// withHardwareAttributes adds the template's hardware attributes (HardwareModel's) to attrs.
func withHardwareAttributes(attrs map[string]schema.Attribute) map[string]schema.Attribute {
	attrs["firmware"] = firmwareAttribute()
	attrs["secure_boot"] = secureBootAttribute()
	attrs["machine"] = machineAttribute()
	return attrs
}

// withHardwareBlocks adds the template's hardware blocks (HardwareModel's) to blocks: a new
// device's block is registered here, beside its schema.
func withHardwareBlocks(blocks map[string]schema.Block) map[string]schema.Block {
	blocks["cpu"] = cpuBlock()
	blocks["graphics"] = graphicsBlock()
	blocks["rng"] = rngBlock()
	blocks["filesystem"] = filesystemBlock()
	blocks["tpm"] = tpmBlock()
	return blocks
}
