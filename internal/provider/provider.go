// Package provider is the Terraform glue: schemas, plan modifiers, conversion between Terraform
// models and the engine's types, and diagnostics. It decides nothing and builds no XML.
package provider

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/backend/libvirt"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/groupproto"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/actions"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/config"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/domain"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/group"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/lists"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/policy"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/pool"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
	"github.com/virtfleet/terraform-provider-virt/internal/validators"
)

var (
	_ provider.Provider                  = (*virtProvider)(nil)
	_ provider.ProviderWithActions       = (*virtProvider)(nil)
	_ provider.ProviderWithListResources = (*virtProvider)(nil)
)

type virtProvider struct {
	version string
	// backend, when set, is used instead of connecting to libvirt; backends, when set, are
	// the host blocks' backends by name.
	backend  backend.Backend
	backends map[string]backend.Backend

	mu    sync.Mutex
	conns map[string]*libvirt.Backend
}

type providerModel struct {
	URI            types.String `tfsdk:"uri"`
	AllowHostPaths types.Bool   `tfsdk:"allow_host_paths"`
	HostTimeout    types.String `tfsdk:"host_timeout"`
	Hosts          []hostModel  `tfsdk:"host"`
}

type hostModel struct {
	Name types.String `tfsdk:"name"`
	URI  types.String `tfsdk:"uri"`
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
				MarkdownDescription: "libvirt connection URI, such as `qemu:///system` or `qemu+ssh://root@host/system?keyfile=/home/ops/.ssh/id_ed25519`. Defaults to `LIBVIRT_DEFAULT_URI`, else `qemu:///system`. Transports: unix, `ssh`, `libssh`, `tls` and `tcp`, spoken by the provider itself; the guide *Connecting to libvirt* lists the URI parameters each honours. Other schemes (`http://`, `xen://`, ...) are refused at validate.",
				Optional:            true,
				Validators:          []validator.String{uriValidator},
			},
			"allow_host_paths": schema.BoolAttribute{
				MarkdownDescription: "Let disk sources (`source_image`, a per-instance config's `source`) be host files outside every storage pool, and `template.console_log_dir` be a directory outside `/var/log/libvirt`. Off by default: a source must then be a volume of a storage pool, by name or by a path inside the pool's directory. Even when on, a host path is judged by the file it reaches, after symbolic links and `..` are resolved (on a host reached through its local unix socket, whose files the provider can see): anything under `/etc`, `/proc`, `/sys`, `/boot`, `/root`, `/run` or `/var/run` is refused, a disk source must be a regular file or a block device (`/dev/null`, `/dev/mem` and other character devices are refused), and, when the provider runs as root, the file must belong to root or to the user libvirt runs QEMU as (`libvirt-qemu` or `qemu`): the provider does not hand another user's file to root's libvirt. On a host reached over the network the provider cannot see its files: a path is judged by its text only (it must be clean and outside those directories), and the plan warns, naming the path and the host. On a host reached through its local socket, paths are judged again just before each call that hands them to libvirt (define, attach, start, overlay creation), and a pool volume whose file was swapped for a symbolic link is refused then; a `source_image` outside the pools is copied into the group's pool through a file descriptor, so libvirt never gets its path. Host files libvirt opens in place (a config's `source`, a share) are attached without libvirt relabelling them, so their owner and mode must let the `libvirt-qemu` user read (and write) them (see the guide *Stateful disks*).",
				Optional:            true,
			},
			"host_timeout": schema.StringAttribute{
				MarkdownDescription: fmt.Sprintf("How long a plan, a refresh or a `virt_managed_instances` read waits on one host (`default` or a `host` block) before it treats that host as not answering: its members are then `UNKNOWN` with the reason (`host h2 did not answer within 10s`), exactly as when the host is down, and the other hosts' members plan as usual. An apply reads the hosts under the same bound before it changes anything, so it does not wait on a host its plan found not answering; the changes themselves are bounded by the resources' `timeouts`. A duration such as `\"10s\"` or `\"1m\"`, %s; default `%q`. Raise it for a host that is slow to list its domains (thousands of them, or a slow link).", engine.HostTimeoutRule.Allowed(), engine.FormatDuration(engine.DefaultHostTimeout)),
				Optional:            true,
				Validators:          []validator.String{hostTimeoutValidator},
			},
		},
		Blocks: map[string]schema.Block{
			"host": schema.ListNestedBlock{
				MarkdownDescription: "More libvirt hosts, each with its own daemon, that a group's `distribution_policy` may spread members over. The provider's own `uri` is the host named `default`. A host is connected to when a group first needs it: one that does not answer leaves its members `UNKNOWN` and fails no plan of groups that do not live there. See the guide *Connecting to libvirt*.",
				NestedObject: schema.NestedBlockObject{
					Attributes: map[string]schema.Attribute{
						"name": schema.StringAttribute{
							MarkdownDescription: "The host's name in `distribution_policy` and in each member's `host`: a DNS label, not `default` (the provider's own `uri`), each name once.",
							Required:            true,
							Validators:          []validator.String{providerdata.NameValidator, stringvalidator.NoneOf(engine.DefaultHost)},
						},
						"uri": schema.StringAttribute{
							MarkdownDescription: "The host's libvirt connection URI, with any transport `uri` takes, such as `qemu+ssh://root@h2/system?keyfile=/root/.ssh/id_ed25519`.",
							Required:            true,
							Validators:          []validator.String{uriValidator},
						},
					},
				},
			},
		},
	}
}

