// Package provider is the Terraform glue: schemas, plan modifiers, conversion between Terraform
// models and the engine's types, and diagnostics. It decides nothing and builds no XML.
package provider

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"strings"
	"sync"
	"syscall"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/backend/libvirt"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

var _ provider.Provider = (*virtProvider)(nil)

// ProviderData is what Configure hands to every resource and data source.
type ProviderData struct {
	Backend    backend.Backend
	Reconciler *reconcile.Reconciler
	// AllowHostPaths lets disk sources be host files outside every storage pool.
	AllowHostPaths bool
	locks          sync.Map // group name -> *sync.Mutex
}

// lockGroup serialises the changes this provider instance makes to one group.
func (d *ProviderData) lockGroup(name string) func() {
	m, _ := d.locks.LoadOrStore(name, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

type virtProvider struct {
	version string
	// backend, when set, is used instead of connecting to libvirt.
	backend backend.Backend

	mu    sync.Mutex
	conns map[string]*libvirt.Backend
}

type providerModel struct {
	URI            types.String `tfsdk:"uri"`
	AllowHostPaths types.Bool   `tfsdk:"allow_host_paths"`
}

// New returns the provider factory used by main.
func New(version string) func() provider.Provider {
	return func() provider.Provider { return &virtProvider{version: version} }
}

// NewTestProvider returns a provider that uses b instead of connecting to libvirt.
func NewTestProvider(b backend.Backend) provider.Provider {
	return &virtProvider{version: "test", backend: b}
}

func (p *virtProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "virt"
	resp.Version = p.version
}

func (p *virtProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Runs stateful groups of virtual machines on libvirt: N domains from one template with stable names, live updates of what can change live, and rolling restarts or replacements of the rest.",
		Attributes: map[string]schema.Attribute{
			"uri": schema.StringAttribute{
				MarkdownDescription: "libvirt connection URI, such as `qemu:///system` or `qemu+ssh://root@host/system`. Defaults to `LIBVIRT_DEFAULT_URI`, else `qemu:///system`.",
				Optional:            true,
			},
			"allow_host_paths": schema.BoolAttribute{
				MarkdownDescription: "Let disk sources (`source_image`, a per-instance config's `source`) be host files outside every storage pool. Off by default: a source must then be a volume of a storage pool, by name or by a path inside the pool's directory. Even when on, paths under `/etc`, `/proc`, `/sys`, `/boot`, `/root`, `/run` and `/dev` (other than block devices) are refused. Host files are attached without libvirt relabelling them (see the README's security section).",
				Optional:            true,
			},
		},
	}
}

// connectionURI applies the documented precedence: configuration, environment, default.
func connectionURI(configured types.String) string {
	if !configured.IsNull() && !configured.IsUnknown() && configured.ValueString() != "" {
		return configured.ValueString()
	}
	if env := os.Getenv("LIBVIRT_DEFAULT_URI"); env != "" {
		return env
	}
	return libvirt.DefaultURI
}

func (p *virtProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var cfg providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	b := p.backend
	if b == nil {
		uri := connectionURI(cfg.URI)
		p.mu.Lock()
		defer p.mu.Unlock()
		conn, ok := p.conns[uri]
		if !ok {
			var err error
			conn, err = libvirt.Connect(uri)
			if err != nil {
				resp.Diagnostics.AddAttributeError(pathURI, "Cannot connect to libvirt", err.Error())
				return
			}
			if p.conns == nil {
				p.conns = map[string]*libvirt.Backend{}
			}
			p.conns[uri] = conn
		}
		b = conn
	}
	rec := reconcile.New(b)
	// Each terraform command configures its provider once: the run is that command, so that a
	// `terraform destroy` removing policy, configs and group keeps what they preserved.
	rec.Env.Run = newRunID()
	rec.Holder = holderName(rec.Env.Run)
	rec.HolderHost, _ = os.Hostname()
	rec.HolderPID = os.Getpid()
	rec.HolderGone = holderGone
	data := &ProviderData{Backend: b, Reconciler: rec, AllowHostPaths: cfg.AllowHostPaths.ValueBool()}
	resp.ResourceData = data
	resp.DataSourceData = data
}

func (p *virtProvider) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{NewStatefulGroupResource, NewStatefulPolicyResource, NewPerInstanceConfigResource}
}

func (p *virtProvider) DataSources(context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{NewManagedInstancesDataSource}
}

// configureData hands the provider's data to a resource or data source; nil before the
// provider is configured.
func configureData(providerData any, diags *diag.Diagnostics) *ProviderData {
	if providerData == nil {
		return nil
	}
	data, ok := providerData.(*ProviderData)
	if !ok {
		diags.AddError("Unexpected provider data", fmt.Sprintf("expected *ProviderData, got %T", providerData))
	}
	return data
}

func nullString() types.String { return types.StringNull() }

// holderName names this run in the leases it takes, for the person who finds one in their way.
func holderName(run string) string {
	who := "terraform"
	if u, err := user.Current(); err == nil {
		who = u.Username
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("%s@%s, provider pid %d, run %s", who, host, os.Getpid(), run)
}

// holderGone tells that a lease's holder ran on this machine and its process is gone: an apply
// killed with SIGKILL, whose lease the next apply may take at once. A process that exited but was
// not yet reaped (a zombie) is gone; so is one whose number now belongs to another program. A
// process of that number that is a provider still counts as alive, and its lease then ends at
// its expiry.
func holderGone(l reconcile.Lease) bool {
	host, err := os.Hostname()
	if err != nil || l.PID <= 0 || l.Host != host {
		return false
	}
	if errors.Is(syscall.Kill(l.PID, 0), syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", l.PID))
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	// "pid (comm) state ...": comm may hold spaces and parentheses, the state follows the last ')'.
	open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if open < 0 || end < open || end+2 >= len(stat) {
		return false
	}
	if state := stat[end+2]; state == 'Z' || state == 'X' {
		return true
	}
	self, _ := os.ReadFile("/proc/self/comm")
	comm := string(stat[open+1 : end])
	return comm != strings.TrimSpace(string(self)) && !strings.HasPrefix(comm, "terraform-provi")
}

// newRunID names one run of the provider.
func newRunID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
