// This file holds the plan-time refusal of a config disk whose source another domain has.

package providerdata

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

// sourceHolders judges whether a config's disk source is free for instance self: the domains of
// a host, other than self, that have file (what the source resolves to: a pool volume's path, or a
// host path with its links followed) as a disk, sorted. sources are the host's domains' disk
// paths (Backend.DiskSources); resolve, when not nil, follows a domain's disk path's links (a
// host whose files this machine can read), so that a link and its target are one file.
func sourceHolders(file, self string, sources map[string][]string, resolve func(string) string) []string {
	var out []string
	for dom, paths := range sources {
		if dom == self {
			continue
		}
		for _, p := range paths {
			if p == file || (resolve != nil && resolve(p) == file) {
				out = append(out, dom)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// sourceFile is the file a config's disk source names on host b: the pool volume's path when the
// source is a volume (info), else the path itself, its links followed where this machine can see
// the host's files.
func sourceFile(b any, info *backend.VolumeInfo, source string) string {
	if info != nil && info.Path != "" {
		return resolvedPath(b, info.Path)
	}
	return resolvedPath(b, source)
}

// resolvedPath follows a path's links on a host whose files this machine sees (the local host);
// elsewhere, or when it cannot be followed, the path is as written.
func resolvedPath(b any, p string) string {
	if !HostFactsOf(b).Local || !strings.HasPrefix(p, "/") {
		return p
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// CheckSourceFree refuses at plan a config disk source that a domain other than the config's
// instance has as a disk on host h, running or not, managed or not: QEMU locks a disk for one
// writer, and an apply would fail on that lock half-way through a rollout (or, read-only, hand
// one domain's data to another). sources are the host's domains' disks (Backend.DiskSources).
func CheckSourceFree(diags *diag.Diagnostics, b any, h string, at path.Path, what, instance, source string, info *backend.VolumeInfo, sources map[string][]string) {
	file := sourceFile(b, info, source)
	var resolve func(string) string
	if HostFactsOf(b).Local {
		resolve = func(p string) string { return resolvedPath(b, p) }
	}
	holders := sourceHolders(file, instance, sources, resolve)
	if len(holders) == 0 {
		return
	}
	diags.AddAttributeError(at, "Disk source used by another domain", sourceHeldDetail(what, source, file, h, instance, holders))
}

// sourceHeldDetail is the refusal's text: the attribute and its value, the file, who holds it,
// and what is allowed.
func sourceHeldDetail(what, source, file, host, instance string, holders []string) string {
	named := fmt.Sprintf("%s = %q", what, source)
	if file != source {
		named += fmt.Sprintf(" (the file %s)", file)
	}
	return fmt.Sprintf("%s is a disk of domain %s on %s. A config's disk must be a volume or file that no other domain uses, running or not (QEMU locks it for one writer, and one domain's data is never handed to another): name a volume or path that only %s uses, or detach it from %s first. Nothing was changed.",
		named, strings.Join(holders, ", "), OnHost(host), instance, strings.Join(holders, ", "))
}

// DiskSourcesOf reads host b's domains' disks once for a plan (Backend.DiskSources): a read that
// fails is an error on the attribute, and nothing is judged.
func DiskSourcesOf(ctx context.Context, diags *diag.Diagnostics, b backend.Domains, h string, at path.Path) (map[string][]string, bool) {
	sources, err := b.DiskSources(ctx)
	if err != nil {
		diags.AddAttributeError(at, "Cannot check which domains use the disk source", OnHost(h)+": "+err.Error())
		return nil, false
	}
	return sources, true
}
