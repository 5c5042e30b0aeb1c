package pool

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// newPoolResource is virt_pool on a fake host of its own.
func newPoolResource() (*poolResource, *fake.Backend) {
	b := fake.New()
	return &poolResource{data: &providerdata.ProviderData{Reconciler: reconcile.New(b)}}, b
}

func poolValue(t *testing.T, m *poolModel) tftypes.Value {
	t.Helper()
	s := tfsdk.State{Schema: poolSchema(), Raw: tftypes.NewValue(poolSchema().Type().TerraformType(context.Background()), nil)}
	if m != nil {
		if d := s.Set(context.Background(), m); d.HasError() {
			t.Fatalf("set: %v", d)
		}
	}
	return s.Raw
}

func poolPlanOf(t *testing.T, m *poolModel) tfsdk.Plan {
	return tfsdk.Plan{Schema: poolSchema(), Raw: poolValue(t, m)}
}

func poolStateOf(t *testing.T, m *poolModel) tfsdk.State {
	return tfsdk.State{Schema: poolSchema(), Raw: poolValue(t, m)}
}

func newPoolModel(name, dir string) *poolModel {
	return &poolModel{ID: types.StringUnknown(), Name: types.StringValue(name), Path: types.StringValue(dir), Host: types.StringValue("default")}
}

// planPool runs ModifyPlan for a create (prior nil) or a change of prior to m (m nil: destroy).
func planPool(t *testing.T, r *poolResource, prior, m *poolModel) resource.ModifyPlanResponse {
	t.Helper()
	req := resource.ModifyPlanRequest{Plan: poolPlanOf(t, m), State: poolStateOf(t, prior)}
	resp := resource.ModifyPlanResponse{Plan: req.Plan}
	r.ModifyPlan(context.Background(), req, &resp)
	return resp
}

func createPool(t *testing.T, r *poolResource, m *poolModel) (poolModel, diag.Diagnostics) {
	t.Helper()
	resp := resource.CreateResponse{State: poolStateOf(t, nil)}
	r.Create(context.Background(), resource.CreateRequest{Plan: poolPlanOf(t, m)}, &resp)
	var got poolModel
	if !resp.Diagnostics.HasError() {
		resp.State.Get(context.Background(), &got)
	}
	return got, resp.Diagnostics
}

// summaries are the diagnostics as "severity summary @attribute" lines, for a diff.
func summaries(ds diag.Diagnostics) []string {
	var out []string
	for _, d := range ds {
		line := d.Severity().String() + " " + d.Summary()
		if a, ok := d.(diag.DiagnosticWithPath); ok {
			line += " @" + a.Path().String()
		}
		out = append(out, line)
	}
	return out
}

