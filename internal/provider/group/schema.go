package group

import (
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/objectvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/setvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/setdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/planmodifiers"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/validators"
)

// StatefulGroupSchema is version 4 of the group's schema. Version 1: max_unavailable became a
// string that also takes a percentage, and instances carry their planned action (see
// upgradeGroupStateV0). Version 2: update_policy gained min_ready, ready_timeout and on_failure,
// filled with their defaults in state written before them (upgradeGroupStateV1). Version 3:
// adopt_existing and abandon, with defaults (false, no names) so that an import, and the
// configuration terraform plan -generate-config-out writes from it, has values rather than
// nulls; state written before gets them (upgradeGroupStateV2). Version 4: distribution_policy
// gained drain, rebalance and live, with defaults (no host, false, true) that state written before
// gets (upgradeGroupStateV3), so that upgrading the provider plans no change.
func StatefulGroupSchema() schema.Schema {
	actionValidator := stringvalidator.OneOf(engine.ActionNames...)
	return schema.Schema{
		Version:             4,
		MarkdownDescription: "A group of virtual machines built from one template, named `<base_instance_name>-<index>` with indices from 1. Metadata, labels, description and disks change live on running members; vcpu, memory and network interfaces need a restart; boot image and domain type need a replacement, rolled through the group under `update_policy`.",
		Attributes: map[string]schema.Attribute{
			// Required.
			"name": schema.StringAttribute{
				MarkdownDescription: "Name of the group, a DNS label. Changing it replaces the group.",
				Required:            true,
				Validators:          []validator.String{providerdata.NameValidator},
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"target_size": schema.Int64Attribute{
				MarkdownDescription: fmt.Sprintf("Number of members, from 0 to %d. Scale-out takes the lowest free indices; scale-in removes the highest first.", engine.MaxTargetSize),
				Required:            true,
				Validators:          []validator.Int64{int64validator.Between(0, engine.MaxTargetSize)},
			},
			// Optional.
			"base_instance_name": schema.StringAttribute{
				MarkdownDescription: "Prefix of the members' names, a DNS label; defaults to `name`. Changing it replaces the group.",
				Optional:            true,
				Computed:            true,
				Validators:          []validator.String{providerdata.NameValidator},
				PlanModifiers: []planmodifier.String{
					planmodifiers.StringDefaultFrom(path.Root("name")),
					stringplanmodifier.RequiresReplace(),
				},
			},
			"pool": schema.StringAttribute{
				MarkdownDescription: "libvirt storage pool that holds every volume of the group. Defaults to `default`. Changing it replaces the group.",
				Optional:            true,
				Computed:            true,
				Default:             stringdefault.StaticString("default"),
				Validators:          []validator.String{stringvalidator.LengthAtLeast(1)},
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"running": schema.BoolAttribute{
				MarkdownDescription: "Whether the members run (`true`, the default) or are powered off.",
				Optional:            true,
				Computed:            true,
				Default:             booldefault.StaticBool(true),
			},
			"adopt_existing": schema.BoolAttribute{
				MarkdownDescription: "Take domains that no provider created under the members' names (`<base_instance_name>-<index>`, for the indices `target_size` reaches, names in `abandon` skipped) as those members: each keeps its UUID, disks and power state, every disk it has becomes that member's preserved disk (`NEVER` deleted, not by the adoption, a scale-in or the group's destroy), and from then on only live changes (metadata, disks of a per-instance config) reach it, never the template's. The plan shows each as `ADOPT`. Without it (the default), a plan whose members would get such names fails, naming the domains. Domains that carry another group's record are never adopted. See the adopting guide.",
				Optional:            true,
				Computed:            true,
				Default:             booldefault.StaticBool(false),
			},
			"abandon": schema.SetAttribute{
				MarkdownDescription: "Names of members to take out of the group, leaving their domains and volumes exactly as they are (running or not): the plan shows each as `ABANDON`, and the apply only removes the provider's record from the domain's metadata. A listed name is skipped by scale-out while it is listed, and the group's destroy never touches it. `target_size` counts members, so lower it in the same change to shrink the group; otherwise a new member is made under the next free name. A listed name that is not a member (any more) is nothing to do. Removing a name gives it back: its domain, now one no provider created, comes back with `adopt_existing = true`, else the plan fails naming it. Each name must be `<base_instance_name>-<index>`.",
				ElementType:         types.StringType,
				Optional:            true,
				Computed:            true,
				Default:             setdefault.StaticValue(types.SetValueMust(types.StringType, nil)),
				Validators:          []validator.Set{setvalidator.ValueStringsAre(providerdata.NameValidator)},
			},
			"shutdown_timeout": schema.StringAttribute{
				MarkdownDescription: "How a member stops (restart, replace, scale-in, `running = false`, destroy): an ACPI shutdown request, a wait of up to this long for the guest to power off, then a power off. `\"0s\"` powers off at once. A member that libvirt reports paused, suspended (pmsuspended) or crashed cannot act on the request (libvirt refuses it) and is powered off at once whatever this says, also when it was running at the plan and halted since; its planned action and the log say `paused: powered off without waiting`. For a paused member this loses nothing the guest had not already written: it could not write more while paused, and its preserved disks are kept as they are. A duration such as `\"60s\"` (the default) or `\"2m\"`, at most `\"24h\"`.",
				Optional:            true,
				Computed:            true,
				Default:             stringdefault.StaticString(engine.DefaultShutdownTimeoutText),
				Validators:          []validator.String{providerdata.DurationIn(engine.ShutdownTimeoutRule)},
			},
			// Computed.
			"id": schema.StringAttribute{
				MarkdownDescription: "The group's name.",
				Computed:            true,
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			// Terraform sees a list of one object per member (InstanceAttributes); the framework
			// a string, the list's JSON (see protocol/instances.go).
			"instances": schema.StringAttribute{
				MarkdownDescription: "The members, a map by member name (`instances[\"db-2\"].status`; `values(...)` for a list, `keys(...)` for the names). In a plan, each member's `planned_action` says what the apply will do to it and why; after the apply it says what is left to do, `NONE` once done, as a refresh reads it (a member the canary holds on its template says `held back by update_policy.canary`, in the plan and after it). Each member's UUID, MAC and IP addresses are in the data source `virt_managed_instances`: kept out of the group's state, they cost a large group's plans nothing.",
				Computed:            true,
			},
		},
		Blocks: map[string]schema.Block{
			"timeouts": providerdata.TimeoutsBlock(),
			"template": schema.SingleNestedBlock{
				MarkdownDescription: "**Required** (the plugin framework cannot mark a single nested block required, so it is listed as optional; `terraform validate` refuses a group without it). What every member is built from.",
				Validators:          []validator.Object{objectvalidator.IsRequired()},
				Attributes: withHardwareAttributes(map[string]schema.Attribute{
					"vcpu": schema.Int64Attribute{
						MarkdownDescription: "Virtual CPUs, at least 1. A change restarts the members.",
						Required:            true,
						Validators:          []validator.Int64{int64validator.AtLeast(1)},
					},
					"memory_mib": schema.Int64Attribute{
						MarkdownDescription: "Memory in MiB, at least 16. A change restarts the members.",
						Required:            true,
						Validators:          []validator.Int64{int64validator.AtLeast(16)},
					},
					"domain_type": schema.StringAttribute{
						MarkdownDescription: "`kvm` or `qemu` (TCG emulation). When not set: `kvm` when the host's capabilities offer kvm domains for x86_64 (`virsh capabilities` lists `<domain type='kvm'>`, which libvirt does when /dev/kvm opens) and its CPU has VMX or SVM (the host CPU's features, its model's included, as `virsh cpu-baseline --features` expands them), else `qemu`, read from the provider's own `uri` at the group's first plan and kept. A host that lists kvm on a CPU without VMX or SVM (a virtual machine without nested virtualisation, whose KVM cannot run ordinary guests) gets `qemu` and a plan warning saying why; `kvm` set for members on such a host gets a plan warning naming the host (a warning, not an error: a KVM of that kind can run guests built for it). A change replaces the members.",
						Optional:            true,
						Computed:            true,
						Validators:          []validator.String{stringvalidator.OneOf("kvm", "qemu")},
						PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
					},
					"metadata": schema.MapAttribute{
						MarkdownDescription: "Key/value metadata of each member, kept in the provider's record in the domain's libvirt metadata (`virsh metadata <domain> --uri https://virtfleet.dev/xmlns/virt/1`); with `cloud_init`, the guest reads it in its seed's `meta-data`, otherwise the guest does not see it. Unlike `labels`, a per-instance config can set or override keys for its instance (`preserved_state.metadata`), and they survive recreation. With the template's other texts, at most 128 KiB (see `cloud_init.user_data`). A change is a REFRESH: applied live on running members with no restart (with `cloud_init`, the seed's media is swapped), but refused when `most_disruptive_allowed_action` is `NONE`.",
						Optional:            true,
						ElementType:         types.StringType,
					},
					"labels": schema.MapAttribute{
						MarkdownDescription: "Labels for people and tools, the same for every member, kept in the provider's record in the domain's libvirt metadata; the guest does not see them, and a per-instance config cannot override them. A change needs no action at all (NONE): applied live with no disruption, even when `most_disruptive_allowed_action` is `NONE`.",
						Optional:            true,
						ElementType:         types.StringType,
					},
					"description": schema.StringAttribute{
						MarkdownDescription: "The domains' own libvirt description (`virsh desc <domain>`). Changed live with no disruption (NONE).",
						Optional:            true,
					},
					"console_log_dir": schema.StringAttribute{
						MarkdownDescription: "A directory on each member's host that the member's serial console is appended to, as `<member>.console.log`, across boots (the console is also on a pty for `virsh console`). The directory must exist and libvirt's QEMU must be able to write there (`/var/log/libvirt/qemu` for `qemu:///system`). A directory under libvirt's own log directory `/var/log/libvirt` is always allowed; any other is a host path, allowed only with the provider's `allow_host_paths = true` and then judged like a disk source outside pools: after symbolic links and `..` are resolved, it must be a directory outside `/etc`, `/proc`, `/sys`, `/boot`, `/root`, `/run` and `/var/run`, and, when the provider runs as root, belong to root or to the user libvirt runs QEMU as. On a host the provider reaches over the network it cannot see the files: the path is judged by its text, and the plan warns. A change restarts the members.",
						Optional:            true,
						Validators:          []validator.String{stringvalidator.RegexMatches(providerdata.AbsolutePathRegexp, "must be an absolute path")},
					},
				}),
				Blocks: withHardwareBlocks(map[string]schema.Block{
					"health_check": healthCheckBlock(),
					"cloud_init": schema.SingleNestedBlock{
						MarkdownDescription: "Gives each member its own NoCloud seed, a CD-ROM labelled `cidata` made from the volume `<member>-cidata.iso` in the group's pool: `meta-data` with `instance-id` and `local-hostname` set to the member's name and the member's effective `metadata` as further keys (template, overlaid by its per-instance config's `preserved_state.metadata`), `user-data`, and `network-config` when set. A metadata change rewrites the seed and swaps the CD-ROM's media live, in the same boot (REFRESH). A change of `user_data`, `user_data_wo_version` or `network_config`, or adding or removing the block, replaces the members (REPLACE): cloud-init applies them to a new instance. The seed volume goes with its member, and whoever can read the group's storage pool can read it (user data included, also `user_data_wo`).",
						Attributes: map[string]schema.Attribute{
							"user_data": schema.StringAttribute{
								MarkdownDescription: "The `user-data` file, as cloud-init reads it (`#cloud-config` YAML, a script, ...); empty when not set. A change replaces the members. The template's `user_data`, `network_config`, `metadata`, `labels` and `description` together may take at most 128 KiB: libvirt carries them in every member's definition and in the group record, each one RPC string of at most 4 MiB. A larger payload belongs in the image or a volume, fetched by a short `user_data`.",
								Optional:            true,
							},
							"user_data_wo": schema.StringAttribute{
								MarkdownDescription: "The `user-data` file, write-only (needs Terraform 1.11 or later): for user data that holds passwords or keys. It is never in the plan, the saved plan file, the state, the group record or the logs; only `user_data_wo_version` is kept. Terraform sends it to the provider at each apply of the group, and the provider writes it into the seed of each member it creates or replaces. Terraform cannot see a change of the value alone: change `user_data_wo_version` with it, which replaces the members (REPLACE), as a change of `user_data` does. The seed volume `<member>-cidata.iso` on the host holds the user data in clear: whoever can read the group's storage pool (root on the host, members of the libvirt group, anyone who can download the volume through libvirt) and the guest itself can read it. Another apply that writes a member's seed (a per-instance config's metadata change, a restart or replacement it causes) takes the user data from the member's current seed, which holds the same version; where that seed is gone or holds another version, it fails, changing nothing, and says to apply the group. Conflicts with `user_data`; needs `user_data_wo_version`.",
								Optional:            true,
								Sensitive:           true,
								WriteOnly:           true,
								Validators: []validator.String{
									stringvalidator.ConflictsWith(path.MatchRelative().AtParent().AtName("user_data")),
									stringvalidator.AlsoRequires(path.MatchRelative().AtParent().AtName("user_data_wo_version")),
								},
							},
							"user_data_wo_version": schema.Int64Attribute{
								MarkdownDescription: "A number you change whenever `user_data_wo` changes, at least 1 (Terraform 1.11 or later). A new version replaces the members (REPLACE), each with a new seed holding the new user data, its preserved disks kept. A new version (and a new group) needs `user_data_wo`; the version the group already has may stand alone, as in the configuration `terraform query -generate-config-out` writes (`user_data_wo = null`): the members keep the user data their seeds hold, and a member the apply must give a new seed (a new member, a seed that is gone) makes the apply fail until `user_data_wo` is set.",
								Optional:            true,
								Validators: []validator.Int64{
									int64validator.AtLeast(1),
								},
							},
							"network_config": schema.StringAttribute{
								MarkdownDescription: "The `network-config` file (cloud-init network configuration, version 1 or 2); when not set the seed has none and the image's default applies (DHCP on the first interface, for the usual cloud images). A change replaces the members.",
								Optional:            true,
							},
						},
					},
					"boot_disk": schema.SingleNestedBlock{
						MarkdownDescription: "The boot volume `<instance>-boot.qcow2`: a copy-on-write overlay of `source_image`, or blank. Without this block, a blank 1024 MiB volume.",
						Attributes: map[string]schema.Attribute{
							"source_image": schema.StringAttribute{
								MarkdownDescription: "Absolute path of the image each member's boot volume is an overlay of: a volume of a storage pool, or (with `allow_host_paths`) a host file outside every pool. On a host reached through this machine's unix socket, a host file is read once, through a descriptor opened after it is judged, into the volume `<base_instance_name>-image-<sha256 prefix>.<format>` of the group's pool, and members back onto that copy: libvirt is never given the path, and never re-owns the file (a qcow2 with a backing file of its own is refused). On a host reached over the network the path is handed to libvirt, judged by its text. See the guide *Stateful disks*. A change replaces the members.",
								Optional:            true,
								Validators: []validator.String{stringvalidator.RegexMatches(providerdata.AbsolutePathRegexp,
									"must be an absolute path on the libvirt host")},
							},
							"size_mib": schema.Int64Attribute{
								MarkdownDescription: "Size in MiB. When unset: the virtual size of `source_image`, rounded up to a whole MiB, as the host reports it at plan (the image's volume capacity, or a qcow2 host file's header); 1024 with no image (or an image whose size cannot be read from here, a host file on a remote host). Once the group exists, an unset size never makes its boot disks smaller: it keeps the size they have unless a new image is larger. Growth is applied live; shrinking is refused; a size smaller than the image's virtual size is refused at plan.",
								Optional:            true,
								Computed:            true,
								Validators:          []validator.Int64{int64validator.AtLeast(1)},
							},
						},
					},
					"disk": schema.SetNestedBlock{
						MarkdownDescription: "A blank data volume per member, `<instance>-<device_name>.qcow2`, attached on virtio-scsi. Adding, removing and growing disks is live; shrinking is refused.",
						Validators:          []validator.Set{validators.UniqueAttribute("device_name")},
						NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
							"device_name": schema.StringAttribute{
								MarkdownDescription: "Name of the disk within a member; also its SCSI serial. `boot` and `nvram` are reserved.",
								Required:            true,
								Validators:          []validator.String{providerdata.DeviceNameValidator},
							},
							"size_mib": schema.Int64Attribute{
								MarkdownDescription: "Size in MiB, at least 1.",
								Required:            true,
								Validators:          []validator.Int64{int64validator.AtLeast(1)},
							},
						}},
					},
					"network_interface": schema.ListNestedBlock{
						MarkdownDescription: "A virtio network interface. A change restarts the members.",
						NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
							"network": schema.StringAttribute{
								MarkdownDescription: "Name of the libvirt network, required when `type` is `network`.",
								Optional:            true,
							},
							"type": schema.StringAttribute{
								MarkdownDescription: "`network` (the default) or `user` (user-mode networking, no libvirt network needed).",
								Optional:            true,
								Computed:            true,
								Default:             stringdefault.StaticString("network"),
								Validators:          []validator.String{stringvalidator.OneOf("network", "user")},
							},
							"address": schema.StringAttribute{
								MarkdownDescription: "Unset (the default): each member takes whatever address the network's DHCP gives it. `\"reserved\"`: each member's address is reserved in the libvirt network's DHCP as a host entry by the member's MAC address (stable per member name), made live without restarting the network: a running member keeps the address it has (REFRESH, no restart), a new one gets a free address of the DHCP range before it first starts. The reservation is kept across restarts and replacements and released when the member is deleted for good (scale-in, the group's destroy, `remove_instance_on_destroy`); removing `address` releases it (REFRESH). Only with `network`, on a network with IPv4 DHCP; a per-instance config's `preserved_state.network_ip` pins one member's address instead.",
								Optional:            true,
								Validators:          []validator.String{stringvalidator.OneOf(engine.AddressReserved)},
							},
						}},
					},
				}),
			},
			"auto_healing": schema.SingleNestedBlock{
				MarkdownDescription: "Replace failed members (see the data source's `health`: crashed, shut off, paused by an I/O error or by QEMU with no reason given while `running = true`, a volume gone) at apply, keeping their preserved disks, with a delay after creation, an exponential backoff and a limit. With `template.health_check`, `UNHEALTHY` members are repaired too: a `RESTART` first, a `REPLACE` when the member is `UNHEALTHY` again after its last repair; a member is `STARTING`, not judged, for `initial_delay` after it was created or repaired. The count of consecutive attempts is kept in each member's record on the host, so every run of Terraform agrees. Without this block a failed member is repaired like any drift (started again, or its volume rebuilt). Healing happens when Terraform runs: run `terraform apply` on a schedule to heal between your own changes.",
				Attributes: map[string]schema.Attribute{
					"initial_delay": schema.StringAttribute{
						MarkdownDescription: "A member created (or recreated) less than this long ago is not judged yet. Default `\"120s\"`; from `\"0s\"` to 7 days (`\"168h\"`).",
						Optional:            true,
						Computed:            true,
						Default:             stringdefault.StaticString(engine.DefaultInitialDelay),
						Validators:          []validator.String{providerdata.DurationIn(engine.HealDelayRule)},
					},
					"backoff": schema.StringAttribute{
						MarkdownDescription: "Wait after a failed attempt before the next; doubles with each consecutive failure. Default `\"60s\"`; from `\"0s\"` to 7 days (`\"168h\"`).",
						Optional:            true,
						Computed:            true,
						Default:             stringdefault.StaticString(engine.DefaultBackoff),
						Validators:          []validator.String{providerdata.DurationIn(engine.HealDelayRule)},
					},
					"max_consecutive_failures": schema.Int64Attribute{
						MarkdownDescription: "After this many attempts in a row the member is left failed, reported in the plan, and not retried until its template or config changes. Default 3.",
						Optional:            true,
						Computed:            true,
						Default:             int64default.StaticInt64(engine.DefaultMaxConsecutiveFailures),
						Validators:          []validator.Int64{int64validator.Between(1, 100)},
					},
				},
			},
			"failed_instance_preservation": schema.SingleNestedBlock{
				MarkdownDescription: "Keep failed members (`FAILED`, or `UNHEALTHY` by `template.health_check`) exactly as they are, for analysis, instead of healing them: up to `auto_preserve_failed_max` at once (lowest index first), each for `preserve_timeout`. A preserved member is not healed, updated, started or stopped, counts toward `target_size`, is removed last on scale-in, and stays preserved if it becomes healthy again, until the timeout or its config's `preserve = \"NO\"`. When the maximum drops, the oldest are released first. The data source shows `preserved` and `preserved_until`.",
				Attributes: map[string]schema.Attribute{
					"auto_preserve_failed_max": schema.Int64Attribute{
						MarkdownDescription: "How many failed members are preserved at once without a config asking; default 0.",
						Optional:            true,
						Computed:            true,
						Default:             int64default.StaticInt64(0),
						Validators:          []validator.Int64{int64validator.Between(0, engine.MaxTargetSize)},
					},
					"preserve_timeout": schema.StringAttribute{
						MarkdownDescription: "How long a member stays preserved, from when its preservation began. Default `\"24h\"`; from `\"0s\"` to 30 days (`\"720h\"`).",
						Optional:            true,
						Computed:            true,
						Default:             stringdefault.StaticString(engine.DefaultPreserveTimeout),
						Validators:          []validator.String{providerdata.DurationIn(engine.PreserveTimeoutRule)},
					},
				},
			},
			"distribution_policy": schema.SingleNestedBlock{
				MarkdownDescription: "The hosts the group spreads its members over. Without it, every member lives on the provider's own `uri`. New members go to the host with the fewest members (the earliest in `hosts` on a tie), and a scale-in removes first from the host that keeps the most, so the group stays evenly spread. A member leaves its host only by an explicit change: its host listed in `drain`, its host left out of `hosts`, or `rebalance`. The plan shows each such member as `MOVE: <from> -> <to> (live)` or `(cold)`, to the host of the group (in `hosts`, not in `drain`) with the fewest members. A move keeps the member's name, index, UUID, MAC addresses, metadata, seed and every volume's bytes: every volume is copied, stateless ones too. Live is libvirt's migration with its storage copied, where `live` is not false, the member runs and the two hosts are different machines; otherwise the move is cold: the member stops, each volume is copied to the target's pool and checked (size and checksum), the member is defined and started there, and only then is the source deleted. A cold move of a running member counts against `update_policy.max_unavailable`, a live one does not (members still move a wave of `max_unavailable` at a time). A member that moves gets only its move in that apply; any other change of it comes with the next apply. A move that an apply left unfinished is finished, or undone when the member no longer moves, by the next apply. Members of a host that does not answer stay `UNKNOWN` and where they are, until it answers: a scale-in picks among them as among the others, and its pick there waits for the host (no other member is removed in its place); a move of one of them is planned `MOVE: <from> -> <to> waits: host <from> cannot be reached`. A REPLACE or a re-creation happens on the member's host. The group record lives on the first host of `hosts` when the group is created, and stays there. See the guide *Connecting to libvirt*.",
				Attributes: map[string]schema.Attribute{
					"hosts": schema.ListAttribute{
						MarkdownDescription: "Names of hosts: `default` is the provider's own `uri`, any other is the `name` of a provider `host` block. At least one, each once. Members of a host left out move to the others.",
						ElementType:         types.StringType,
						Optional:            true,
						Validators: []validator.List{
							listvalidator.SizeAtLeast(1),
							listvalidator.UniqueValues(),
							listvalidator.ValueStringsAre(providerdata.NameValidator),
						},
					},
					"drain": schema.ListAttribute{
						MarkdownDescription: "Names of hosts whose members move away, to the hosts of `hosts` not listed here, while the hosts stay in the group: for a host's maintenance, list it, apply, and remove it again once it is back (its members do not come back unless `rebalance` is true). Each a host of the provider (`default` or a `host` block's `name`), each once; at least one host of `hosts` must stay undrained. Default: none.",
						ElementType:         types.StringType,
						Optional:            true,
						Computed:            true,
						Default:             listdefault.StaticValue(types.ListValueMust(types.StringType, nil)),
						Validators: []validator.List{
							listvalidator.UniqueValues(),
							listvalidator.ValueStringsAre(providerdata.NameValidator),
						},
					},
					"rebalance": schema.BoolAttribute{
						MarkdownDescription: "Whether members move until the group is evenly spread over its hosts (those of `hosts` not in `drain`): from the host with the most members to the one with the fewest, until they differ by one at most. Default `false`: a host added to `hosts` takes only new members.",
						Optional:            true,
						Computed:            true,
						Default:             booldefault.StaticBool(false),
					},
					"live": schema.BoolAttribute{
						MarkdownDescription: "Whether a running member moves live (libvirt migration, its storage copied, without stopping) where the two hosts allow it: `true`, the default. Where they do not (one machine's daemons, a stopped member), the move is cold. `false` makes every move cold: the member stops, its volumes are copied and checked, and it starts on the target. If libvirt refuses or fails a live move (or it runs out of its 15 minutes), the member keeps running on its host, the apply warns with libvirt's message (`Live move not possible: moved cold`), and the same apply moves it cold; `live = false` plans such moves cold from the start.",
						Optional:            true,
						Computed:            true,
						Default:             booldefault.StaticBool(true),
					},
				},
			},
			"scale_in_policy": schema.SingleNestedBlock{
				MarkdownDescription: "Which members a scale-in removes. Unhealthy members (see the data source's `health`) always go first; the order picks among the healthy ones.",
				Attributes: map[string]schema.Attribute{
					"order": schema.StringAttribute{
						MarkdownDescription: "`HIGHEST_INDEX` (the default), `OLDEST` or `NEWEST`, by when each member was last created (a replacement creates it again; a member created before this was recorded counts as the oldest). Ties go to the highest index.",
						Optional:            true,
						Computed:            true,
						Default:             stringdefault.StaticString(engine.ScaleInHighestIndex),
						Validators:          []validator.String{stringvalidator.OneOf(engine.ScaleInOrders...)},
					},
				},
			},
			"update_policy": schema.SingleNestedBlock{
				MarkdownDescription: "How template changes reach existing members.",
				Attributes: map[string]schema.Attribute{
					"type": schema.StringAttribute{
						MarkdownDescription: "`PROACTIVE` (the default) updates existing members; `OPPORTUNISTIC` builds only new members from the new template.",
						Optional:            true,
						Computed:            true,
						Default:             stringdefault.StaticString(engine.UpdateProactive),
						Validators:          []validator.String{stringvalidator.OneOf(engine.UpdateTypes...)},
					},
					"minimal_action": schema.StringAttribute{
						MarkdownDescription: "Least action taken on a member that changes: `NONE` (the default), `REFRESH`, `RESTART` or `REPLACE`.",
						Optional:            true,
						Computed:            true,
						Default:             stringdefault.StaticString("NONE"),
						Validators:          []validator.String{actionValidator},
					},
					"most_disruptive_allowed_action": schema.StringAttribute{
						MarkdownDescription: "Most disruptive action allowed: `NONE`, `REFRESH`, `RESTART` or `REPLACE` (the default). A change that needs more fails at plan time.",
						Optional:            true,
						Computed:            true,
						Default:             stringdefault.StaticString("REPLACE"),
						Validators:          []validator.String{actionValidator},
					},
					"min_ready": schema.StringAttribute{
						MarkdownDescription: fmt.Sprintf("How long each member a rollout's wave started (created, restarted or replaced) must stay `HEALTHY` before the next wave starts; probing goes on meanwhile, and a failed probe starts the wait again. Without `template.health_check` a member is `HEALTHY` once its domain runs. Default `%q`; from `\"0s\"` to %s.", engine.FormatDuration(0), engine.FormatDuration(engine.MinReadyRule.Max)),
						Optional:            true,
						Computed:            true,
						Default:             stringdefault.StaticString(engine.FormatDuration(0)),
						Validators:          []validator.String{providerdata.DurationIn(engine.MinReadyRule)},
					},
					"ready_timeout": schema.StringAttribute{
						MarkdownDescription: fmt.Sprintf("How long a member a wave started may take, from its start, to become `HEALTHY` and stay so for `min_ready`; a member not ready by then fails its wave, and `on_failure` says what follows. Default `%q`; more than zero and at most %s.", engine.FormatDuration(engine.DefaultReadyTimeout), engine.FormatDuration(engine.ReadyTimeoutRule.Max)),
						Optional:            true,
						Computed:            true,
						Default:             stringdefault.StaticString(engine.FormatDuration(engine.DefaultReadyTimeout)),
						Validators:          []validator.String{providerdata.DurationIn(engine.ReadyTimeoutRule)},
					},
					"on_failure": schema.StringAttribute{
						MarkdownDescription: "What a failed wave does: `STOP` (the default) stops the rollout, the members not reached stay as they were, and the failed member stays on the new template; `ROLLBACK` also puts the members this apply restarted or replaced back on the template they had, in waves under `max_unavailable`, each waiting to be ready, with their preserved disks kept, then fails the apply saying what was rolled back. A member this apply created has no earlier template and is left as it is. A rollback that fails stops where it is: a rollback is never rolled back. After a rollback the state keeps the old template, so the next plan shows the new one still wanted.",
						Optional:            true,
						Computed:            true,
						Default:             stringdefault.StaticString(engine.OnFailureStop),
						Validators:          []validator.String{stringvalidator.OneOf(engine.OnFailureValues...)},
					},
					"canary": schema.StringAttribute{
						MarkdownDescription: "Holds the rollout of a template change once this many members run the group's template: a whole number of members (`1`; `0` holds every member), or a percentage of `target_size` such as `\"25%\"`, rounded up. Unset (the default): no hold, the rollout goes through the group. The hold is on the members whose move to the new template takes them down (`RESTART` or `REPLACE`, after `minimal_action`); a change that reaches a member live (`REFRESH` or `NONE`) reaches every member. Members already on the group's template count first, then the lowest indices, then named members by name; the others stay on the template revision they have, which is the desired state: a plan after the apply is empty, and `instances` says `held back by update_policy.canary` for each of them. Their drift is still repaired, their per-instance config applied and their autoheals made, on their own template. A member the apply creates (scale-out, or a member whose domain is gone) takes its place in that order by its index: beyond the hold it is built from the held members' template. Raising the number or removing the attribute goes on with the rollout at the next apply. `PROACTIVE` only. See the rollouts guide.",
						Optional:            true,
						Validators: []validator.String{validators.Parsed("a whole number of at least 0, or a percentage from \"0%\" to \"100%\"", func(v string) error {
							_, err := engine.ParseCanary(v)
							return err
						})},
					},
					"max_unavailable": schema.StringAttribute{
						MarkdownDescription: "How many members may be unavailable at once during a rollout: a number of at least 1 (the default is 1), or a percentage of `target_size` such as `\"25%\"`, rounded down and at least 1. Members already unavailable (stopped or crashed while `running = true`) count against it: they are repaired first, and each wave of restarts and replacements takes what the budget leaves.",
						Optional:            true,
						Computed:            true,
						Default:             stringdefault.StaticString("1"),
						Validators: []validator.String{validators.Parsed("a whole number of at least 1, or a percentage from \"1%\" to \"100%\"", func(v string) error {
							_, _, err := engine.ParseMaxUnavailable(v)
							return err
						})},
					},
				},
				Blocks: map[string]schema.Block{"snapshot": snapshotBlock()},
			},
		},
	}
}
