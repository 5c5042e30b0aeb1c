package engine

import (
	"maps"
	"strings"
	"testing"
)

func tpl(metadata map[string]string, disks ...string) Template {
	t := Template{Shape: Shape{DomainType: "qemu", VCPU: 1, MemoryMiB: 64}, BootDisk: BootDisk{SizeMiB: 64}, Metadata: metadata}
	for _, d := range disks {
		t.Disks = append(t.Disks, Disk{DeviceName: d, SizeMiB: 10})
	}
	return t
}

func policy(disks ...string) Policy {
	var p Policy
	for _, d := range disks {
		p.Disks = append(p.Disks, PolicyDisk{DeviceName: d})
	}
	return p
}

func diskNames(s PreservedState) string {
	var names []string
	for _, k := range sortedKeysOf(s.Disks) {
		names = append(names, k+"="+s.Disks[k].Source)
	}
	return strings.Join(names, ",")
}

func sortedKeysOf(m map[string]PreservedDisk) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := range keys {
		for j := i + 1; j < len(keys); j++ {
			if keys[j] < keys[i] {
				keys[i], keys[j] = keys[j], keys[i]
			}
		}
	}
	return keys
}

// The reference's first example: a policy only, making data-disk stateful in both nodes.
func TestPreserve_twoNodesPolicyOnly(t *testing.T) {
	t.Parallel()
	tp := tpl(nil, "data-disk")
	for _, node := range []string{"node-1", "node-2"} {
		fromPolicy, fromConfig := Preserve(node, tp, policy("data-disk"), InstanceConfig{})
		if got := diskNames(fromPolicy); got != "data-disk="+node+"-data-disk.qcow2" {
			t.Fatalf("%s from policy: %s", node, got)
		}
		if !fromConfig.Empty() {
			t.Fatalf("%s from config: %+v", node, fromConfig)
		}
		d := Desire(node, tp, fromPolicy, fromConfig)
		if boot, _ := d.DiskByName(BootDeviceName); boot.Preserved {
			t.Fatal("the boot disk must stay stateless")
		}
	}
}

// The second example: configs only, with disks and metadata the template does not define.
func TestPreserve_twoNodesConfigOnly(t *testing.T) {
	t.Parallel()
	tp := tpl(nil)
	cases := map[string]InstanceConfig{
		"node-1": {Disks: []ConfigDisk{{DeviceName: "legacy-disk", Source: "my-legacy-1"}}, Metadata: map[string]string{"node-id": "xyz273"}},
		"node-2": {Disks: []ConfigDisk{{DeviceName: "logs-disk", Source: "my-logs-1"}}, Metadata: map[string]string{"node-id": "pqr851"}},
	}
	for node, c := range cases {
		fromPolicy, fromConfig := Preserve(node, tp, Policy{}, c)
		if !fromPolicy.Empty() {
			t.Fatalf("%s from policy: %+v", node, fromPolicy)
		}
		want := c.Disks[0].DeviceName + "=" + c.Disks[0].Source
		if diskNames(fromConfig) != want || !maps.Equal(fromConfig.Metadata, c.Metadata) {
			t.Fatalf("%s from config: %+v", node, fromConfig)
		}
		d := Desire(node, tp, fromPolicy, fromConfig)
		disk, ok := d.DiskByName(c.Disks[0].DeviceName)
		if !ok || disk.Source != c.Disks[0].Source || !disk.Preserved || d.Metadata["node-id"] != c.Metadata["node-id"] {
			t.Fatalf("%s desired: %+v", node, d)
		}
	}
}

// The third example: the config overrides the policy's logs-disk and the template's logmonth.
func TestPreserve_configOverridesPolicyAndTemplate(t *testing.T) {
	t.Parallel()
	tp := tpl(map[string]string{"logmonth": "jan"}, "data-disk", "logs-disk")
	c := InstanceConfig{Disks: []ConfigDisk{{DeviceName: "logs-disk", Source: "pd-logs-feb"}}, Metadata: map[string]string{"logmonth": "feb"}}
	fromPolicy, fromConfig := Preserve("node-1", tp, policy("data-disk", "logs-disk"), c)
	if got := diskNames(fromPolicy); got != "data-disk=node-1-data-disk.qcow2" {
		t.Fatalf("from policy: %s (logs-disk must leave it)", got)
	}
	if got := diskNames(fromConfig); got != "logs-disk=pd-logs-feb" || fromConfig.Metadata["logmonth"] != "feb" {
		t.Fatalf("from config: %+v", fromConfig)
	}
	d := Desire("node-1", tp, fromPolicy, fromConfig)
	if logs, _ := d.DiskByName("logs-disk"); logs.Source != "pd-logs-feb" || d.Metadata["logmonth"] != "feb" {
		t.Fatalf("desired: %+v", d)
	}
	before := desired("node-1", tp, policy("data-disk", "logs-disk"), InstanceConfig{})
	if a, reasons := InstanceDiff(before, d); a != ActionRefresh || !strings.Contains(JoinReasons(reasons), "disk logs-disk swapped") {
		t.Fatalf("applying the config needs %s (%v), want a REFRESH disk swap", a, reasons)
	}
}

