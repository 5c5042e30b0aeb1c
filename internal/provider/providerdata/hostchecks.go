package providerdata

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/diagnostics"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// Plan-time checks against the host: what a plan can know will fail is refused before apply
// starts, with the attribute, the value, what is allowed and how to fix it.

// SourceProblem checks a disk source (a volume name in pool, or an absolute path) on the host.
// It returns the volume when the source is one, and the judgement of the path (its Problem is
// "" when none). A path no pool holds is refused unless allowHostPaths; then hostPathProblem
// judges the file it reaches (by its text only on a host whose files cannot be seen, which
// Unseen says). A volume's own file is judged too where it can be seen: a link in a pool's
// directory must not lead to /etc.
func SourceProblem(ctx context.Context, b backend.Volumes, pool, source string, allowHostPaths bool) (*backend.VolumeInfo, PathJudgement, error) {
	facts := HostFactsOf(b)
	info, err := b.LookupVolume(ctx, pool, source)
	if errors.Is(err, backend.ErrNotFound) && facts.Local && strings.HasPrefix(source, "/") {
		// A link to a pool's volume is that volume (libvirt resolves links too, but refreshes
		// only the pool whose directory the path names).
		if resolved, rerr := filepath.EvalSymlinks(source); rerr == nil && resolved != source {
			if rinfo, lerr := b.LookupVolume(ctx, pool, resolved); lerr == nil {
				info, err = rinfo, nil
			}
		}
	}
	switch {
	case errors.Is(err, backend.ErrNotFound):
		if !strings.HasPrefix(source, "/") {
			return nil, PathJudgement{Problem: fmt.Sprintf("there is no volume %q in storage pool %q (`virsh vol-list %s` lists them). Create the volume first, or give the absolute path of a volume of another pool", source, pool, pool)}, nil
		}
		if !allowHostPaths {
			return nil, PathJudgement{Problem: notInPool(source, facts)}, nil
		}
		// A path that does not exist is said to first (hostPathProblem) on a host whose files
		// can be seen; elsewhere libvirt is the first to find out, at apply.
		return nil, HostPathProblem(source, diskPath, false, facts), nil
	case err != nil:
		return nil, PathJudgement{}, err
	}
	if facts.Local && strings.HasPrefix(info.Path, "/") {
		// libvirt vouches for its volumes: only a file this machine shows to be a system file or
		// a character device is refused (one the provider may not see is left to libvirt).
		if j := HostPathProblem(info.Path, diskPath, true, facts); j.Problem != "" && j.Resolved != "" && info.Kind != backend.VolumeDir {
			return &info, PathJudgement{Problem: fmt.Sprintf("volume %q of pool %q: %s", info.Name, info.Pool, j.Problem)}, nil
		}
	}
	switch info.Kind {
	case backend.VolumeFile, backend.VolumeBlock:
		return &info, PathJudgement{}, nil
	case backend.VolumeDir:
		return &info, PathJudgement{Problem: fmt.Sprintf("%q is a directory, not a disk image", source)}, nil
	default:
		return &info, PathJudgement{Problem: fmt.Sprintf("%q is a %s volume; a disk source must be a file or a block device", source, info.Kind)}, nil
	}
}

// notInPool is what is wrong with an absolute path no pool holds, without allow_host_paths:
// first whether it exists at all (a typo is the likelier mistake), then how to make it usable.
func notInPool(source string, facts HostFacts) string {
	const ways = "Disk sources are storage volumes: put the file in a pool's directory (then `virsh pool-refresh <pool>`), or set allow_host_paths = true in the provider block to attach host files outside pools"
	if facts.Local {
		if _, err := os.Stat(source); errors.Is(err, fs.ErrNotExist) {
			return fmt.Sprintf("%q does not exist on %s (or a link on its way leads nowhere): check the path. Once it exists: %s", source, facts.Name, ways)
		}
		return fmt.Sprintf("%q is not a volume of any storage pool on this host. %s", source, ways)
	}
	// The host's files cannot be seen from here: both causes are possible.
	return fmt.Sprintf("no storage pool on %s has a volume at %q: it does not exist there, or it is a file outside the pools. Check the path. %s", facts.Name, source, ways)
}

