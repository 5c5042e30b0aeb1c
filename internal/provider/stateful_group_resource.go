package provider

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/objectvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/libvirt"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/planmodifiers"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
	"github.com/virtfleet/terraform-provider-virt/internal/validators"
)

var (
	_ resource.Resource                = (*statefulGroupResource)(nil)
	_ resource.ResourceWithConfigure   = (*statefulGroupResource)(nil)
	_ resource.ResourceWithImportState = (*statefulGroupResource)(nil)
	_ resource.ResourceWithModifyPlan  = (*statefulGroupResource)(nil)
)

// NewStatefulGroupResource is the factory of virt_stateful_group.
func NewStatefulGroupResource() resource.Resource { return &statefulGroupResource{} }

type statefulGroupResource struct {
	data *ProviderData
}

var (
	nameValidator = stringvalidator.RegexMatches(dnsLabelRegexp,
		"must be a DNS label: 1 to 63 lower case letters, digits and hyphens, starting with a letter and not ending with a hyphen")
	deviceNameValidator = stringvalidator.All(
		stringvalidator.RegexMatches(deviceNameRegexp, "must be a lower case letter followed by up to 31 lower case letters, digits, hyphens or underscores"),
		stringvalidator.NoneOf(engine.BootDeviceName),
	)
)

func (r *statefulGroupResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_stateful_group"
}

func (r *statefulGroupResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = statefulGroupSchema()
}