// desired is Desire of Preserve, the whole path from configuration to desired domain.
func desired(instance string, t Template, p Policy, c InstanceConfig) DesiredInstance {
	fromPolicy, fromConfig := Preserve(instance, t, p, c)
	return Desire(instance, t, fromPolicy, fromConfig)
}

// Removing a disk from the policy: it stays attached but becomes stateless, at the cost of a
// bookkeeping REFRESH.
func TestPreserve_removalFromPolicy(t *testing.T) {
	t.Parallel()
	tp := tpl(nil, "data-disk")
	before := desired("node-1", tp, policy("data-disk"), InstanceConfig{})
	after := desired("node-1", tp, Policy{}, InstanceConfig{})
	disk, ok := after.DiskByName("data-disk")
	if !ok || disk.Preserved || disk.Source != "node-1-data-disk.qcow2" {
		t.Fatalf("after: %+v", disk)
	}
	if a, reasons := InstanceDiff(before, after); a != ActionRefresh || JoinReasons(reasons) != "disk data-disk made stateless" {
		t.Fatalf("%s %v", a, reasons)
	}
}

// Removing a disk from the policy while a config names it: the disk stays stateful.
func TestPreserve_removalFromPolicyWhileConfigKeepsIt(t *testing.T) {
	t.Parallel()
	tp := tpl(nil, "data-disk")
	c := InstanceConfig{Disks: []ConfigDisk{{DeviceName: "data-disk", Source: "node-1-data-disk.qcow2"}}}
	fromPolicy, fromConfig := Preserve("node-1", tp, Policy{}, c)
	if !fromPolicy.Empty() || diskNames(fromConfig) != "data-disk=node-1-data-disk.qcow2" {
		t.Fatalf("policy %+v config %+v", fromPolicy, fromConfig)
	}
	if d, _ := Desire("node-1", tp, fromPolicy, fromConfig).DiskByName("data-disk"); !d.Preserved || d.SizeMiB != 10 {
		t.Fatalf("disk %+v", d)
	}
}

// Removing disks from a config: the template's blue disk stays attached, stateless; the green
// disk, which the template does not define, is detached at once.
func TestPreserve_removalOfDisksFromConfig(t *testing.T) {
	t.Parallel()
	tp := tpl(nil, "blue")
	c := InstanceConfig{Disks: []ConfigDisk{{DeviceName: "blue", Source: "node-1-blue.qcow2"}, {DeviceName: "green", Source: "/srv/green.img"}}}
	before := desired("node-1", tp, Policy{}, c)
	after := desired("node-1", tp, Policy{}, InstanceConfig{})
	if blue, ok := after.DiskByName("blue"); !ok || blue.Preserved {
		t.Fatalf("blue %+v", blue)
	}
	if _, ok := after.DiskByName("green"); ok {
		t.Fatal("green must be detached")
	}
	a, reasons := InstanceDiff(before, after)
	if a != ActionRefresh || !strings.Contains(JoinReasons(reasons), "disk green detached") || !strings.Contains(JoinReasons(reasons), "disk blue made stateless") {
		t.Fatalf("%s %v", a, reasons)
	}
}

// Removing metadata from a config: mode falls back to the template's value, id disappears.
func TestPreserve_removalOfMetadataFromConfig(t *testing.T) {
	t.Parallel()
	tp := tpl(map[string]string{"mode": "test"})
	before := desired("node-1", tp, Policy{}, InstanceConfig{Metadata: map[string]string{"mode": "dev", "id": "xyz273"}})
	after := desired("node-1", tp, Policy{}, InstanceConfig{})
	if before.Metadata["mode"] != "dev" || !maps.Equal(after.Metadata, map[string]string{"mode": "test"}) {
		t.Fatalf("before %v after %v", before.Metadata, after.Metadata)
	}
	if a, _ := InstanceDiff(before, after); a != ActionRefresh {
		t.Fatalf("%s", a)
	}
}

