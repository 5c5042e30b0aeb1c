package actions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework-validators/setvalidator"
	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/action/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/libvirt"
	"github.com/virtfleet/terraform-provider-virt/internal/diagnostics"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

var (
	_ action.ActionWithConfigure  = (*InstanceAction)(nil)
	_ action.ActionWithModifyPlan = (*InstanceAction)(nil)
)

// InstanceAction is one of the actions on named members of a group (Terraform 1.14): the engine
// plans what each member gets (engine.PlanMemberAction), under the group's lease as an apply.
type InstanceAction struct {
	Kind engine.MemberAction
	Data *providerdata.ProviderData
}

// NewInstanceRestartAction is virt_instance_restart.
func NewInstanceRestartAction() action.Action {
	return &InstanceAction{Kind: engine.MemberRestart}
}

// NewInstanceRecreateAction is virt_instance_recreate.
func NewInstanceRecreateAction() action.Action {
	return &InstanceAction{Kind: engine.MemberRecreate}
}

// NewInstancePreserveAction is virt_instance_preserve.
func NewInstancePreserveAction() action.Action {
	return &InstanceAction{Kind: engine.MemberPreserve}
}

// NewInstanceReleaseAction is virt_instance_release.
func NewInstanceReleaseAction() action.Action {
	return &InstanceAction{Kind: engine.MemberRelease}
}

// NewInstanceRestoreAction is virt_instance_restore.
func NewInstanceRestoreAction() action.Action {
	return &InstanceAction{Kind: engine.MemberRestore}
}

// instanceActionModel is the configuration of every instance action.
type instanceActionModel struct {
	Group     types.String `tfsdk:"group"`
	Instances types.Set    `tfsdk:"instances"`
}

func (a *InstanceAction) Metadata(_ context.Context, req action.MetadataRequest, resp *action.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_instance_" + a.Kind.String()
}

func (a *InstanceAction) Schema(_ context.Context, _ action.SchemaRequest, resp *action.SchemaResponse) {
	resp.Schema = InstanceActionSchema(a.Kind)
}

// instanceActionWhat says what each action does, for its schema's description.
var instanceActionWhat = map[engine.MemberAction]string{
	engine.MemberRestart: "Restarts named members of a group now, each under its own UUID: an ACPI shutdown, a wait of up to the group's `shutdown_timeout`, then power off, and a start, " +
		"with any change the group's record already asks for that a restart can make. A member that needs a replacement to reach its template is refused: recreate it, or apply the group.",
	engine.MemberRecreate: "Recreates named members of a group now: each gets a new domain (a new UUID) and new stateless volumes, and keeps every preserved disk byte for byte, under the same name, MAC addresses and device names, as a `REPLACE` of an apply does. " +
		"With an `OPPORTUNISTIC` update policy the recreated member takes the group's current template.",
	engine.MemberPreserve: "Preserves named members now, for failed-instance preservation's `preserve_timeout` (24h when the group sets none), as `preserve = \"NOW\"` on a per-instance config does: " +
		"a preserved member is kept exactly as it is, never healed, updated, started, stopped or removed by scale-in first. A member already preserved is left as it is. " +
		"Refused for a member whose per-instance config says `preserve = \"NO\"` (the next apply would release it at once).",
	engine.MemberRestore: "Puts the disks of named members back to their snapshots (`update_policy.snapshot`): each member is stopped as a restart stops it (an ACPI shutdown, a wait of up to the group's `shutdown_timeout`, then power off), each disk that has a snapshot is put back to it, and the member starts again under the same UUID, waited for until ready. " +
		"Each disk is put back to its newest snapshot, taken by the member's last rollout after its graceful stop: the data as it was before that rollout, which the data source `virt_managed_instances` shows (`snapshots`). A disk has an older one beside it only when a rollout that failed left it (it is kept until an apply succeeds); put that one back by hand (below). Only the data goes back: the member stays on the template it runs. The snapshot is kept (until its retention). " +
		"Refused for a member with no snapshot, a preserved member, and a member that needs a replacement to reach its template (apply the group first). A snapshot deleted by hand since fails the action, naming it. Without actions (Terraform before 1.14), the same is done by the apply of a rollout that fails with `on_failure = \"ROLLBACK\"`, or by hand: stop the member, `qemu-img snapshot -a <tag> <volume>`, start it (see the guide *Upgrading a database group*).",
	engine.MemberRelease: "Ends the preservation of named members, as `preserve = \"NO\"` on a per-instance config does: the member is planned as usual again, and the change its record asks for (a heal, a pending update) is made with the release, as the release of an apply makes it. " +
		"A member not preserved is left as it is. Refused for a member that the next apply would preserve again (its per-instance config says `preserve = \"NOW\"`, or it has failed and the group's failed-instance preservation would take it).",
}