// CheckSource adds SourceProblem's verdict, on host (a host name), as an error on the attribute
// at p, or a warning when the host's files could not be seen.
func CheckSource(ctx context.Context, diags *diag.Diagnostics, b backend.Volumes, host string, p path.Path, what, pool, source string, allowHostPaths bool) *backend.VolumeInfo {
	info, j, err := SourceProblem(ctx, b, pool, source, allowHostPaths)
	if err != nil {
		diags.AddAttributeError(p, "Cannot check "+what, OnHost(host)+": "+err.Error())
		return nil
	}
	if j.Problem != "" {
		diags.AddAttributeError(p, "Invalid "+what, what+" on "+OnHost(host)+": "+j.Problem+".")
	} else if j.Unseen {
		summary, detail := UnseenWarning(what, source, HostFactsOf(b).Name)
		diags.AddAttributeWarning(p, summary, detail)
	}
	return info
}

// OnHost names a host in a diagnostic.
func OnHost(host string) string {
	if host == "" || host == engine.DefaultHost {
		return `host "default" (the provider's uri)`
	}
	return fmt.Sprintf("host %q", host)
}

// CheckPool refuses a storage pool that does not exist or does not run on host. A pool that a
// virt_pool plan in this process creates there is accepted unread (pool_plans.go); it reports
// false then, as nothing can be looked up in it before the apply makes it.
func (d *ProviderData) CheckPool(ctx context.Context, diags *diag.Diagnostics, host string, p path.Path, pool string) bool {
	if d.PoolPlanned(host, pool) {
		return false
	}
	b, err := d.Host(host)
	if err != nil {
		diags.AddAttributeError(p, "Cannot check the storage pool", err.Error())
		return false
	}
	hctx, cancel := reconcile.HostContext(ctx)
	defer cancel()
	info, err := b.LookupPool(hctx, pool)
	err = reconcile.HostErr(ctx, hctx, host, err)
	switch {
	case errors.Is(err, backend.ErrNotFound):
		diags.AddAttributeError(p, "Storage pool not found", fmt.Sprintf("pool %q does not exist on this libvirt host (`virsh pool-list --all` lists them). Create it, or name an existing pool.", pool))
		return false
	case err != nil:
		diags.AddAttributeError(p, "Cannot check the storage pool", err.Error())
		return false
	case !info.Active:
		diags.AddAttributeError(p, "Storage pool not running", fmt.Sprintf("pool %q exists but is not active. Start it with `virsh pool-start %s` (and `virsh pool-autostart %s`).", pool, pool, pool))
		return false
	}
	return true
}

// CheckNetwork refuses a libvirt network that does not exist or does not run on host.
func CheckNetwork(ctx context.Context, diags *diag.Diagnostics, b backend.Networks, host string, p path.Path, network string) {
	active, err := b.LookupNetwork(ctx, network)
	switch {
	case errors.Is(err, backend.ErrNotFound):
		diags.AddAttributeError(p, "Network not found", fmt.Sprintf("network %q does not exist on %s, where members of the group are or will be placed (`virsh net-list --all` there lists them). Name a network every host of the group has, use type = \"user\", or leave the host out of distribution_policy.", network, OnHost(host)))
	case err != nil:
		diags.Append(diagnostics.NetworkUnchecked(p, network, OnHost(host), err))
	case !active:
		diags.AddAttributeError(p, "Network not running", fmt.Sprintf("network %q exists on %s but is not active. Start it there with `virsh net-start %s`.", network, OnHost(host), network))
	}
}

// PoolIsDir reports whether the group's pool on host is a directory pool, as an EFI member's
// NVRAM file needs. A pool a virt_pool plan makes is one; a pool that cannot be read is left to
// the pool's own checks.
func (d *ProviderData) PoolIsDir(ctx context.Context, b backend.Pools, host, pool string) bool {
	if d.PoolPlanned(host, pool) {
		return true
	}
	info, err := b.LookupPool(ctx, pool)
	return err != nil || info.Path != ""
}

// Answers reports whether a host answers a lookup of the group's pool (its answer is not the
// point: a host that does not answer at all is skipped by the checks).
func Answers(ctx context.Context, b backend.Pools, pool types.String) bool {
	_, err := b.LookupPool(ctx, pool.ValueString())
	return err == nil || errors.Is(err, backend.ErrNotFound)
}
