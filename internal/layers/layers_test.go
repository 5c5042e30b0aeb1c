package layers

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// module is the module's path; the patterns below name its packages relative to it.
const module = "github.com/virtfleet/terraform-provider-virt"

// A layer is the rule for a set of the module's packages. Patterns are Go's: "x/..." is x and
// every package under it. A pattern that starts with "internal/" or "cmd/", or is ".", names a
// package of this module; any other names a package by its import path (the standard library's,
// or another module's).
type layer struct {
	// pkg is the packages the rule is for. A package follows the rule whose pkg is the longest
	// that matches it, so internal/backend/libvirt follows its own rule, not internal/backend's.
	pkg string
	// only, when set, is the only packages outside the standard library they may depend on.
	only []string
	// never is the packages they must not depend on, directly or through another package.
	never []string
	// notDirect is the packages they must not import themselves, only through another package.
	notDirect []string
	// why is the rule in words, for the failure.
	why string
}

var (
	framework = "github.com/hashicorp/terraform-plugin-framework/..."
	libvirt   = []string{"github.com/digitalocean/go-libvirt/...", "libvirt.org/..."}
	// above are the layers that run or render the engine's plans: nothing below them imports them.
	above = []string{"internal/provider/...", "internal/reconcile/..."}
	// tools are the libraries the layers use; they are no layer themselves.
	tools = append(slices.Clone(above), "internal/backend/...", "internal/store/...", framework)
	// schema is what the schema's helpers (diagnostics, validators, plan modifiers) never need:
	// they know Terraform and the engine's rules, not the hosts.
	schema = append(slices.Clone(above), "internal/backend/...", "internal/store/...", libvirt[0], libvirt[1])
)

// layers are the nevers of DESIGN.md's Architecture: the engine decides, the backend does,
// reconcile executes and decides nothing, the provider translates, and no import runs back up.
var layers = []layer{
	{pkg: ".", never: []string{"internal/backend/fake/..."},
		why: "the provider's binary serves what internal/provider builds; the fake backend is for tests"},
	{pkg: "cmd/...", why: "development programs (chaos, bench) sit on top and may use any layer"},
	{pkg: "internal/layers", why: "this package has no code"},
	{pkg: "internal/provider/...", never: []string{"internal/backend/fake/..."}, notDirect: libvirt,
		why: "the provider translates between Terraform and the engine: it never builds XML or calls libvirt itself (it builds the backend that does), and the fake backend is for tests"},
	{pkg: "internal/reconcile/...", never: append([]string{"internal/provider/...", "internal/backend/libvirt/...", "internal/backend/fake/...", "internal/diagnostics/...", framework}, libvirt...),
		why: "reconcile executes the engine's plans through the backend's interfaces: Terraform is the provider's, libvirt the backend's"},
	{pkg: "internal/backend/...", never: append(append(slices.Clone(above), "internal/backend/libvirt/...", "internal/backend/fake/...", "internal/diagnostics/...", framework), libvirt...),
		why: "the backend's interfaces name no implementation and nothing of the layers that use them"},
	{pkg: "internal/backend/libvirt/...", never: append(slices.Clone(above), "internal/backend/fake/...", "internal/diagnostics/...", framework),
		why: "the backend does what it is told: deciding is the engine's, running plans reconcile's, Terraform the provider's"},
	{pkg: "internal/backend/fake/...", never: append(append(slices.Clone(above), "internal/backend/libvirt/...", framework), libvirt...),
		why: "the fake stands in for a host behind the backend's interfaces, without libvirt"},
	{pkg: "internal/store/...", only: []string{"internal/engine/...", "internal/store/..."},
		why: "storage formats convert to and from engine types and know nothing else: not the backend that writes them, reconcile, the provider or Terraform"},
	{pkg: "internal/engine/...", only: []string{"internal/engine/..."}, never: []string{"os/exec", "net", "net/http/..."},
		why: "the engine plans: pure Go with no I/O, nothing of Terraform, libvirt, the store or the layers that run its plans"},
	{pkg: "internal/groupproto/...", only: []string{"internal/engine/...", "internal/groupproto/..."}, never: []string{"os/exec", "net", "net/http/..."},
		why: "the group's plan/apply protocol is one pure decision over engine values: the provider converts Terraform's requests into its inputs and acts on its answer"},
	{pkg: "internal/diagnostics/...", never: schema, why: "diagnostics render errors for Terraform; they know nothing of the hosts or of the layers that raise them"},
	{pkg: "internal/validators/...", never: schema, why: "validators check the schema's values by the engine's rules; they know nothing of the hosts"},
	{pkg: "internal/planmodifiers/...", never: schema, why: "plan modifiers work on the schema's values by the engine's rules; they know nothing of the hosts"},
	{pkg: "internal/seed/...", never: tools, why: "seed builds NoCloud images from bytes; it knows nothing of the layers that use it"},
	{pkg: "internal/hostfile/...", never: tools, why: "hostfile is a file lock and read helper the layers use; it knows nothing of them"},
	{pkg: "internal/lifetime/...", never: tools, why: "lifetime is the process's signal handling; it knows nothing of the layers that use it"},
	{pkg: "internal/faultproxy/...", never: tools, why: "faultproxy is a test proxy in front of libvirt; it knows nothing of the layers"},
	{pkg: "internal/diskdigest/...", never: tools, why: "diskdigest digests a disk's bytes for the tests and the chaos run; it knows nothing of the layers"},
	{pkg: "internal/procstats/...", never: append(slices.Clone(above), "internal/backend/fake/...", framework), why: "procstats is the record a provider process writes for make bench-cli -profile; it holds the libvirt backend's call statistics and knows nothing of the layers above it"},
}