func InstanceActionSchema(kind engine.MemberAction) schema.Schema {
	return schema.Schema{
		MarkdownDescription: instanceActionWhat[kind] + "\n\n" +
			"The action runs under the group's lease, as an apply does: while another apply or action holds it, it is refused and nothing changes. " +
			"Every named member must be a member of the group, else nothing changes. " +
			"Members that go down are taken in waves within the update policy's `max_unavailable` (members already down count against it), each prepared before it stops, marked in flight so that an interrupted action is finished by the next apply, and the action stops at the first failure. " +
			"The update policy's `most_disruptive_allowed_action` does not bound an action: it bounds what a change of configuration does on its own. " +
			"Needs Terraform 1.14 or later: `terraform apply -invoke=action.virt_instance_" + kind.String() + ".<name>`, or an `action_trigger` in a resource's `lifecycle`.",
		Attributes: map[string]schema.Attribute{
			"group": schema.StringAttribute{
				MarkdownDescription: "The name of the group (`virt_stateful_group.<name>.name`).",
				Required:            true,
				Validators:          []validator.String{providerdata.NameValidator},
			},
			"instances": schema.SetAttribute{
				MarkdownDescription: "The names of the members to " + kind.String() + ", such as `db-2`: at least one, each a member of the group.",
				ElementType:         types.StringType,
				Required:            true,
				Validators:          []validator.Set{setvalidator.SizeAtLeast(1), setvalidator.ValueStringsAre(providerdata.NameValidator)},
			},
		},
	}
}

func (a *InstanceAction) Configure(_ context.Context, req action.ConfigureRequest, resp *action.ConfigureResponse) {
	a.Data = providerdata.ConfigureData(req.ProviderData, &resp.Diagnostics)
}

// config reads the action's configuration; known is false while a value is not known yet.
func (a *InstanceAction) config(ctx context.Context, get func(context.Context, any) diag.Diagnostics, diags *diag.Diagnostics) (group string, names []string, known bool) {
	var m instanceActionModel
	diags.Append(get(ctx, &m)...)
	if diags.HasError() || m.Group.IsUnknown() || m.Instances.IsUnknown() {
		return "", nil, false
	}
	var elems []types.String
	diags.Append(m.Instances.ElementsAs(ctx, &elems, true)...)
	for _, e := range elems {
		if e.IsUnknown() {
			return "", nil, false
		}
		names = append(names, e.ValueString())
	}
	slices.Sort(names)
	return m.Group.ValueString(), names, !diags.HasError()
}

// ModifyPlan checks the action at plan against what the host has now, so that a name that is
// not a member, a member the action cannot be done to, or a group another apply is changing is
// told before anything runs. A group not on the host yet (created by the same apply) is checked
// when the action runs.
func (a *InstanceAction) ModifyPlan(ctx context.Context, req action.ModifyPlanRequest, resp *action.ModifyPlanResponse) {
	ctx = a.Data.ReadingHosts(ctx)
	if a.Data == nil {
		return
	}
	ctx = tflog.NewSubsystem(ctx, libvirt.Subsystem)
	group, names, known := a.config(ctx, req.Config.Get, &resp.Diagnostics)
	if !known {
		return
	}
	s, meta, found, err := a.Data.LoadGroupRecord(ctx, group)
	switch {
	case err != nil:
		if !providerdata.UnreachableRecord(err, true, &resp.Diagnostics) {
			resp.Diagnostics.Append(diagnostics.GroupRead(group, err))
		}
		return
	case !found:
		return
	}
	if err := a.Data.Reconciler.CheckLease(group, meta); err != nil {
		resp.Diagnostics.Append(diagnostics.GroupLeaseHeld(err))
		return
	}
	_, _, err = a.Data.Reconciler.PlanAction(ctx, s, a.Kind, names)
	a.reportRefusal(group, err, &resp.Diagnostics)
}