func TestPoolConflict(t *testing.T) {
	t.Parallel()
	pools := []backend.Pool{
		{Name: "virt", UUID: "u-virt", Target: "/var/lib/libvirt/virt-pool"},
		{Name: "images", UUID: "u-images", Target: "/srv/images/"},
		{Name: "rbd", UUID: "u-rbd"}, // no target: never shares a directory
	}
	links := map[string]string{"/data/pools/virt": "/var/lib/libvirt/virt-pool"}
	resolve := func(p string) string {
		p = filepath.Clean(p)
		if to, ok := links[p]; ok {
			return to
		}
		return p
	}
	cases := map[string]struct {
		name, dir     string
		replaced      map[string]bool
		taken, shared string
	}{
		"free":                         {name: "new", dir: "/var/lib/new"},
		"name taken":                   {name: "virt", dir: "/var/lib/new", taken: "virt"},
		"name taken wins over path":    {name: "virt", dir: "/srv/images", taken: "virt"},
		"same directory":               {name: "new", dir: "/var/lib/libvirt/virt-pool", shared: "virt"},
		"target with a trailing slash": {name: "new", dir: "/srv/images", shared: "images"},
		"a link to another's target":   {name: "new", dir: "/data/pools/virt", shared: "virt"},
		"inside another's target is not the same directory": {name: "new", dir: "/srv/images/sub"},
		"the pool a replacement removes":                    {name: "virt", dir: "/var/lib/libvirt/virt-pool", replaced: map[string]bool{"u-virt": true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			taken, shared := providerdata.PoolConflict(pools, tc.replaced, tc.name, tc.dir, resolve)
			got := [2]string{}
			if taken != nil {
				got[0] = taken.Name
			}
			if shared != nil {
				got[1] = shared.Name
			}
			if diff := cmp.Diff([2]string{tc.taken, tc.shared}, got); diff != "" {
				t.Errorf("taken, shared (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResolveLocalPath(t *testing.T) {
	t.Parallel()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct{ in, want string }{
		"existing directory":            {in: dir + "/real", want: dir + "/real"},
		"a link":                        {in: dir + "/link", want: dir + "/real"},
		"not there yet, under a link":   {in: dir + "/link/a/b", want: dir + "/real/a/b"},
		"not there yet, no link":        {in: dir + "/new/a", want: dir + "/new/a"},
		"dot-dot is resolved as a path": {in: dir + "/link/../real", want: dir + "/real"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := providerdata.ResolveLocalPath(tc.in); got != tc.want {
				t.Errorf("resolveLocalPath(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestPoolModifyPlan_create(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		name, dir string
		want      []string
	}{
		"free":                 {name: "new", dir: "/var/lib/new"},
		"name of another":      {name: "virt", dir: "/var/lib/new", want: []string{"Error Storage pool already exists @name"}},
		"directory of another": {name: "new", dir: "/var/lib/libvirt/virt-pool", want: []string{"Error Directory belongs to another storage pool @path"}},
		"a system directory":   {name: "new", dir: "/etc/pools", want: []string{"Error Invalid storage pool path @path"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r, b := newPoolResource()
			b.AddPool("virt", "/var/lib/libvirt/virt-pool")
			resp := planPool(t, r, nil, newPoolModel(tc.name, tc.dir))
			if diff := cmp.Diff(tc.want, summaries(resp.Diagnostics)); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s", diff)
			}
			if got, want := r.data.PoolPlanned("default", tc.name), len(tc.want) == 0; got != want {
				t.Errorf("registered for the group's check: %v, want %v", got, want)
			}
		})
	}
}

func TestPoolModifyPlan_existingNameSaysImport(t *testing.T) {
	t.Parallel()
	r, b := newPoolResource()
	b.AddPool("tfacc-taken", "/var/lib/tfacc-taken")
	resp := planPool(t, r, nil, newPoolModel("tfacc-taken", "/var/lib/elsewhere"))
	if len(resp.Diagnostics) != 1 || !strings.Contains(resp.Diagnostics[0].Detail(), "terraform import virt_pool.<name> tfacc-taken") {
		t.Fatalf("want one error that says how to import, got %v", resp.Diagnostics)
	}
}

func TestPoolModifyPlan_unknownHost(t *testing.T) {
	t.Parallel()
	r, _ := newPoolResource()
	m := newPoolModel("new", "/var/lib/new")
	m.Host = types.StringValue("h9")
	resp := planPool(t, r, nil, m)
	if diff := cmp.Diff([]string{"Error Unknown host @host"}, summaries(resp.Diagnostics)); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
}

// A replacement is planned twice: as a change (with the prior state: the pool it replaces is
// noted) and as a create with no prior state, which must not be refused for the name or the
// directory of the pool it replaces.
func TestPoolModifyPlan_replacementKeepsName(t *testing.T) {
	t.Parallel()
	r, b := newPoolResource()
	old := b.AddPool("tfacc-p", "/var/lib/tfacc-p")
	prior := &poolModel{ID: types.StringValue(old.UUID), Name: types.StringValue("tfacc-p"), Path: types.StringValue("/var/lib/tfacc-p"), Host: types.StringValue("default")}
	if _, err := b.EnsureVolume(context.Background(), backend.VolumeSpec{Pool: "tfacc-p", Name: "db-1-boot.qcow2", SizeMiB: 1}); err != nil {
		t.Fatal(err)
	}
	change := planPool(t, r, prior, newPoolModel("tfacc-p", "/var/lib/tfacc-q")).Diagnostics
	if len(change) != 1 || change[0].Severity() != diag.SeverityWarning || !strings.Contains(change[0].Detail(), "db-1-boot.qcow2") {
		t.Fatalf("change: want one warning naming the volume the old directory keeps, got %v", change)
	}
	if d := planPool(t, r, nil, newPoolModel("tfacc-p", "/var/lib/tfacc-q")).Diagnostics; d.HasError() {
		t.Fatalf("create half of the replacement: %v", d)
	}
	// Another process, which has not planned the replacement, refuses the name.
	other, ob := newPoolResource()
	ob.AddPool("tfacc-p", "/var/lib/tfacc-p")
	if d := planPool(t, other, nil, newPoolModel("tfacc-p", "/var/lib/tfacc-q")).Diagnostics; !d.HasError() {
		t.Fatal("a create without the replacement's note was not refused")
	}
}

func TestPoolLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, b := newPoolResource()
	got, d := createPool(t, r, newPoolModel("tfacc-p", "/var/lib/tfacc-p"))
	if d.HasError() {
		t.Fatalf("create: %v", d)
	}
	p := b.DefinedPool("tfacc-p")
	if p == nil || !p.Active || !p.Autostart || p.Path != "/var/lib/tfacc-p" || got.ID.ValueString() != p.UUID {
		t.Fatalf("created pool %+v, state id %s", p, got.ID)
	}
	// A second create of the same name (another configuration) is refused at apply too.
	if _, d := createPool(t, r, newPoolModel("tfacc-p", "/var/lib/other")); !d.HasError() {
		t.Fatal("a second create of the name was not refused")
	}

	// Import by name gives the same state.
	imp := resource.ImportStateResponse{State: poolStateOf(t, nil)}
	r.ImportState(ctx, resource.ImportStateRequest{ID: "tfacc-p"}, &imp)
	var imported poolModel
	imp.State.Get(ctx, &imported)
	if diff := cmp.Diff(got, imported); diff != "" || imp.Diagnostics.HasError() {
		t.Errorf("import (-created +imported):\n%s\n%v", diff, imp.Diagnostics)
	}
	missing := resource.ImportStateResponse{State: poolStateOf(t, nil)}
	r.ImportState(ctx, resource.ImportStateRequest{ID: "tfacc-none"}, &missing)
	if diff := cmp.Diff([]string{"Error Storage pool not found"}, summaries(missing.Diagnostics)); diff != "" {
		t.Errorf("import of a missing pool (-want +got):\n%s", diff)
	}

	// The destroy plan names the volumes the directory keeps.
	if _, err := b.EnsureVolume(ctx, backend.VolumeSpec{Pool: "tfacc-p", Name: "db-1-data.qcow2", SizeMiB: 1}); err != nil {
		t.Fatal(err)
	}
	warn := planPool(t, r, &got, nil).Diagnostics
	if len(warn) != 1 || warn[0].Severity() != diag.SeverityWarning || !strings.Contains(warn[0].Detail(), "db-1-data.qcow2") {
		t.Fatalf("destroy plan: want one warning naming db-1-data.qcow2, got %v", warn)
	}

	// Delete takes only the pool whose UUID is in the state: after it went, a pool someone
	// made under the same name is left alone.
	del := resource.DeleteResponse{State: poolStateOf(t, &got)}
	r.Delete(ctx, resource.DeleteRequest{State: poolStateOf(t, &got)}, &del)
	if del.Diagnostics.HasError() || b.DefinedPool("tfacc-p") != nil {
		t.Fatalf("delete: %v, pool %+v", del.Diagnostics, b.DefinedPool("tfacc-p"))
	}
	if _, ok := b.Volumes["tfacc-p/db-1-data.qcow2"]; !ok {
		t.Error("delete removed the pool's volume; it must leave every file")
	}
	b.AddPool("tfacc-p", "/var/lib/tfacc-p")
	r.Delete(ctx, resource.DeleteRequest{State: poolStateOf(t, &got)}, &del)
	if b.DefinedPool("tfacc-p") == nil {
		t.Error("a second delete took a pool of the same name that the state does not own")
	}

	// Read of a pool that is gone removes it from the state.
	read := resource.ReadResponse{State: poolStateOf(t, &got)}
	r.Read(ctx, resource.ReadRequest{State: poolStateOf(t, &got)}, &read)
	if read.Diagnostics.HasError() || !read.State.Raw.IsNull() {
		t.Errorf("read of a gone pool: %v, state null %v", read.Diagnostics, read.State.Raw.IsNull())
	}
}

// The group's plan-time pool check accepts a pool a virt_pool plan in this process creates, on
// that host, without reading the host for it; any other missing pool is still refused.
func TestCheckPool_plannedPool(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		planned, host string
		want          []string
		lookups       int
	}{
		"planned here":            {planned: "default", host: "default", lookups: 0},
		"not planned":             {host: "default", want: []string{"Error Storage pool not found @pool"}, lookups: 1},
		"planned on another host": {planned: "h2", host: "default", want: []string{"Error Storage pool not found @pool"}, lookups: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r, b := newPoolResource()
			b.MissingPools = map[string]bool{"tfacc-new": true}
			if tc.planned != "" {
				r.data.PlanPoolCreate(tc.planned, "tfacc-new", "/var/lib/tfacc-new")
			}
			var d diag.Diagnostics
			r.data.CheckPool(context.Background(), &d, tc.host, path.Root("pool"), "tfacc-new")
			if diff := cmp.Diff(tc.want, summaries(d)); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s", diff)
			}
			if got := b.Calls["lookup-pool"]; got != tc.lookups {
				t.Errorf("pool lookups: %d, want %d", got, tc.lookups)
			}
		})
	}
}