// Removing a disk from a config while the policy names it: it moves to the policy part.
func TestPreserve_fallbackToPolicy(t *testing.T) {
	t.Parallel()
	tp := tpl(nil, "data-disk")
	c := InstanceConfig{Disks: []ConfigDisk{{DeviceName: "data-disk", Source: "node-1-data-disk.qcow2"}}}
	withConfig, _ := Preserve("node-1", tp, policy("data-disk"), c)
	if !withConfig.Empty() {
		t.Fatalf("the config must shadow the policy: %+v", withConfig)
	}
	fromPolicy, fromConfig := Preserve("node-1", tp, policy("data-disk"), InstanceConfig{})
	if diskNames(fromPolicy) != "data-disk=node-1-data-disk.qcow2" || !fromConfig.Empty() {
		t.Fatalf("policy %+v config %+v", fromPolicy, fromConfig)
	}
}

func TestPreserve_policyDiskNotInTemplateIsIgnored(t *testing.T) {
	t.Parallel()
	fromPolicy, _ := Preserve("node-1", tpl(nil), policy("ghost"), InstanceConfig{})
	if !fromPolicy.Empty() {
		t.Fatalf("%+v", fromPolicy)
	}
}

func TestInstanceDiff_actionTable(t *testing.T) {
	t.Parallel()
	tp := tpl(map[string]string{"k": "v"}, "data")
	base := desired("i-1", tp, Policy{}, InstanceConfig{})
	cases := []struct {
		name   string
		change func(*Template, *Policy, *InstanceConfig)
		want   Action
		reason string
	}{
		{"nothing", func(*Template, *Policy, *InstanceConfig) {}, ActionNone, ""},
		{"labels", func(t *Template, _ *Policy, _ *InstanceConfig) { t.Labels = map[string]string{"a": "b"} }, ActionNone, "labels"},
		{"description", func(t *Template, _ *Policy, _ *InstanceConfig) { t.Description = "d" }, ActionNone, "description"},
		{"metadata added", func(_ *Template, _ *Policy, c *InstanceConfig) { c.Metadata = map[string]string{"n": "1"} }, ActionRefresh, "metadata n"},
		{"metadata changed", func(t *Template, _ *Policy, _ *InstanceConfig) { t.Metadata = map[string]string{"k": "w"} }, ActionRefresh, "metadata k"},
		{"metadata removed", func(t *Template, _ *Policy, _ *InstanceConfig) { t.Metadata = nil }, ActionRefresh, "metadata k"},
		{"template disk made stateful", func(_ *Template, p *Policy, _ *InstanceConfig) { *p = policy("data") }, ActionRefresh, "disk data made stateful"},
		{"config disk added", func(_ *Template, _ *Policy, c *InstanceConfig) {
			c.Disks = []ConfigDisk{{DeviceName: "logs", Source: "x.qcow2"}}
		}, ActionRefresh, "disk logs attached"},
		{"disk grown", func(t *Template, _ *Policy, _ *InstanceConfig) { t.Disks[0].SizeMiB = 20 }, ActionRefresh, "disk data grown"},
		{"vcpu", func(t *Template, _ *Policy, _ *InstanceConfig) { t.VCPU = 2 }, ActionRestart, "vcpu"},
		{"memory", func(t *Template, _ *Policy, _ *InstanceConfig) { t.MemoryMiB = 128 }, ActionRestart, "memory"},
		{"nics", func(t *Template, _ *Policy, _ *InstanceConfig) { t.NICs = []NIC{{Type: "user"}} }, ActionRestart, "network interfaces"},
		{"boot image", func(t *Template, _ *Policy, _ *InstanceConfig) { t.BootDisk.SourceImage = "/i.qcow2" }, ActionReplace, "boot image changed"},
		{"external boot disk", func(_ *Template, _ *Policy, c *InstanceConfig) {
			c.Disks = []ConfigDisk{{DeviceName: BootDeviceName, Source: "/srv/boot.img"}}
		}, ActionReplace, "external boot disk"},
		{"domain type", func(t *Template, _ *Policy, _ *InstanceConfig) { t.DomainType = "kvm" }, ActionReplace, "domain type"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			nt := tpl(map[string]string{"k": "v"}, "data")
			var p Policy
			var ic InstanceConfig
			c.change(&nt, &p, &ic)
			got, reasons := InstanceDiff(base, desired("i-1", nt, p, ic))
			if got != c.want || (c.reason != "" && !strings.Contains(JoinReasons(reasons), c.reason)) {
				t.Fatalf("%s %v, want %s with %q", got, reasons, c.want, c.reason)
			}
		})
	}
	// A config disk removed again is detached.
	withLogs := desired("i-1", tp, Policy{}, InstanceConfig{Disks: []ConfigDisk{{DeviceName: "logs", Source: "x.qcow2"}}})
	if a, r := InstanceDiff(withLogs, base); a != ActionRefresh || JoinReasons(r) != "disk logs detached" {
		t.Fatalf("%s %v", a, r)
	}
}