func (a *InstanceAction) Invoke(ctx context.Context, req action.InvokeRequest, resp *action.InvokeResponse) {
	ctx = a.Data.ReadingHosts(ctx)
	defer reconcile.LogCounts(ctx, "instance "+a.Kind.String())
	ctx = tflog.NewSubsystem(ctx, libvirt.Subsystem)
	if a.Data == nil {
		resp.Diagnostics.Append(diagnostics.ProviderNotConfigured("the action"))
		return
	}
	group, names, known := a.config(ctx, req.Config.Get, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	if !known {
		resp.Diagnostics.AddError("Action configuration not known", "The group or the instances are not known when the action runs.")
		return
	}
	summary := fmt.Sprintf("Cannot %s members of group %s", a.Kind, group)
	held, release, err := a.Data.HoldGroup(reconcile.WithStarted(ctx), group, nil)
	if err != nil {
		a.failed(held, summary, err, &resp.Diagnostics)
		return
	}
	finished := false
	defer func() { release(finished) }()
	s, found, err := a.Data.LoadGroup(held, group)
	switch {
	case err != nil:
		a.failed(held, summary, providerdata.LeaseCause(held, err), &resp.Diagnostics)
		return
	case !found:
		resp.Diagnostics.Append(diagnostics.GroupNotFound(path.Root("group"), group))
		return
	}
	ap, _, err := a.Data.Reconciler.PlanAction(held, s, a.Kind, names)
	if err != nil {
		a.reportRefusal(group, providerdata.LeaseCause(held, err), &resp.Diagnostics)
		return
	}
	send := a.progress(resp)
	for _, name := range names {
		if why, ok := ap.Unchanged[name]; ok {
			send(fmt.Sprintf("%s: %s, left as it is", name, why))
		}
	}
	total := ap.Plan.Ops()
	var n int
	var mu sync.Mutex
	run := reconcile.WithProgress(held, func(_ string, op engine.Operation) {
		mu.Lock()
		defer mu.Unlock()
		n++
		send(fmt.Sprintf("instance %d of %d %s: %s", n, total, a.Kind.Done(), op.Name))
	})
	err = a.Data.Reconciler.RunAction(run, s, a.Kind, ap.Plan)
	if err != nil {
		a.failed(held, summary, providerdata.LeaseCause(held, err), &resp.Diagnostics)
		return
	}
	finished = true
}

// progress is how the action tells its progress: to Terraform, and to the log.
func (a *InstanceAction) progress(resp *action.InvokeResponse) func(msg string) {
	return func(msg string) {
		if resp.SendProgress != nil {
			resp.SendProgress(action.InvokeProgressEvent{Message: msg})
		}
	}
}

// reportRefusal reports an action that could not be planned: refused by the engine, or the
// group's members could not be read. It tells whether there was an error.
func (a *InstanceAction) reportRefusal(group string, err error, diags *diag.Diagnostics) bool {
	var unknown *engine.UnknownMembersError
	var refused *engine.ActionRefusedError
	switch {
	case errors.As(err, &unknown):
		diags.AddAttributeError(path.Root("instances"), "Not a member of the group", unknown.Error())
	case errors.As(err, &refused):
		diags.AddError(fmt.Sprintf("Cannot %s members of group %s", a.Kind, group), refused.Error())
	case err != nil:
		diags.Append(diagnostics.GroupPlan(group, err))
	default:
		return false
	}
	return true
}

// failed reports an action that failed, or was refused before it changed anything; ctx tells
// whether an operation started (reconcile.Started).
func (a *InstanceAction) failed(ctx context.Context, summary string, err error, diags *diag.Diagnostics) {
	var lease *engine.LeaseError
	if errors.As(err, &lease) {
		diags.Append(diagnostics.GroupLeaseHeld(err))
		return
	}
	diags.AddError(summary, providerdata.ApplyError(err, reconcile.Started(ctx)))
}