// hostTimeoutValidator refuses, at validate, a host_timeout the rule the provider reads it with
// refuses.
var hostTimeoutValidator = validators.Parsed(engine.HostTimeoutRule.Allowed(), func(v string) error {
	_, err := engine.HostTimeoutRule.Parse(v)
	return err
})

// hostTimeout is the configured host_timeout, engine.DefaultHostTimeout when left out. A value
// not known yet is the default: a plan waits on a host as long as it would without one.
func hostTimeout(configured types.String, diags *diag.Diagnostics) time.Duration {
	if configured.IsNull() || configured.IsUnknown() {
		return engine.DefaultHostTimeout
	}
	d, err := engine.HostTimeoutRule.Parse(configured.ValueString())
	if err != nil {
		diags.AddAttributeError(path.Root("host_timeout"), "Invalid value", fmt.Sprintf("host_timeout = %q: %v. Allowed: %s.", configured.ValueString(), err, engine.HostTimeoutRule.Allowed()))
	}
	return d
}

// uriValidator refuses, at validate, a URI whose scheme the provider does not speak, with the
// backend's own rule (the one its connections apply). The value is shown with its password
// masked.
var uriValidator validator.String = uriCheck{}

type uriCheck struct{}

func (uriCheck) Description(context.Context) string {
	return "must be a libvirt URI with the scheme qemu, qemu+unix, qemu+tcp, qemu+tls, qemu+ssh or qemu+libssh"
}

