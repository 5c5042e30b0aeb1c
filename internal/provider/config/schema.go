package config

import (
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/validators"
)

// PerInstanceConfigSchema is the schema of virt_per_instance_config.
func PerInstanceConfigSchema() schema.Schema {
	actionValidator := stringvalidator.OneOf(engine.ActionNames...)
	return schema.Schema{
		MarkdownDescription: "The preserved state of one instance of a group: disks (from the template or not) and metadata it keeps across recreation, autoheal, update and scale-in. It never changes the group's `target_size`: a config for an index beyond it waits; a name outside `<base_instance_name>-<index>` makes (or adopts, for an existing domain no provider created) one extra member.",
		Attributes: map[string]schema.Attribute{
			// Required.
			"group": schema.StringAttribute{
				MarkdownDescription: "Name of the `virt_stateful_group`. Changing it replaces the config.",
				Required:            true,
				Validators:          []validator.String{providerdata.NameValidator},
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"name": schema.StringAttribute{
				MarkdownDescription: "Name of the instance, which is its libvirt domain's name: a DNS label (1 to 63 lower case letters, digits and hyphens, starting with a letter and not ending with a hyphen), such as `db-1`. A name outside `<base_instance_name>-<index>` makes one extra member, or adopts an existing domain of that name when imported. Changing it replaces the config.",
				Required:            true,
				Validators:          []validator.String{providerdata.NameValidator},
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			// Optional.
			"minimal_action": schema.StringAttribute{
				MarkdownDescription: "Least action taken on the instance when it changes: `NONE` (the default), `REFRESH`, `RESTART` or `REPLACE`.",
				Optional:            true,
				Computed:            true,
				Default:             stringdefault.StaticString("NONE"),
				Validators:          []validator.String{actionValidator},
			},
			"most_disruptive_allowed_action": schema.StringAttribute{
				MarkdownDescription: "Most disruptive action allowed on the instance, `REPLACE` by default; a change that needs more fails at plan time.",
				Optional:            true,
				Computed:            true,
				Default:             stringdefault.StaticString("REPLACE"),
				Validators:          []validator.String{actionValidator},
			},
			"remove_instance_on_destroy": schema.BoolAttribute{
				MarkdownDescription: "Destroying the config deletes the instance for good (its preserved disks follow their `delete_rule`). Default `false`.",
				Optional:            true,
				Computed:            true,
				Default:             booldefault.StaticBool(false),
			},
			"remove_instance_state_on_destroy": schema.BoolAttribute{
				MarkdownDescription: "With `true`, destroying the config removes its preserved state from the instance in the same apply, live (disks not in the template detached, their volumes kept; the template's disks made stateless; metadata back to the template's). With `false` (the default) the instance keeps those disks and metadata and the next plan is empty: they go at the instance's next update for another reason (a template or config change that reaches it, a `RESTART` or `REPLACE`, an autoheal), in that update, whose plan says so. A change of the group in the same apply as the destroy is not that update: its plan was made while the config existed, and the instance keeps them through it. Until then `virt_managed_instances` shows them as the instance's `retained_state`. See the stateful disks guide.",
				Optional:            true,
				Computed:            true,
				Default:             booldefault.StaticBool(false),
			},
			"preserve": schema.StringAttribute{
				MarkdownDescription: "Preservation of the instance for analysis: `NOW` keeps it exactly as it is (not healed, updated, started, stopped; removed last on scale-in) for the group's `failed_instance_preservation.preserve_timeout` (default 24h); `WHEN_FAILED` does so once it fails; `NO` releases a preservation early. Unset, a failed instance may be auto-preserved by the group.",
				Optional:            true,
				Validators:          []validator.String{stringvalidator.OneOf(engine.PreserveValues...)},
			},
			// Computed.
			"id": schema.StringAttribute{
				MarkdownDescription: "`<group>/<name>`.",
				Computed:            true,
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"status": schema.StringAttribute{
				MarkdownDescription: "`EFFECTIVE` once the instance carries the config, `WAITING` while its index is beyond `target_size`, `UNAPPLIED` before the next apply (for example right after importing a domain to adopt).",
				Computed:            true,
			},
		},
		Blocks: map[string]schema.Block{
			"timeouts": providerdata.TimeoutsBlock(),
			"preserved_state": schema.SingleNestedBlock{
				MarkdownDescription: "What the instance preserves. It wins over the stateful policy and the template.",
				Blocks: map[string]schema.Block{
					"disk": schema.SetNestedBlock{
						MarkdownDescription: "A disk the instance keeps, by device name. A disk not in the template is attached live.",
						Validators:          []validator.Set{validators.UniqueAttribute("device_name")},
						NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
							"device_name": schema.StringAttribute{
								MarkdownDescription: "Device name of the disk in the instance; also its SCSI serial. `nvram` is reserved (an EFI member's NVRAM volume).",
								Required:            true,
								Validators:          []validator.String{stringvalidator.RegexMatches(engine.DeviceNamePattern, engine.DeviceNameRule), stringvalidator.NoneOf(engine.NVRAMDeviceName)},
							},
							"source": schema.StringAttribute{
								MarkdownDescription: "An existing volume: a volume of the group's pool, by name (`db-1-logs.qcow2`), or the absolute path of a volume of any storage pool, or, with the provider's `allow_host_paths`, of a host file. The provider never creates it, and plan fails when it does not exist: make it first, for example `virsh vol-create-as <pool> db-1-logs.qcow2 1G --format qcow2`, or copy a file into a pool's directory (`virsh pool-refresh <pool>` then lists it). A volume is attached in the format libvirt records for it (raw, qcow2, ...); a host file outside every pool as qcow2 when its name ends in `.qcow2`, else as raw. A volume or file that another domain has as a disk (another member, another group's, or any domain of the host, running or not) is refused at plan, naming that domain.",
								Required:            true,
								Validators:          []validator.String{stringvalidator.RegexMatches(providerdata.SourceRegexp, "must be a volume name without \"/\" or an absolute path")},
							},
							// mode and delete_rule have no schema default: the framework applies
							// defaults inside set elements after matching them against the prior
							// state, which swaps values between elements (a READ_ONLY disk read
							// back READ_WRITE). Unset stays null; the engine reads "" as the
							// default.
							"mode": schema.StringAttribute{
								MarkdownDescription: "`READ_WRITE` (the default when unset) or `READ_ONLY`.",
								Optional:            true,
								Validators:          []validator.String{stringvalidator.OneOf(engine.DiskModes...)},
							},
							"delete_rule": schema.StringAttribute{
								MarkdownDescription: "`NEVER` (the default when unset) or `ON_PERMANENT_INSTANCE_DELETION`. It matters only for a source that carries the instance's own volume name for this device, `<instance>-<device_name>.qcow2` (`db-1-logs.qcow2` for the device `logs` of `db-1`): `ON_PERMANENT_INSTANCE_DELETION` deletes it when the instance is deleted for good (scale-in, the group's destroy, `remove_instance_on_destroy`). A volume under any other name is never deleted by the provider.",
								Optional:            true,
								Validators:          []validator.String{stringvalidator.OneOf(engine.DeleteRules...)},
							},
						}},
					},
					"network_ip": schema.SetNestedBlock{
						MarkdownDescription: "An address the instance keeps, by interface: a DHCP host entry at `address` for the interface's MAC address in its libvirt network, made before the instance is (re)started and kept across restarts and replacements, whatever the template's `address`. A new pin (or a changed one) on a running instance that holds another address restarts it (RESTART) so that the guest asks for its address again; a pin at the address it holds already changes nothing. Removing the pin releases the address (REFRESH) unless the template's `address = \"reserved\"` keeps it. Refused at plan: an address outside the network's IPv4 subnet, the network's own address, one reserved for another MAC address or pinned for another instance of the group, an interface the template lacks or one with `type = \"user\"`.",
						Validators:          []validator.Set{validators.UniqueAttribute("interface")},
						NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
							"interface": schema.StringAttribute{
								MarkdownDescription: "`nic<N>`: the template's N-th `network_interface`, from `nic0`.",
								Required:            true,
								Validators:          []validator.String{validators.Parsed("nic<N>, the template's N-th network_interface from nic0", engine.CheckInterfaceName)},
							},
							"address": schema.StringAttribute{
								MarkdownDescription: "The IPv4 address, in the interface's network's subnet (`192.168.122.50`).",
								Required:            true,
								Validators:          []validator.String{validators.Parsed("an IPv4 address (192.168.122.50)", engine.CheckIPv4)},
							},
						}},
					},
				},
				Attributes: map[string]schema.Attribute{
					"metadata": schema.MapAttribute{
						MarkdownDescription: "Metadata keys the instance keeps across recreation; they win over the template's `metadata`. Applied live (REFRESH). A key removed here falls back to the template's value, or disappears. Keys and values together may take at most 16 KiB: they travel in the member's definition beside the template's texts.",
						Optional:            true,
						ElementType:         types.StringType,
					},
				},
			},
		},
	}
}