// statefulGroupSchema is version 1 of the group's schema: max_unavailable became a string that
// also takes a percentage, and instances carry their planned action (see upgradeGroupStateV0).
func statefulGroupSchema() schema.Schema {
	actionValidator := stringvalidator.OneOf(engine.ActionNames...)
	return schema.Schema{
		Version:             1,
		MarkdownDescription: "A group of virtual machines built from one template, named `<base_instance_name>-<index>` with indices from 1. Metadata, labels, description and disks change live on running members; vcpu, memory and network interfaces need a restart; boot image and domain type need a replacement, rolled through the group under `update_policy`.",
		Attributes: map[string]schema.Attribute{
			// Required.
			"name": schema.StringAttribute{
				MarkdownDescription: "Name of the group, a DNS label. Changing it replaces the group.",
				Required:            true,
				Validators:          []validator.String{nameValidator},
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
				Validators:          []validator.String{nameValidator},
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
			"shutdown_timeout": schema.StringAttribute{
				MarkdownDescription: "How a member stops (restart, replace, scale-in, `running = false`, destroy): an ACPI shutdown request, a wait of up to this long for the guest to power off, then a power off. `\"0s\"` powers off at once. A duration such as `\"60s\"` (the default) or `\"2m\"`.",
				Optional:            true,
				Computed:            true,
				Default:             stringdefault.StaticString(engine.DefaultShutdownTimeoutText),
				Validators:          []validator.String{durationValidator},
			},
			// Computed.
			"id": schema.StringAttribute{
				MarkdownDescription: "The group's name.",
				Computed:            true,
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			// Terraform sees a list of one object per member (instanceAttributes); the framework
			// a string, the list's JSON (see instances_proto.go).
			"instances": schema.StringAttribute{
				MarkdownDescription: "The members, by index. In a plan, each member's `planned_action` says what the apply will do to it and why; after the apply it says what was planned, and a refresh sets it back to `NONE`. Each member's UUID, MAC and IP addresses are in the data source `virt_managed_instances`: kept out of the group's state, they cost a large group's plans nothing.",
				Computed:            true,
			},
		},
		Blocks: map[string]schema.Block{
			"timeouts": timeoutsBlock(),
			"template": schema.SingleNestedBlock{
				MarkdownDescription: "**Required** (the plugin framework cannot mark a single nested block required, so it is listed as optional; `terraform validate` refuses a group without it). What every member is built from.",
				Validators:          []validator.Object{objectvalidator.IsRequired()},
				Attributes: map[string]schema.Attribute{
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
						MarkdownDescription: "`kvm` or `qemu` (TCG emulation). Defaults to `kvm` when the host can run it, else `qemu`. A change replaces the members.",
						Optional:            true,
						Computed:            true,
						Validators:          []validator.String{stringvalidator.OneOf("kvm", "qemu")},
						PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
					},
					"metadata": schema.MapAttribute{
						MarkdownDescription: "Key/value metadata of each member, kept in the provider's record in the domain's libvirt metadata (`virsh metadata <domain> --uri https://virtfleet.dev/xmlns/virt/1`); with `cloud_init`, the guest reads it in its seed's `meta-data`, otherwise the guest does not see it. Unlike `labels`, a per-instance config can set or override keys for its instance (`preserved_state.metadata`), and they survive recreation. A change is a REFRESH: applied live on running members with no restart (with `cloud_init`, the seed's media is swapped), but refused when `most_disruptive_allowed_action` is `NONE`.",
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
						MarkdownDescription: "A directory on each member's host that the member's serial console is appended to, as `<member>.console.log`, across boots (the console is also on a pty for `virsh console`). The directory must exist and libvirt's QEMU must be able to write there (`/var/log/libvirt/qemu` for `qemu:///system`). A change restarts the members.",
						Optional:            true,
						Validators:          []validator.String{stringvalidator.RegexMatches(absolutePathRegexp, "must be an absolute path")},
					},
				},
				Blocks: map[string]schema.Block{
					"cloud_init": schema.SingleNestedBlock{
						MarkdownDescription: "Gives each member its own NoCloud seed, a CD-ROM labelled `cidata` made from the volume `<member>-cidata.iso` in the group's pool: `meta-data` with `instance-id` and `local-hostname` set to the member's name and the member's effective `metadata` as further keys (template, overlaid by its per-instance config's `preserved_state.metadata`), `user-data`, and `network-config` when set. A metadata change rewrites the seed and swaps the CD-ROM's media live, in the same boot (REFRESH). A change of `user_data` or `network_config`, or adding or removing the block, replaces the members (REPLACE): cloud-init applies them to a new instance. The seed volume goes with its member.",
						Attributes: map[string]schema.Attribute{
							"user_data": schema.StringAttribute{
								MarkdownDescription: "The `user-data` file, as cloud-init reads it (`#cloud-config` YAML, a script, ...); empty when not set. A change replaces the members.",
								Optional:            true,
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
								MarkdownDescription: "Absolute path of the image each member's boot volume is an overlay of. A change replaces the members.",
								Optional:            true,
								Validators: []validator.String{stringvalidator.RegexMatches(absolutePathRegexp,
									"must be an absolute path on the libvirt host")},
							},
							"size_mib": schema.Int64Attribute{
								MarkdownDescription: "Size in MiB, default 1024. Growth is applied live; shrinking is refused.",
								Optional:            true,
								Computed:            true,
								Default:             int64default.StaticInt64(defaultBootSizeMiB),
								Validators:          []validator.Int64{int64validator.AtLeast(1)},
							},
						},
					},
					"disk": schema.SetNestedBlock{
						MarkdownDescription: "A blank data volume per member, `<instance>-<device_name>.qcow2`, attached on virtio-scsi. Adding, removing and growing disks is live; shrinking is refused.",
						Validators:          []validator.Set{validators.UniqueAttribute("device_name")},
						NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
							"device_name": schema.StringAttribute{
								MarkdownDescription: "Name of the disk within a member; also its SCSI serial. `boot` is reserved.",
								Required:            true,
								Validators:          []validator.String{deviceNameValidator},
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
						}},
					},
				},
			},
			"auto_healing": schema.SingleNestedBlock{
				MarkdownDescription: "Replace failed members (see the data source's `health`: crashed, shut off or paused by an I/O error while `running = true`, a volume gone) at apply, keeping their preserved disks, with a delay after creation, an exponential backoff and a limit. The count of consecutive attempts is kept in each member's record on the host, so every run of Terraform agrees. Without this block a failed member is repaired like any drift (started again, or its volume rebuilt). Healing happens when Terraform runs: run `terraform apply` on a schedule to heal between your own changes.",
				Attributes: map[string]schema.Attribute{
					"initial_delay": schema.StringAttribute{
						MarkdownDescription: "A member created (or recreated) less than this long ago is not judged yet. Default `\"120s\"`.",
						Optional:            true,
						Computed:            true,
						Default:             stringdefault.StaticString(engine.DefaultInitialDelay),
						Validators:          []validator.String{durationValidator},
					},
					"backoff": schema.StringAttribute{
						MarkdownDescription: "Wait after a failed attempt before the next; doubles with each consecutive failure. Default `\"60s\"`.",
						Optional:            true,
						Computed:            true,
						Default:             stringdefault.StaticString(engine.DefaultBackoff),
						Validators:          []validator.String{durationValidator},
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
				MarkdownDescription: "Keep failed members exactly as they are, for analysis, instead of healing them: up to `auto_preserve_failed_max` at once (lowest index first), each for `preserve_timeout`. A preserved member is not healed, updated, started or stopped, counts toward `target_size`, is removed last on scale-in, and stays preserved if it becomes healthy again, until the timeout or its config's `preserve = \"NO\"`. When the maximum drops, the oldest are released first. The data source shows `preserved` and `preserved_until`.",
				Attributes: map[string]schema.Attribute{
					"auto_preserve_failed_max": schema.Int64Attribute{
						MarkdownDescription: "How many failed members are preserved at once without a config asking; default 0.",
						Optional:            true,
						Computed:            true,
						Default:             int64default.StaticInt64(0),
						Validators:          []validator.Int64{int64validator.Between(0, engine.MaxTargetSize)},
					},
					"preserve_timeout": schema.StringAttribute{
						MarkdownDescription: "How long a member stays preserved, from when its preservation began. Default `\"24h\"`.",
						Optional:            true,
						Computed:            true,
						Default:             stringdefault.StaticString(engine.DefaultPreserveTimeout),
						Validators:          []validator.String{durationValidator},
					},
				},
			},
			"distribution_policy": schema.SingleNestedBlock{
				MarkdownDescription: "The hosts the group spreads its members over. Without it, every member lives on the provider's own `uri`. New members go to the host with the fewest members (the earliest in `hosts` on a tie), and a scale-in removes first from the host that keeps the most, so the group stays evenly spread. A member never moves: its preserved disks are on its host, so a REPLACE or a re-creation happens there. Changing `hosts` places new members only; members on a host left out stay where they are (scale in, or remove them, to take them off it). The group record lives on the first host of `hosts` when the group is created, and stays there. See the guide *Connecting to libvirt*.",
				Attributes: map[string]schema.Attribute{
					"hosts": schema.ListAttribute{
						MarkdownDescription: "Names of hosts: `default` is the provider's own `uri`, any other is the `name` of a provider `host` block. At least one, each once.",
						ElementType:         types.StringType,
						Optional:            true,
						Validators: []validator.List{
							listvalidator.SizeAtLeast(1),
							listvalidator.UniqueValues(),
							listvalidator.ValueStringsAre(nameValidator),
						},
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
			},
		},
	}
}

// durationValidator accepts a duration of zero or more, as shutdown_timeout and auto_healing's
// delays take.
var durationValidator = validators.Parsed("a duration of zero or more, such as \"60s\", \"2m\" or \"0s\"", func(v string) error {
	_, err := engine.ParseShutdownTimeout(v)
	return err
})

func (r *statefulGroupResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = configureData(req.ProviderData, &resp.Diagnostics)
}

func (r *statefulGroupResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	ctx = tflog.NewSubsystem(ctx, libvirt.Subsystem)
	var plan statefulGroupModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	plan.ID = plan.Name
	// This state owns the group it creates. A create that fails saves no state: Terraform would
	// mark it tainted and the next apply would destroy the group to build it again. The group
	// record says its creation is unfinished instead, and the next apply's create finishes it.
	if r.checkCreate(ctx, plan, &resp.Diagnostics); resp.Diagnostics.HasError() {
		resp.State.RemoveResource(ctx)
		return
	}
	own := ownership{ID: newRunID()}
	claim := own.claim()
	claim.Create = true
	lim := newLimit(ctx, plan.Timeouts, "create", "group "+plan.Name.ValueString(), &resp.Diagnostics)
	diags, _ := r.apply(ctx, lim, &plan, claim, "")
	resp.Diagnostics.Append(diags...)
	if diags.HasError() {
		resp.State.RemoveResource(ctx)
		return
	}
	writeOwnership(ctx, resp.Private, own, &resp.Diagnostics)
	writeSettled(ctx, resp.Private, appliedSettled(ctx, &plan, diags), &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *statefulGroupResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	ctx = tflog.NewSubsystem(ctx, libvirt.Subsystem)
	var state statefulGroupModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	name := state.Name.ValueString()
	s, meta, found, err := r.data.loadGroupRecord(ctx, name)
	var hostDown *reconcile.RecordHostError
	if errors.As(err, &hostDown) && state.Template != nil {
		r.readWithoutRecord(ctx, &state, hostDown, resp)
		return
	}
	if err != nil {
		resp.Diagnostics.AddError("Cannot read group "+name, err.Error())
		return
	}
	if !found {
		if state.Template == nil {
			resp.Diagnostics.AddError("Group not found",
				fmt.Sprintf("This libvirt host has no record of group %q (`virsh secret-list` shows them as \"virt-group:<group>:<generation>\"), so there is nothing to import.", name))
			return
		}
		// The group was destroyed behind Terraform's back.
		resp.State.RemoveResource(ctx)
		return
	}
	switch {
	case state.Template == nil:
		// Just imported: only the name is known, the rest comes from the group record.
		state.decodeGroupSpec(s.Resource, &resp.Diagnostics)
		state.ID = state.Name
	case s.Resource != "" && !sameGroupSpec(s.Resource, state.encodeGroupSpec(ctx, &resp.Diagnostics)):
		// Another apply (a copy of this state, or an apply this state never saw finish) changed
		// the group: the state shows what the host has, so that the plan shows the difference.
		tflog.Warn(ctx, "the group record holds another configuration than this state; refreshing from it", map[string]any{"group": name})
		state.decodeGroupSpec(s.Resource, &resp.Diagnostics)
	}
	o, err := r.data.observe(ctx, s)
	if err != nil {
		resp.Diagnostics.AddError("Cannot read group "+name, err.Error())
		return
	}
	list, diags := instancesValue(membersOf(o, s, state.Running.ValueBool()))
	resp.Diagnostics.Append(diags...)
	state.Instances = list
	if own := readOwnership(ctx, req.Private, &resp.Diagnostics); own.ID == "" {
		writeOwnership(ctx, resp.Private, own.adopt(meta), &resp.Diagnostics)
	}
	var now settled
	if groupIdle(r.data.Reconciler.PlanFrom(s, o)) {
		now.Spec = state.encodeGroupSpec(ctx, &resp.Diagnostics)
	}
	writeSettled(ctx, resp.Private, now, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// readWithoutRecord refreshes a group whose record's host does not answer from what can be
// read: the group as the state has it, its members where the state last saw them, those of
// hosts that answer as they are and the others UNKNOWN. A plan then shows what is known, and
// any change to the group fails until the host is back.
func (r *statefulGroupResource) readWithoutRecord(ctx context.Context, state *statefulGroupModel, cause *reconcile.RecordHostError, resp *resource.ReadResponse) {
	s := engine.GroupState{Group: state.engineGroup(ctx, &resp.Diagnostics), Pool: state.Pool.ValueString(), Placement: map[string]string{}}
	for _, it := range instanceRows(state.Instances, &resp.Diagnostics) {
		s.Placement[it.Name] = engine.HostOf(it.Host)
	}
	if resp.Diagnostics.HasError() {
		return
	}
	o, err := r.data.Reconciler.Observe(ctx, s)
	if err != nil {
		resp.Diagnostics.AddError("Cannot read group "+s.Group.Name, err.Error())
		return
	}
	list, diags := instancesValue(membersOf(o, s, state.Running.ValueBool()))
	resp.Diagnostics.Append(diags...)
	state.Instances = list
	resp.Diagnostics.AddWarning("Group record not reachable", cause.Error()+". The members shown are read from the hosts that answer; the others are UNKNOWN.")
	resp.Diagnostics.Append(resp.State.Set(ctx, state)...)
}

func (r *statefulGroupResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	ctx = tflog.NewSubsystem(ctx, libvirt.Subsystem)
	var plan statefulGroupModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	own := readOwnership(ctx, req.Private, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	if own.ID == "" {
		own = ownership{ID: newRunID()}
	}
	var prior statefulGroupModel
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() {
		return
	}
	lim := newLimit(ctx, plan.Timeouts, "update", "group "+plan.Name.ValueString(), &resp.Diagnostics)
	diags, stored := r.apply(ctx, lim, &plan, own.claim(), prior.encodeGroupSpec(ctx, &resp.Diagnostics))
	resp.Diagnostics.Append(diags...)
	if !stored {
		// Nothing changed on the host: the state stays as it was, so that the next plan shows
		// the same change again.
		resp.State.Raw = req.State.Raw
		return
	}
	// A takeover after import is done once the record names this state.
	own.TakeoverFrom = ""
	writeOwnership(ctx, resp.Private, own, &resp.Diagnostics)
	writeSettled(ctx, resp.Private, appliedSettled(ctx, &plan, diags), &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *statefulGroupResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	ctx = tflog.NewSubsystem(ctx, libvirt.Subsystem)
	var state statefulGroupModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	own := readOwnership(ctx, req.Private, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	name := state.Name.ValueString()
	var claim *reconcile.Claim
	if own.ID != "" {
		claim = own.claim()
	}
	lim := newLimit(ctx, state.Timeouts, "delete", "group "+name, &resp.Diagnostics)
	work, cancel := lim.start(ctx)
	defer cancel()
	held, release, err := r.data.holdGroupToDestroy(work, name, claim)
	if err == nil {
		var s engine.GroupState
		var found bool
		s, found, err = r.data.loadGroup(held, name)
		if err == nil && found {
			err = leaseCause(held, r.data.Reconciler.Destroy(held, s))
		}
		release(err == nil)
	}
	if err != nil {
		resp.Diagnostics.AddError(lim.explain("Cannot delete group "+name, work, err))
	}
}

func (r *statefulGroupResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	if !nameRegexp.MatchString(req.ID) {
		resp.Diagnostics.AddError("Invalid import ID",
			fmt.Sprintf("The import ID %q must be the group's name, a DNS label of lower case letters, digits and hyphens.", req.ID))
		return
	}
	// Import takes the group over on purpose: this state gets an owner ID of its own, written in
	// the group record at its next apply, after which the state the group came from can no
	// longer change it. Nothing is written now: an import block is imported during plan.
	_, meta, found, err := r.data.loadGroupRecord(ctx, req.ID)
	if err != nil {
		resp.Diagnostics.AddError("Cannot read group "+req.ID, err.Error())
		return
	}
	own := ownership{ID: newRunID()}
	if found && meta.Owner != nil {
		own.TakeoverFrom = meta.Owner.ID
	}
	writeOwnership(ctx, resp.Private, own, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("name"), req.ID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
}

func (r *statefulGroupResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		r.checkDestroy(ctx, req, resp)
		return
	}
	var plan statefulGroupModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() || plan.Template == nil {
		return
	}
	resp.Diagnostics.Append(checkNICs(plan.Template)...)
	if req.State.Raw.IsNull() {
		r.checkCreate(ctx, plan, &resp.Diagnostics)
		r.checkGroupHost(ctx, &resp.Diagnostics, &plan, nil)
		return
	}
	var state statefulGroupModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() || state.Template == nil {
		return
	}
	r.checkGroupHost(ctx, &resp.Diagnostics, &plan, &state)
	s, gen, found, takeover, down := r.checkChange(ctx, state.Name.ValueString(), req.Private, &resp.Diagnostics)
	if down != nil {
		r.recordUnreachable(ctx, &plan, &state, down, resp)
		return
	}
	if resp.Diagnostics.HasError() || !plan.Template.known() || !known(plan.TargetSize, plan.Running) {
		return
	}
	from := state.Template.engineTemplate(ctx, &resp.Diagnostics)
	to := plan.Template.engineTemplate(ctx, &resp.Diagnostics)
	for _, s := range engine.Shrinks(from, to) {
		resp.Diagnostics.AddAttributeError(path.Root("template"), "Disk cannot shrink",
			fmt.Sprintf("template disk %q: size_mib %d is smaller than the current %d; a disk can only grow. Keep size_mib at %d or more, or remove the disk and add a new one under another device_name.",
				s.DeviceName, s.To, s.From, s.From))
	}
	if resp.Diagnostics.HasError() {
		return
	}
	if !found || !plan.Name.Equal(state.Name) {
		// A new name replaces the group: the new one is planned as a create.
		return
	}
	s.Group = plan.engineGroup(ctx, &resp.Diagnostics)
	if !takeover && !r.data.observedGroup(s.Group.Name) && !state.Instances.IsNull() && !state.Instances.IsUnknown() {
		// No refresh in this process (-refresh=false): with the configuration the state last
		// saw settled, there is nothing to plan, and nothing is read.
		spec := plan.encodeGroupSpec(ctx, &resp.Diagnostics)
		if st := readSettled(ctx, req.Private, &resp.Diagnostics); st.Spec != "" && sameGroupSpec(st.Spec, spec) && sameGroupSpec(spec, state.encodeGroupSpec(ctx, &resp.Diagnostics)) {
			resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("instances"), state.Instances)...)
			return
		}
	}
	p, o, err := r.data.previewAt(ctx, s, gen)
	if err != nil {
		resp.Diagnostics.AddError("Cannot plan group "+s.Group.Name, err.Error())
		return
	}
	addPlanDiagnostics(&resp.Diagnostics, p, path.Root("update_policy").AtName("most_disruptive_allowed_action"))
	var creates []string
	for _, c := range p.Create {
		creates = append(creates, c.Name)
	}
	if taken := o.TakenNames(s.Group.Name, creates); len(taken) > 0 {
		resp.Diagnostics.AddAttributeError(path.Root("target_size"), "Member names taken",
			fmt.Sprintf("The plan creates members under names that other domains have: %s. Nothing was changed. Remove or rename those domains, import a domain no provider created with a per-instance config, or choose a smaller target_size.", strings.Join(taken, ", ")))
		return
	}
	list, diags := instancesValue(p.Final)
	resp.Diagnostics.Append(diags...)
	// When the group has nothing to do, a difference in the list can only come from another
	// resource of the group (a per-instance config that added a named member) since the last
	// refresh: the next refresh shows it, and the group itself has nothing to change for it.
	if groupIdle(p) && !state.Instances.IsNull() && !state.Instances.IsUnknown() {
		list = state.Instances
	}
	if takeover {
		// The apply writes this state in the group record as its owner: an update in place.
		list = types.StringUnknown()
	}
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("instances"), list)...)
}

// recordUnreachable handles a plan of a group whose record's host does not answer: with no
// change to the group, the plan keeps the members as the refresh read them, with a warning; a
// change is refused, naming the host.
func (r *statefulGroupResource) recordUnreachable(ctx context.Context, plan, state *statefulGroupModel, down error, resp *resource.ModifyPlanResponse) {
	change := !plan.Name.Equal(state.Name) || !sameGroupSpec(plan.encodeGroupSpec(ctx, &resp.Diagnostics), state.encodeGroupSpec(ctx, &resp.Diagnostics))
	unreachableRecord(down, change, &resp.Diagnostics)
	if !change {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("instances"), state.Instances)...)
	}
}

// checkCreate refuses, at plan, to create a group that is already there: its record, members
// left without it, or domains no provider created under its members' names. A creation that an
// earlier apply left unfinished is finished, with a warning.
func (r *statefulGroupResource) checkCreate(ctx context.Context, plan statefulGroupModel, diags *diag.Diagnostics) {
	if !known(plan.Name, plan.BaseInstanceName) {
		return
	}
	name := plan.Name.ValueString()
	_, meta, found, err := r.data.loadGroupRecord(ctx, name)
	if err != nil {
		diags.AddError("Cannot read group "+name, err.Error())
		return
	}
	if found {
		err := r.data.Reconciler.CheckClaim(name, meta, true, reconcile.Claim{Create: true})
		if err != nil {
			diags.AddAttributeError(path.Root("name"), "Group already exists", err.Error())
			return
		}
		diags.AddWarning("Finishing an unfinished creation",
			fmt.Sprintf("Group %s was being created by an earlier apply that did not finish (owner %s since %s); this apply finishes it and takes it as its own.",
				name, meta.Owner.ID, meta.Owner.Since.UTC().Format(time.RFC3339)))
		if err := r.data.Reconciler.CheckLease(name, meta); err != nil {
			diags.AddError("Group is being changed by another apply", err.Error())
		}
		return
	}
	err = r.data.Reconciler.Occupied(ctx, engine.Group{Name: name, Base: plan.BaseInstanceName.ValueString()})
	var exists *reconcile.ExistsError
	var taken *reconcile.NamesTakenError
	switch {
	case errors.As(err, &exists):
		diags.AddAttributeError(path.Root("name"), "Group already exists", err.Error())
	case errors.As(err, &taken):
		diags.AddAttributeError(path.Root("base_instance_name"), "Member names taken", err.Error())
	case err != nil:
		diags.AddError("Cannot read group "+name, err.Error())
	}
}

// checkChange refuses, at plan, a change to a group that another state owns or that another
// apply is changing. takeover is true when this state imported the group and its apply will
// write itself in the record as the owner.
//
// It returns the group record it read, for the rest of the plan.
// A record that cannot be read because its host does not answer is returned as down, with no
// diagnostic: what that means depends on the plan.
func (r *statefulGroupResource) checkChange(ctx context.Context, name string, private privateGetter, diags *diag.Diagnostics) (s engine.GroupState, gen int64, found, takeover bool, down error) {
	s, meta, found, err := r.data.loadGroupRecord(ctx, name)
	var unreachable *reconcile.RecordHostError
	if errors.As(err, &unreachable) {
		return s, 0, false, false, err
	}
	if err != nil {
		diags.AddError("Cannot read group "+name, err.Error())
		return s, 0, false, false, nil
	}
	if !found {
		return s, 0, false, false, nil
	}
	own := readOwnership(ctx, private, diags).adopt(meta)
	if err := r.data.Reconciler.CheckClaim(name, meta, true, *own.claim()); err != nil {
		diags.AddError("Group belongs to another Terraform state", err.Error())
		return s, 0, true, false, nil
	}
	if err := r.data.Reconciler.CheckLease(name, meta); err != nil {
		diags.AddError("Group is being changed by another apply", err.Error())
		return s, 0, true, false, nil
	}
	if own.takingOver(meta) {
		diags.AddWarning("Taking the group over",
			fmt.Sprintf("This state imported group %s, which belongs to another Terraform state (owner %s). This apply records this state as its owner; from then on the other state can no longer change or destroy it.",
				name, meta.Owner.ID))
		return s, 0, true, true, nil
	}
	return s, meta.Generation, true, false, nil
}

// checkDestroy refuses, at plan, to destroy a group that another state owns or that another
// apply is changing.
func (r *statefulGroupResource) checkDestroy(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.State.Raw.IsNull() {
		return
	}
	var state statefulGroupModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if _, _, _, _, down := r.checkChange(ctx, state.Name.ValueString(), req.Private, &resp.Diagnostics); down != nil {
		// Destroying is a change: refused until the record's host answers.
		unreachableRecord(down, true, &resp.Diagnostics)
	}
}

// groupIdle reports whether applying the plan would change nothing on the host: no member
// created, deleted, changed, started or stopped.
func groupIdle(p engine.GroupPlan) bool {
	if len(p.Create) > 0 || len(p.Delete) > 0 || len(p.Blocked) > 0 {
		return false
	}
	for _, st := range p.Steps {
		if st.Changed() || st.Power != "" {
			return false
		}
	}
	return true
}

// appliedSettled is the marker an apply leaves: settled at the configuration it applied when it
// finished without an error, not settled otherwise.
func appliedSettled(ctx context.Context, m *statefulGroupModel, diags diag.Diagnostics) settled {
	if diags.HasError() {
		return settled{}
	}
	var d diag.Diagnostics
	return settled{Spec: m.encodeGroupSpec(ctx, &d)}
}

// apply resolves the domain type, stores the group in its record, reconciles it and reads the
// members back into m.
//
// stored is false when the record was not changed: the change was refused (another apply holds
// the group, another state owns it) or failed before anything was written.
//
// prior is the rendering of the configuration this state last applied ("" for a create): a
// record that holds another one was changed by another apply since this plan was made, and the
// change is refused before anything is written.
func (r *statefulGroupResource) apply(ctx context.Context, lim limit, m *statefulGroupModel, claim *reconcile.Claim, prior string) (diags diag.Diagnostics, stored bool) {
	// The change runs within the time limit; what follows it (reading the members back) runs
	// on ctx, so that a change cut off by its limit still saves what it did.
	work, cancel := lim.start(ctx)
	defer cancel()
	if m.Template.DomainType.IsNull() || m.Template.DomainType.IsUnknown() {
		t, err := r.data.Backend.DefaultDomainType(work)
		if err != nil {
			diags.AddError("Cannot tell whether the host runs KVM", err.Error())
			return diags, false
		}
		m.Template.DomainType = types.StringValue(t)
	}
	g := m.engineGroup(ctx, &diags)
	resource := m.encodeGroupSpec(ctx, &diags)
	shown := plannedActions(m.Instances, &diags)
	if diags.HasError() {
		return diags, false
	}
	// The plan that runs is the plan that was shown: an apply that would now delete a member, or
	// treat one more disruptively than the plan said (the host or the group's other resources
	// changed in between), stops before changing anything.
	var ran *engine.GroupPlan // the last plan checked: the one the apply runs
	check := func(p engine.GroupPlan) error {
		ran = &p
		if shown == nil {
			return nil
		}
		if extra := p.Unplanned(shown); len(extra) > 0 {
			return fmt.Errorf("group %s changed since the plan was made, and applying now would do more than the plan showed: %s. Nothing was changed; run terraform apply again to see and apply the new plan", g.Name, strings.Join(extra, "; "))
		}
		return nil
	}
	s, stored, applyErr := r.data.changeAndApplyChecked(work, g.Name, m.Pool.ValueString(), true, claim, func(s *engine.GroupState, exists bool) error {
		if exists && prior != "" && s.Resource != "" && !sameGroupSpec(s.Resource, prior) {
			return &staleError{group: g.Name}
		}
		s.SetGroup(g)
		s.Resource = resource
		if !exists {
			s.Pool = m.Pool.ValueString()
		}
		return nil
	}, check)
	if !stored {
		diags.AddError(lim.explain("Cannot apply group "+g.Name, work, applyErr))
		return diags, false
	}
	var members []engine.Member
	if applyErr == nil && ran != nil {
		// Every operation of the plan succeeded, so the members are as its final state says:
		// reading each one back would cost a call per member and tell nothing more (the next
		// refresh reads the host).
		members = slices.Clone(ran.Final)
	} else {
		// What a failed or cut-off apply left is read back from the host.
		o, err := r.data.Reconciler.Observe(ctx, s)
		if err != nil {
			diags.AddError("Cannot read group "+g.Name, err.Error())
			m.Instances = types.StringNull()
			return diags, true
		}
		members = membersOf(o, s, m.Running.ValueBool())
	}
	health := plannedHealth(m.Instances, &diags)
	for i := range members {
		// After the apply, planned_action and health keep what the plan said, as Terraform
		// expects; the next refresh shows the health the host has.
		members[i].Planned = shown[members[i].Name]
		if h, ok := health[members[i].Name]; ok {
			members[i].Health = h
		}
	}
	list, d := instancesValue(members)
	diags.Append(d...)
	m.Instances = list
	if applyErr != nil {
		diags.AddError(lim.explain("Cannot apply group "+g.Name, work, applyErr))
	}
	return diags, stored
}

// plannedActions reads the planned action of each member from a planned instances list; nil
// when the list is not known (a new group, or a plan that could not read the host).
func plannedActions(l types.String, diags *diag.Diagnostics) map[string]string {
	if l.IsNull() || l.IsUnknown() {
		return nil
	}
	out := map[string]string{}
	for _, it := range instanceRows(l, diags) {
		out[it.Name] = ""
		if it.PlannedAction != nil {
			out[it.Name] = *it.PlannedAction
		}
	}
	return out
}

// plannedHealth reads the planned health of each member from a planned instances list.
func plannedHealth(l types.String, diags *diag.Diagnostics) map[string]string {
	out := map[string]string{}
	for _, it := range instanceRows(l, diags) {
		if it.Health != nil {
			out[it.Name] = *it.Health
		}
	}
	return out
}

// membersOf renders the observed members, adopted ones included, as they are now, their health
// judged against running and their records read against the group's templates (engine.Described).
func membersOf(o reconcile.Observation, s engine.GroupState, running bool) []engine.Member {
	out := make([]engine.Member, 0, len(o.Observed))
	rev := s.Group.Template.Revision()
	for _, ob := range o.Observed {
		if ob.Unmanaged {
			continue
		}
		if ob.Unknown {
			// Shown as every plan shows it, so that a plan made while its host is down is
			// empty rather than a change that changes nothing.
			out = append(out, engine.UnknownMember(ob))
			continue
		}
		health, _ := engine.Health(ob, running)
		mi := engine.Described(ob, rev, s.TemplateRevisions)
		out = append(out, engine.Member{Name: ob.Name, Index: ob.Index, Status: ob.Status,
			Revision: mi.TemplateRevision, CurrentAction: engine.CurrentAction(mi), Health: health, Host: ob.Host})
	}
	return out
}

// checkNICs enforces that a network interface names its network exactly when its type needs one.
func checkNICs(t *templateModel) diag.Diagnostics {
	var diags diag.Diagnostics
	for i, n := range t.NetworkInterface {
		if !known(n.Type, n.Network) {
			continue
		}
		p := path.Root("template").AtName("network_interface").AtListIndex(i).AtName("network")
		switch {
		case n.Type.ValueString() == "network" && n.Network.ValueString() == "":
			diags.AddAttributeError(p, "Missing network", "network_interface with type \"network\" needs network, the name of a libvirt network such as \"default\"; or set type = \"user\".")
		case n.Type.ValueString() == "user" && !n.Network.IsNull():
			diags.AddAttributeError(p, "Unexpected network", fmt.Sprintf("network_interface with type \"user\" takes no network, got %q.", n.Network.ValueString()))
		}
	}
	return diags
}
