package pool

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/backend/libvirt"
	"github.com/virtfleet/terraform-provider-virt/internal/diagnostics"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
	"github.com/virtfleet/terraform-provider-virt/internal/validators"
)

var (
	_ resource.Resource                = (*poolResource)(nil)
	_ resource.ResourceWithConfigure   = (*poolResource)(nil)
	_ resource.ResourceWithImportState = (*poolResource)(nil)
	_ resource.ResourceWithModifyPlan  = (*poolResource)(nil)
)

// NewPoolResource is the factory of virt_pool.
func NewPoolResource() resource.Resource { return &poolResource{} }

// poolResource is a libvirt directory storage pool. It owns exactly the pool whose UUID is its
// id: it never takes a pool it did not create without an import, and it never deletes the
// pool's directory or a file in it (a group's preserved disks may live there).
type poolResource struct {
	data *providerdata.ProviderData
}

type poolModel struct {
	ID   types.String `tfsdk:"id"`
	Name types.String `tfsdk:"name"`
	Path types.String `tfsdk:"path"`
	Host types.String `tfsdk:"host"`
}

func (r *poolResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_pool"
}

func (r *poolResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = poolSchema()
}

func poolSchema() schema.Schema {
	return schema.Schema{
		MarkdownDescription: "A libvirt directory storage pool, for a group's volumes (`pool = virt_pool.<name>.name`: a group and the pool it names are planned and created in one `terraform apply`). " +
			"Create defines the pool, builds it (makes the directory; an existing directory is used as it is, with its files), starts it and marks it autostart. " +
			"It refuses a name a pool on the host already has (import that pool instead) and a directory that is, links followed, another pool's target. " +
			"Destroy stops and undefines only the pool whose UUID is this resource's `id`; **the directory and every file in it are left as they are** (preserved disks may be there), and the destroy plan warns naming the volumes left. " +
			"A pool removed behind Terraform's back is removed from the state, to be created again.",
		Attributes: map[string]schema.Attribute{
			"name": schema.StringAttribute{
				MarkdownDescription: "Name of the pool on the host: " + poolNameRule + ". Changing it replaces the pool.",
				Required:            true,
				Validators:          []validator.String{poolNameValidator},
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"path": schema.StringAttribute{
				MarkdownDescription: "Absolute path of the pool's directory on the host, in clean form (no trailing slash, `.` or `..`). Changing it replaces the pool (the old directory and its files stay).",
				Required:            true,
				Validators:          []validator.String{poolPathValidator},
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"host": schema.StringAttribute{
				MarkdownDescription: "The provider host the pool is on: `default` (the provider's `uri`, the default) or the name of one of its `host` blocks. Changing it replaces the pool.",
				Optional:            true,
				Computed:            true,
				Default:             stringdefault.StaticString(engine.DefaultHost),
				Validators:          []validator.String{providerdata.NameValidator},
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"id": schema.StringAttribute{
				MarkdownDescription: "The pool's libvirt UUID: the pool this resource owns.",
				Computed:            true,
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
		},
	}
}

func (r *poolResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = providerdata.ConfigureData(req.ProviderData, &resp.Diagnostics)
}

func (r *poolResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan poolModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx = tflog.NewSubsystem(ctx, libvirt.Subsystem)
	host, name, dir := plan.Host.ValueString(), plan.Name.ValueString(), plan.Path.ValueString()
	b, ok := r.hostOf(host, &resp.Diagnostics)
	if !ok {
		return
	}
	// Checked again at apply: the host may have changed since the plan. The pool a replacement
	// replaces is gone by now, so nothing is left out.
	if !r.checkFree(ctx, b, host, name, dir, nil, &resp.Diagnostics) {
		return
	}
	created, err := b.CreatePool(ctx, name, dir)
	if err != nil {
		resp.Diagnostics.AddError("Cannot create storage pool "+name, fmt.Sprintf("%s: %s. Nothing of the pool was kept defined; the directory, if the build made it, is left.", providerdata.OnHost(host), err))
		return
	}
	tflog.Info(ctx, "created storage pool", map[string]any{"pool": name, "path": dir, "host": host, "uuid": created.UUID})
	plan.ID = types.StringValue(created.UUID)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *poolResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	ctx, cancel := reconcile.HostContext(r.data.ReadingHosts(ctx)) // one host's reading
	defer cancel()
	var state poolModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	b, ok := r.hostOf(state.Host.ValueString(), &resp.Diagnostics)
	if !ok {
		return
	}
	p, err := b.PoolByUUID(ctx, state.ID.ValueString())
	switch {
	case errors.Is(err, backend.ErrNotFound):
		tflog.Warn(ctx, "storage pool is gone; removing it from the state", map[string]any{"pool": state.Name.ValueString(), "uuid": state.ID.ValueString()})
		resp.State.RemoveResource(ctx)
		return
	case err != nil:
		resp.Diagnostics.AddError("Cannot read storage pool "+state.Name.ValueString(), providerdata.OnHost(state.Host.ValueString())+": "+err.Error())
		return
	}
	state.Name = types.StringValue(p.Name)
	if p.Target != "" {
		state.Path = types.StringValue(p.Target)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// Update is never called with a change: every attribute replaces the pool.
func (r *poolResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan poolModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *poolResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state poolModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx = tflog.NewSubsystem(ctx, libvirt.Subsystem)
	b, ok := r.hostOf(state.Host.ValueString(), &resp.Diagnostics)
	if !ok {
		return
	}
	// By UUID: a pool someone made under the same name since is not this resource's.
	if err := b.DeletePool(ctx, state.ID.ValueString()); err != nil {
		resp.Diagnostics.AddError("Cannot delete storage pool "+state.Name.ValueString(), providerdata.OnHost(state.Host.ValueString())+": "+err.Error())
		return
	}
	tflog.Info(ctx, "stopped and undefined storage pool; its directory is left", map[string]any{"pool": state.Name.ValueString(), "path": state.Path.ValueString(), "uuid": state.ID.ValueString()})
}

// ImportState takes a pool by its name ("<host>/<name>" for a pool on a host block): libvirt pool
// names hold no "/".
func (r *poolResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	ctx, cancel := reconcile.HostContext(r.data.ReadingHosts(ctx)) // one host's reading
	defer cancel()
	host, name := engine.DefaultHost, req.ID
	if h, n, ok := strings.Cut(req.ID, "/"); ok {
		host, name = h, n
	}
	b, ok := r.hostOf(host, &resp.Diagnostics)
	if !ok {
		return
	}
	pools, err := b.ListPools(ctx)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.PoolsUnreadable(providerdata.OnHost(host), err))
		return
	}
	for _, p := range pools {
		if p.Name != name {
			continue
		}
		if p.Path == "" {
			resp.Diagnostics.AddError("Storage pool is not a directory pool", fmt.Sprintf("pool %q on %s is not a directory (dir) pool: virt_pool manages directory pools only.", name, providerdata.OnHost(host)))
			return
		}
		resp.Diagnostics.Append(resp.State.Set(ctx, &poolModel{
			ID: types.StringValue(p.UUID), Name: types.StringValue(p.Name), Path: types.StringValue(p.Path), Host: types.StringValue(host),
		})...)
		return
	}
	resp.Diagnostics.Append(diagnostics.PoolNotFoundToImport(providerdata.OnHost(host), name))
}

// ModifyPlan checks a create against the host's pools and notes it for the groups planned after
// it (providerdata/pool_plans.go); a replacement notes the pool it replaces; a destroy warns about what it
// leaves.
func (r *poolResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	ctx, cancel := reconcile.HostContext(r.data.ReadingHosts(ctx)) // one host's reading
	defer cancel()
	if r.data == nil {
		return
	}
	if req.Plan.Raw.IsNull() {
		r.warnDestroy(ctx, req, resp)
		return
	}
	var plan poolModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if !req.State.Raw.IsNull() {
		var state poolModel
		resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
		if !resp.Diagnostics.HasError() && (!plan.Name.Equal(state.Name) || !plan.Path.Equal(state.Path) || !plan.Host.Equal(state.Host)) {
			r.data.PlanPoolReplace(state.Host.ValueString(), state.Name.ValueString(), state.ID.ValueString())
			// A replacement moves no file: the volumes of the old pool, a group's among them,
			// stay in the old directory.
			r.warnLeft(ctx, state, "replacement", &resp.Diagnostics)
		}
		return
	}
	if !providerdata.Known(plan.Name, plan.Path, plan.Host) {
		return
	}
	host, name, dir := plan.Host.ValueString(), plan.Name.ValueString(), plan.Path.ValueString()
	names := r.data.Reconciler.HostNames()
	b, err := r.data.Host(host)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.UnknownHost(path.Root("host"), "host", host, names))
		return
	}
	if !r.checkFree(ctx, b, host, name, dir, r.data.ReplacedPools(host), &resp.Diagnostics) {
		return
	}
	r.data.PlanPoolCreate(host, name, dir)
}

// checkFree refuses a pool name that the host's pools already have, or a directory that is one's
// target (replaced: UUIDs of pools a replacement removes first).
func (r *poolResource) checkFree(ctx context.Context, b backend.Pools, host, name, dir string, replaced map[string]bool, diags *diag.Diagnostics) bool {
	pools, err := b.ListPools(ctx)
	if err != nil {
		diags.Append(diagnostics.PoolsUnreadable(providerdata.OnHost(host), err))
		return false
	}
	resolve := providerdata.PathResolver(b)
	if tree := providerdata.ForbiddenTree(resolve(dir)); tree != "" {
		diags.AddAttributeError(path.Root("path"), "Invalid storage pool path", fmt.Sprintf("path = %q is under %s on %s, which holds the host's own files: a pool there would hand them to libvirt as volumes. Choose a directory such as /var/lib/<name>.", dir, tree, providerdata.OnHost(host)))
		return false
	}
	taken, shared := providerdata.PoolConflict(pools, replaced, name, dir, resolve)
	switch {
	case taken != nil:
		diags.Append(diagnostics.PoolExists(path.Root("name"), providerdata.OnHost(host), name, taken.Target))
		return false
	case shared != nil:
		diags.Append(diagnostics.PoolPathTaken(path.Root("path"), providerdata.OnHost(host), dir, resolve(dir), shared.Name, shared.Target))
		return false
	}
	return true
}

// warnDestroy says, in the destroy plan, which volumes the pool's directory keeps.
func (r *poolResource) warnDestroy(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	var state poolModel
	if d := req.State.Get(ctx, &state); d.HasError() {
		return
	}
	r.warnLeft(ctx, state, "destroy", &resp.Diagnostics)
}

// warnLeft warns, when the pool holds volumes, that its destroy or replacement (what) leaves
// them in its directory, naming them. A host that cannot be read is said so, without failing
// the plan.
func (r *poolResource) warnLeft(ctx context.Context, state poolModel, what string, diags *diag.Diagnostics) {
	name, host, dir := state.Name.ValueString(), state.Host.ValueString(), state.Path.ValueString()
	summary := "Storage pool " + name + " leaves its files"
	b, err := r.data.Host(host)
	if err != nil {
		return
	}
	if _, err := b.PoolByUUID(ctx, state.ID.ValueString()); errors.Is(err, backend.ErrNotFound) {
		return // gone already: there is nothing to stop
	}
	head := fmt.Sprintf("The %s stops and undefines pool %q on %s; its directory %q and every file in it are left as they are.", what, name, providerdata.OnHost(host), dir)
	if what == "replacement" {
		head += " The new pool starts without them: a group on this pool does not find its volumes there."
	}
	vols, err := b.ListVolumeNames(ctx, name, "")
	switch {
	case err != nil:
		diags.AddWarning(summary, fmt.Sprintf("%s Its volumes could not be listed (%s): look with `virsh vol-list %s` or in the directory.", head, err, name))
	case len(vols) > 0:
		diags.AddWarning(summary, fmt.Sprintf("%s The pool holds %d volume(s) now: %s. A group destroyed in the same run deletes its own volumes first; the others stay in the directory, outside any pool, until you delete them or define a pool on the directory again.", head, len(vols), strings.Join(vols, ", ")))
	}
}

// hostOf is the backend of the provider host named host, or an error diagnostic.
func (r *poolResource) hostOf(host string, diags *diag.Diagnostics) (backend.Backend, bool) {
	if r.data == nil {
		diags.Append(diagnostics.ProviderNotConfigured("virt_pool"))
		return nil, false
	}
	b, err := r.data.Host(host)
	if err != nil {
		diags.Append(diagnostics.UnknownHost(path.Root("host"), "host", host, r.data.Reconciler.HostNames()))
		return nil, false
	}
	return b, true
}

// poolNameRule is libvirt's rule for a pool name, as far as the provider relies on it.
const poolNameRule = "1 to 64 letters, digits, hyphens, underscores and dots, starting with a letter or digit (no \"/\": the import ID `<host>/<name>` relies on it)"

// poolNameValidator and poolPathValidator borrow the rules the resource's plan relies on.
var (
	poolNameValidator = validators.Parsed("a pool name: "+poolNameRule, checkPoolName)
	poolPathValidator = validators.Parsed("an absolute path in clean form, not the root directory", checkPoolPath)
)

func checkPoolName(s string) error {
	if !engine.PoolNamePattern.MatchString(s) {
		return errors.New("not a storage pool name")
	}
	return nil
}

func checkPoolPath(s string) error {
	switch {
	case !strings.HasPrefix(s, "/"):
		return errors.New(`not absolute: a pool's directory is an absolute path on the host, such as "/var/lib/virt-quickstart"`)
	case s == "/" || filepath.Clean(s) != s:
		return fmt.Errorf(`write the directory in clean form (%q), not the root directory, with no trailing slash, "." or ".."`, filepath.Clean(s))
	}
	return nil
}