func TestVolumeFate(t *testing.T) {
	t.Parallel()
	preserved := func(rule string) DesiredDisk { return DesiredDisk{Preserved: true, DeleteRule: rule} }
	cases := []struct {
		name         string
		disk         DesiredDisk
		fromTemplate bool
		event        Event
		want         Fate
	}{
		{"preserved NEVER on recreation", preserved(DeleteNever), true, Recreation, Keep},
		{"preserved ON_PERMANENT on recreation", preserved(DeleteOnPermanentDeletion), true, Recreation, Keep},
		{"preserved NEVER on permanent deletion", preserved(DeleteNever), true, PermanentDeletion, Release},
		{"preserved ON_PERMANENT on permanent deletion", preserved(DeleteOnPermanentDeletion), true, PermanentDeletion, Delete},
		{"stateless template disk on recreation", DesiredDisk{}, true, Recreation, Recreate},
		{"stateless template disk on permanent deletion", DesiredDisk{}, true, PermanentDeletion, Delete},
		{"foreign disk on permanent deletion", DesiredDisk{}, false, PermanentDeletion, Release},
	}
	for _, c := range cases {
		if got := VolumeFate(c.disk, c.fromTemplate, c.event); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

func TestDesiredHash_isStable(t *testing.T) {
	t.Parallel()
	tp := tpl(map[string]string{"a": "1", "b": "2"}, "y", "x")
	a := desired("i-1", tp, policy("x"), InstanceConfig{})
	tp.Disks[0], tp.Disks[1] = tp.Disks[1], tp.Disks[0]
	b := desired("i-1", tp, policy("x"), InstanceConfig{})
	if a.Hash() != b.Hash() {
		t.Fatal("disk order changed the hash")
	}
	tp.VCPU = 3
	if desired("i-1", tp, policy("x"), InstanceConfig{}).Hash() == a.Hash() {
		t.Fatal("a vcpu change kept the hash")
	}
}

func TestPlanInstance_boundsAndIdempotence(t *testing.T) {
	t.Parallel()
	tp := tpl(map[string]string{"k": "v"}, "data")
	fresh := ManagedInstance{Current: desired("i-1", tp, Policy{}, InstanceConfig{})}
	fresh.LastAppliedHash = fresh.Current.Hash()

	// Nothing to do stays NONE even under a higher minimal action.
	if p := PlanInstance(fresh, tp, Policy{}, InstanceConfig{}, ActionRestart, ActionReplace); p.Action != ActionNone || p.Blocked {
		t.Fatalf("no-op plan %+v", p)
	}
	// A metadata change is a REFRESH, raised to RESTART by the minimal action.
	c := InstanceConfig{Metadata: map[string]string{"node-id": "x"}}
	p := PlanInstance(fresh, tp, Policy{}, c, ActionRestart, ActionReplace)
	if p.Needed != ActionRefresh || p.Action != ActionRestart || p.Blocked {
		t.Fatalf("raised plan %+v", p)
	}
	// The same change capped at NONE is blocked, and says what it needs.
	if p := PlanInstance(fresh, tp, Policy{}, c, ActionNone, ActionNone); !p.Blocked || p.Action != ActionRefresh {
		t.Fatalf("capped plan %+v", p)
	}
	// Applying the plan, then planning again, needs nothing.
	applied := p.Applied(tp)
	if again := PlanInstance(applied, tp, Policy{}, c, ActionRestart, ActionReplace); again.Action != ActionNone || len(again.Reasons) != 0 {
		t.Fatalf("second plan %+v", again)
	}
	// An interrupted change (hash recorded before the change finished) is redone at least at the
	// minimal action, even if the domain already looks right.
	stale := applied
	stale.LastAppliedHash = "in-flight"
	if again := PlanInstance(stale, tp, Policy{}, c, ActionRefresh, ActionReplace); again.Action != ActionRefresh {
		t.Fatalf("stale plan %+v", again)
	}
}