// pkg is a package as `go list -deps` shows it.
type pkg struct {
	standard bool
	imports  []string
}

// rel is a package's name in the patterns: relative to the module for its own packages ("." for
// the root), the import path for any other.
func rel(path string, standard bool) string {
	switch {
	case standard:
		return path
	case path == module:
		return "."
	case strings.HasPrefix(path, module+"/"):
		return strings.TrimPrefix(path, module+"/")
	}
	return path
}

// ours tells whether a pattern names a package of this module.
func ours(pattern string) bool {
	return pattern == "." || strings.HasPrefix(pattern, "internal/") || strings.HasPrefix(pattern, "cmd/")
}

// matches tells whether the package (path, standard) is one the pattern names.
func matches(pattern, path string, standard bool) bool {
	name := path
	if ours(pattern) {
		// A standard library package may be named internal/... too: it is never one of ours.
		if standard || (path != module && !strings.HasPrefix(path, module+"/")) {
			return false
		}
		name = rel(path, false)
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return name == base || strings.HasPrefix(name, base+"/")
	}
	return name == pattern
}

func matchesAny(patterns []string, path string, standard bool) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return matches(p, path, standard) })
}

// ruleFor is the layer of one of the module's packages: the one whose pattern is the longest
// that matches it.
func ruleFor(path string) (layer, bool) {
	var best layer
	found := false
	for _, l := range layers {
		if matches(l.pkg, path, false) && (!found || len(l.pkg) > len(best.pkg)) {
			best, found = l, true
		}
	}
	return best, found
}

// violations checks each of the module's packages in pkgs against its layer. It walks the
// package's dependencies breadth first and reports each one the layer forbids with the chain of
// imports that reaches it (the shortest), and does not walk on from a forbidden package: what that
// one brings in is the same mistake.
func violations(pkgs map[string]pkg) []string {
	var paths []string
	for path, p := range pkgs {
		if !p.standard && (path == module || strings.HasPrefix(path, module+"/")) {
			paths = append(paths, path)
		}
	}
	slices.Sort(paths)
	var out []string
	for _, path := range paths {
		l, ok := ruleFor(path)
		if !ok {
			out = append(out, fmt.Sprintf("%s has no layer in internal/layers/layers_test.go: add one saying what it may never import", rel(path, false)))
			continue
		}
		from := map[string]string{path: ""}
		queue := []string{path}
		for len(queue) > 0 {
			at := queue[0]
			queue = queue[1:]
			for _, dep := range pkgs[at].imports {
				if _, seen := from[dep]; seen {
					continue
				}
				from[dep] = at
				d, known := pkgs[dep]
				if !known {
					continue // "C", or a package go list did not show
				}
				forbidden := matchesAny(l.never, dep, d.standard) ||
					(l.only != nil && !d.standard && !matchesAny(l.only, dep, false)) ||
					(at == path && matchesAny(l.notDirect, dep, d.standard))
				if forbidden {
					out = append(out, fmt.Sprintf("%s imports %s (%s): %s", rel(path, false), rel(dep, d.standard), chain(pkgs, from, dep), l.why))
					continue
				}
				queue = append(queue, dep)
			}
		}
	}
	return out
}

// chain is the imports that lead to dep, from the package the walk started at.
func chain(pkgs map[string]pkg, from map[string]string, dep string) string {
	var names []string
	for at := dep; at != ""; at = from[at] {
		names = append(names, rel(at, pkgs[at].standard))
	}
	slices.Reverse(names)
	return strings.Join(names, " -> ")
}

