package provider

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

const managedAddr = "data.virt_managed_instances.test"

// stack renders a group (see groupConfig) followed by more configuration, and a
// virt_managed_instances data source read after every resource in more.
func stack(name string, size int, body, extra, more string) string {
	var deps []string
	for _, line := range strings.Split(more, "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "resource" {
			deps = append(deps, strings.Trim(f[1], `"`)+"."+strings.Trim(f[2], `"`))
		}
	}
	return groupConfig(name, size, body, extra) + more + fmt.Sprintf(`
data "virt_managed_instances" "test" {
  group      = virt_stateful_group.test.name
  depends_on = [%s]
}
`, strings.Join(deps, ", "))
}

// policyConfig renders a virt_stateful_policy "test" of the test group.
func policyConfig(disks ...string) string {
	var b strings.Builder
	b.WriteString("\nresource \"virt_stateful_policy\" \"test\" {\n  group = virt_stateful_group.test.name\n")
	for _, d := range disks {
		fmt.Fprintf(&b, "  disk {\n    device_name = %q\n  }\n", d)
	}
	b.WriteString("}\n")
	return b.String()
}

// renderDisks renders disks as "device=source" pairs sorted by device name.
func renderDisks(pairs []string) string {
	sort.Strings(pairs)
	return "[" + strings.Join(pairs, " ") + "]"
}

func renderMap(m map[string]string) string {
	var pairs []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		pairs = append(pairs, k+"="+m[k])
	}
	return "{" + strings.Join(pairs, " ") + "}"
}

// managedView renders each instance of the data source as one comparable line:
// "policy=[dev=source ...] config=[dev=source ...] meta={k=v ...}", followed by
// " retained=[dev=source ...] {k=v ...}" for an instance that keeps a destroyed config's state.
func managedView(s *terraform.State) (map[string]string, error) {
	rs, ok := s.RootModule().Resources[managedAddr]
	if !ok {
		return nil, fmt.Errorf("%s is not in the state", managedAddr)
	}
	a := rs.Primary.Attributes
	n, err := strconv.Atoi(a["instances.#"])
	if err != nil {
		return nil, fmt.Errorf("%s has no instances list: %v", managedAddr, err)
	}
	out := map[string]string{}
	for i := range n {
		p := fmt.Sprintf("instances.%d.", i)
		disks := func(from string) string {
			var pairs []string
			count, _ := strconv.Atoi(a[p+from+".disk.#"])
			for j := range count {
				q := fmt.Sprintf("%s%s.disk.%d.", p, from, j)
				pairs = append(pairs, a[q+"device_name"]+"="+a[q+"source"])
			}
			return renderDisks(pairs)
		}
		meta := func(from string) map[string]string {
			m := map[string]string{}
			mp := p + from + ".metadata."
			for k, v := range a {
				if key, ok := strings.CutPrefix(k, mp); ok && key != "%" {
					m[key] = v
				}
			}
			return m
		}
		line := fmt.Sprintf("policy=%s config=%s meta=%s", disks("preserved_state_from_policy"), disks("preserved_state_from_config"), renderMap(meta("preserved_state_from_config")))
		if kept, m := disks("retained_state"), meta("retained_state"); kept != "[]" || len(m) > 0 {
			line += fmt.Sprintf(" retained=%s %s", kept, renderMap(m))
		}
		out[a[p+"name"]] = line
	}
	return out, nil
}

// checkManaged checks the data source's preserved state of every instance.
func checkManaged(want map[string]string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		got, err := managedView(s)
		if err != nil {
			return err
		}
		return sameLines("managed instances", got, want)
	}
}

// sameLines compares two name-to-line maps and reports every difference.
func sameLines(what string, got, want map[string]string) error {
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if got[k] != want[k] {
			diffs = append(diffs, fmt.Sprintf("%s: got %q, want %q", k, got[k], want[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: unexpected %q", k, got[k]))
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%s differ:\n  %s", what, strings.Join(diffs, "\n  "))
	}
	return nil
}

// domainView renders a member domain as libvirt reports it: every disk but the boot disk with its
// source, and the metadata the provider applied to it: "disks=[dev=source ...] meta={k=v ...}".
func domainView(d backend.Domain, pool string) string {
	var pairs []string
	for _, x := range d.Disks {
		if x.DeviceName != engine.BootDeviceName {
			pairs = append(pairs, x.DeviceName+"="+reconcile.SourceOf(x, pool))
		}
	}
	meta := map[string]string{}
	if d.Record != nil {
		meta = d.Record.Instance.Current.Metadata
	}
	return fmt.Sprintf("disks=%s meta=%s", renderDisks(pairs), renderMap(meta))
}

// checkDomains checks the disks attached to each member domain and its metadata, on the host.
func checkDomains(t *testing.T, base string, want map[string]string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		got := map[string]string{}
		for n, d := range members(t, base) {
			got[n] = domainView(d, testPool())
		}
		return sameLines("domains", got, want)
	}
}

// extVolume creates a volume no group owns, as a user would for a per-instance config, and
// deletes it when the test ends: preserved disks are never deleted by a destroy.
func extVolume(t *testing.T, name string) {
	t.Helper()
	b := testLibvirt(t)
	if _, err := b.EnsureVolume(context.Background(), backend.VolumeSpec{Pool: testPool(), Name: name, SizeMiB: 8}); err != nil {
		t.Fatalf("create volume %s: %v", name, err)
	}
	t.Cleanup(func() { _ = b.DeleteVolume(context.Background(), testPool(), name) })
}

// TestAccManagedInstances_statusAndActions checks the data source's own fields for a running
// group and an error for a group that does not exist.
func TestAccManagedInstances_statusAndActions(t *testing.T) {
	name := testPrefix + "mi"
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{
				Config: stack(name, 2, "", "", ""),
				Check: resource.ComposeTestCheckFunc(
					resource.TestCheckResourceAttr(managedAddr, "id", name),
					resource.TestCheckResourceAttr(managedAddr, "instances.#", "2"),
					resource.TestCheckResourceAttr(managedAddr, "instances.0.name", name+"-1"),
					resource.TestCheckResourceAttr(managedAddr, "instances.0.index", "1"),
					resource.TestCheckResourceAttr(managedAddr, "instances.1.name", name+"-2"),
					resource.TestCheckResourceAttr(managedAddr, "instances.1.status", "RUNNING"),
					resource.TestCheckResourceAttr(managedAddr, "instances.1.current_action", "NONE"),
					resource.TestCheckResourceAttrPair(managedAddr, "instances.0.template_revision", groupAddr, "instances."+name+"-1.template_revision"),
				),
			},
			{
				Config:      groupConfig(name, 2, "", "") + "\ndata \"virt_managed_instances\" \"none\" {\n  group = \"" + testPrefix + "no-such-group\"\n}\n",
				ExpectError: regexp.MustCompile(`(?s)Group not found.*no\s+record\s+of\s+group\s+"` + testPrefix + `no-such-group"`),
			},
		},
	})
}