func (v uriCheck) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (uriCheck) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	uri := req.ConfigValue.ValueString()
	if err := libvirt.CheckURI(uri); err != nil {
		shown := "(a URI that cannot be parsed)"
		if u, perr := url.Parse(uri); perr == nil {
			shown = u.Redacted()
		}
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid libvirt URI", fmt.Sprintf("%s = %q: %v.", req.Path, shown, err))
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
	if cfg.URI.IsUnknown() {
		// Planning against another host than the one meant (the environment's, or the local
		// default) would show a plan that is not what the apply does: wait, or refuse.
		if req.ClientCapabilities.DeferralAllowed {
			resp.Deferred = &provider.Deferred{Reason: provider.DeferredReasonProviderConfigUnknown}
			return
		}
		resp.Diagnostics.AddAttributeError(pathURI, "libvirt URI not known yet",
			"The provider's uri depends on a value that is known only after apply, and the provider does not plan against another host in its place. "+
				"Apply what it depends on first (terraform apply -target=<that resource>), then plan again.")
		return
	}
	// The provider's connections are shared by its configurations (terraform configures it
	// more than once in a run).
	p.mu.Lock()
	defer p.mu.Unlock()
	bound := hostTimeout(cfg.HostTimeout, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	if b == nil {
		uri := connectionURI(cfg.URI)
		conn, ok := p.conns[uri]
		if !ok {
			// The first connection is a reading of the default host like any other: a daemon
			// that accepts it and never answers fails the configuration within host_timeout.
			cctx, cancel := context.WithTimeout(ctx, bound)
			var err error
			conn, err = libvirt.ConnectContext(cctx, uri)
			cancel()
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
	rec.Env.Run = providerdata.NewRunID()
	rec.Holder = providerdata.HolderName(rec.Env.Run)
	// A destroy removes the group's policy and configs before the group, each applying the
	// group: none of those plans may make anything (engine's Env.DestroyRun).
	commands := providerdata.NewCommandDetector()
	rec.Env.DestroyRun = commands.Command(ctx) == groupproto.CommandDestroy
	rec.HolderHost, _ = os.Hostname()
	rec.HolderPID = os.Getpid()
	rec.HolderGone = providerdata.HolderGone
	hosts := p.hosts(cfg.Hosts, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	rec.Hosts = hosts
	rec.URIs = map[string]string{engine.DefaultHost: connectionURI(cfg.URI)}
	for _, h := range cfg.Hosts {
		if !h.Name.IsUnknown() && !h.URI.IsUnknown() {
			rec.URIs[h.Name.ValueString()] = h.URI.ValueString()
		}
	}
	rec.ReadsFiles = func(h string) bool {
		b := rec.Backend
		if h != engine.DefaultHost {
			b = rec.Hosts[h]
		}
		lb, ok := b.(*libvirt.Backend)
		return ok && libvirt.IsLocal(lb.URI())
	}
	data := &providerdata.ProviderData{Reconciler: rec, AllowHostPaths: cfg.AllowHostPaths.ValueBool(), HostTimeout: bound, Commands: commands}
	resp.ResourceData = data
	resp.DataSourceData = data
	resp.ActionData = data
	resp.ListResourceData = data
}

// hosts makes a backend for each host block, connected on first use, reusing the provider's
// earlier backends for the same URI; the caller holds p.mu.
func (p *virtProvider) hosts(blocks []hostModel, diags *diag.Diagnostics) map[string]backend.Backend {
	if len(blocks) == 0 {
		return nil
	}
	out := map[string]backend.Backend{}
	for i, h := range blocks {
		at := path.Root("host").AtListIndex(i)
		if h.Name.IsUnknown() || h.URI.IsUnknown() {
			unknown := at.AtName("name")
			if !h.Name.IsUnknown() {
				unknown = at.AtName("uri")
			}
			diags.AddAttributeError(unknown, "Host not known yet",
				"A host block's name or uri depends on a value known only after apply, and the provider does not plan against another host in its place. "+
					"Apply what it depends on first (terraform apply -target=<that resource>), then plan again.")
			continue
		}
		name := h.Name.ValueString()
		if _, dup := out[name]; dup {
			diags.AddAttributeError(at.AtName("name"), "Host named twice", fmt.Sprintf("host %q is given by more than one host block; each name may be used once.", name))
			continue
		}
		if p.backends != nil {
			out[name] = p.backends[name]
			continue
		}
		uri := h.URI.ValueString()
		conn, ok := p.conns[uri]
		if !ok {
			var err error
			if conn, err = libvirt.Lazy(uri); err != nil {
				diags.AddAttributeError(at.AtName("uri"), "Invalid libvirt URI", fmt.Sprintf("host %q: %s", name, err))
				continue
			}
			if p.conns == nil {
				p.conns = map[string]*libvirt.Backend{}
			}
			p.conns[uri] = conn
		}
		out[name] = conn
	}
	return out
}

func (p *virtProvider) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{group.NewStatefulGroupResource, policy.NewStatefulPolicyResource, config.NewPerInstanceConfigResource, pool.NewPoolResource, domain.NewDomainResource}
}

func (p *virtProvider) Actions(context.Context) []func() action.Action {
	return []func() action.Action{actions.NewInstanceRestartAction, actions.NewInstanceRecreateAction, actions.NewInstancePreserveAction, actions.NewInstanceReleaseAction, actions.NewInstanceRestoreAction}
}

func (p *virtProvider) ListResources(context.Context) []func() list.ListResource {
	return []func() list.ListResource{lists.NewStatefulGroupList, lists.NewStatefulPolicyList, lists.NewPerInstanceConfigList, lists.NewDomainList}
}

func (p *virtProvider) DataSources(context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{group.NewManagedInstancesDataSource}
}

var pathURI = path.Root("uri")