// TestLayers checks the module's packages, as `go list -deps` shows them (the packages the
// binary and the programs are built from; tests may import more, the fake backend above all).
func TestLayers(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}\t{{.Standard}}\t{{join .Imports \" \"}}", "./...")
	cmd.Dir = filepath.Join("..", "..")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./...: %v\n%s", err, stderr.String())
	}
	pkgs := map[string]pkg{}
	for line := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		if len(f) != 3 {
			t.Fatalf("go list printed %q, not path, standard and imports", line)
		}
		pkgs[f[0]] = pkg{standard: f[1] == "true", imports: strings.Fields(f[2])}
	}
	if _, ok := pkgs[module+"/internal/engine"]; !ok {
		t.Fatalf("go list -deps ./... did not list %s/internal/engine: is %s still the module's path?", module, module)
	}
	for _, v := range violations(pkgs) {
		t.Error(v)
	}
}

// TestViolations checks the walk on made-up import graphs: a direct import that runs back up, one
// through another package with its chain (where the walk stops at the first forbidden package), a
// package outside an only list, a package that may reach libvirt only through the backend, and a
// package with no layer.
func TestViolations(t *testing.T) {
	t.Parallel()
	m := func(p string) string { return module + "/" + p }
	std := pkg{standard: true}
	tests := map[string]struct {
		pkgs map[string]pkg
		want []string
	}{
		"the standard library only": {
			pkgs: map[string]pkg{m("internal/engine"): {imports: []string{"fmt"}}, "fmt": std},
		},
		"a standard package named internal/... is not ours": {
			pkgs: map[string]pkg{m("internal/engine"): {imports: []string{"internal/abi"}}, "internal/abi": std},
		},
		"a direct import that runs back up": {
			pkgs: map[string]pkg{
				m("internal/engine"):    {imports: []string{m("internal/reconcile")}},
				m("internal/reconcile"): {},
			},
			want: []string{"internal/engine imports internal/reconcile (internal/engine -> internal/reconcile): " + layerWhy("internal/engine/...")},
		},
		"through another package": {
			pkgs: map[string]pkg{
				m("internal/reconcile"): {imports: []string{m("internal/seed"), "fmt"}},
				m("internal/seed"):      {imports: []string{"bytes", m("internal/provider")}},
				m("internal/provider"):  {imports: []string{"github.com/hashicorp/terraform-plugin-framework/diag"}},
				"github.com/hashicorp/terraform-plugin-framework/diag": {},
				"fmt": std, "bytes": std,
			},
			want: []string{
				"internal/reconcile imports internal/provider (internal/reconcile -> internal/seed -> internal/provider): " + layerWhy("internal/reconcile/..."),
				"internal/seed imports internal/provider (internal/seed -> internal/provider): " + layerWhy("internal/seed/..."),
			},
		},
		"outside the only list": {
			pkgs: map[string]pkg{
				m("internal/store"):       {imports: []string{m("internal/engine"), "github.com/example/yaml"}},
				m("internal/engine"):      {},
				"github.com/example/yaml": {},
			},
			want: []string{"internal/store imports github.com/example/yaml (internal/store -> github.com/example/yaml): " + layerWhy("internal/store/...")},
		},
		"the longest layer wins": {
			pkgs: map[string]pkg{
				m("internal/backend/libvirt"):        {imports: []string{"github.com/digitalocean/go-libvirt"}},
				"github.com/digitalocean/go-libvirt": {},
			},
		},
		"not directly, but through another package": {
			pkgs: map[string]pkg{
				m("internal/provider"):                {imports: []string{m("internal/backend/libvirt")}},
				m("internal/backend/libvirt"):         {imports: []string{"libvirt.org/go/libvirtxml"}},
				"libvirt.org/go/libvirtxml":           {},
				m("internal/provider/stateful_group"): {imports: []string{"libvirt.org/go/libvirtxml"}},
			},
			want: []string{"internal/provider/stateful_group imports libvirt.org/go/libvirtxml (internal/provider/stateful_group -> libvirt.org/go/libvirtxml): " + layerWhy("internal/provider/...")},
		},
		"a package with no layer": {
			pkgs: map[string]pkg{m("internal/newroom"): {}},
			want: []string{"internal/newroom has no layer in internal/layers/layers_test.go: add one saying what it may never import"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if d := cmp.Diff(tt.want, violations(tt.pkgs)); d != "" {
				t.Errorf("violations (-want +got):\n%s", d)
			}
		})
	}
}

// layerWhy is the words of the layer with pattern p, for the expected failures.
func layerWhy(p string) string {
	for _, l := range layers {
		if l.pkg == p {
			return l.why
		}
	}
	panic("no layer " + p)
}
