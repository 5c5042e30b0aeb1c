package engine

import (
	"strings"
	"testing"
)

func base() Template {
	return Template{
		Shape:    Shape{DomainType: "qemu", VCPU: 1, MemoryMiB: 128, Labels: map[string]string{"team": "a"}},
		BootDisk: BootDisk{SizeMiB: 1024},
		Disks:    []Disk{{DeviceName: "data", SizeMiB: 256}},
		Metadata: map[string]string{"role": "db"},
	}
}

func TestDiff_actionTable(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		change func(*Template)
		want   Action
		reason string
	}{
		{"no change", func(*Template) {}, ActionNone, ""},
		{"labels", func(t *Template) { t.Labels = map[string]string{"team": "b"} }, ActionNone, "labels"},
		{"description", func(t *Template) { t.Description = "x" }, ActionNone, "description"},
		{"metadata key added", func(t *Template) { t.Metadata["k"] = "v" }, ActionRefresh, "metadata k added"},
		{"metadata key changed", func(t *Template) { t.Metadata["role"] = "web" }, ActionRefresh, "metadata role changed"},
		{"metadata key removed", func(t *Template) { t.Metadata = nil }, ActionRefresh, "metadata role removed"},
		{"disk added", func(t *Template) { t.Disks = append(t.Disks, Disk{"logs", 8}) }, ActionRefresh, "disk logs attached"},
		{"disk removed", func(t *Template) { t.Disks = nil }, ActionRefresh, "disk data detached"},
		{"disk grown", func(t *Template) { t.Disks[0].SizeMiB = 512 }, ActionRefresh, "disk data grown"},
		{"boot disk grown", func(t *Template) { t.BootDisk.SizeMiB = 2048 }, ActionRefresh, "disk boot grown"},
		{"vcpu", func(t *Template) { t.VCPU = 2 }, ActionRestart, "vcpu 1 -> 2"},
		{"memory", func(t *Template) { t.MemoryMiB = 256 }, ActionRestart, "memory 128 -> 256"},
		{"network interfaces", func(t *Template) { t.NICs = []NIC{{Type: "user"}} }, ActionRestart, "network interfaces"},
		{"boot image", func(t *Template) { t.BootDisk.SourceImage = "/img.qcow2" }, ActionReplace, "boot image changed"},
		{"domain type", func(t *Template) { t.DomainType = "kvm" }, ActionReplace, "domain type qemu -> kvm"},
		{"disk shrunk is never in place", func(t *Template) { t.Disks[0].SizeMiB = 1 }, ActionReplace, "disk data shrunk"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			desired := base()
			c.change(&desired)
			got, reasons := Diff(base(), desired)
			if got != c.want {
				t.Fatalf("action %s, want %s (reasons %v)", got, c.want, reasons)
			}
			if c.reason != "" && !strings.Contains(JoinReasons(reasons), c.reason) {
				t.Fatalf("reasons %q do not mention %q", JoinReasons(reasons), c.reason)
			}
			if c.reason == "" && len(reasons) != 0 {
				t.Fatalf("reasons %v for no change", reasons)
			}
		})
	}
}

func TestDiff_takesTheMostDisruptiveReason(t *testing.T) {
	t.Parallel()
	desired := base()
	desired.Labels = nil
	desired.Metadata["x"] = "y"
	desired.VCPU = 4
	got, reasons := Diff(base(), desired)
	if got != ActionRestart || len(reasons) != 3 {
		t.Fatalf("got %s with %v", got, reasons)
	}
}

func TestRevision_isStableUnderReordering(t *testing.T) {
	t.Parallel()
	a := base()
	a.Disks = []Disk{{"b", 1}, {"a", 2}}
	b := base()
	b.Disks = []Disk{{"a", 2}, {"b", 1}}
	if a.Revision() != b.Revision() {
		t.Fatal("disk order changed the revision")
	}
	c := base()
	c.Metadata = map[string]string{}
	d := base()
	d.Metadata = nil
	if c.Revision() != d.Revision() {
		t.Fatal("an empty map and no map have different revisions")
	}
	e := base()
	e.VCPU = 2
	if e.Revision() == base().Revision() {
		t.Fatal("a vcpu change kept the revision")
	}
}

func TestShrinks(t *testing.T) {
	t.Parallel()
	desired := base()
	desired.Disks[0].SizeMiB = 100
	desired.BootDisk.SizeMiB = 512
	got := Shrinks(base(), desired)
	if len(got) != 2 || got[0].DeviceName != BootDeviceName || got[1] != (Shrink{"data", 256, 100}) {
		t.Fatalf("Shrinks = %+v", got)
	}
	if s := Shrinks(base(), base()); len(s) != 0 {
		t.Fatalf("Shrinks of equal templates = %+v", s)
	}
}

func TestParseAction(t *testing.T) {
	t.Parallel()
	for i, n := range ActionNames {
		a, err := ParseAction(n)
		if err != nil || a != Action(i) || a.String() != n {
			t.Fatalf("ParseAction(%q) = %v, %v", n, a, err)
		}
	}
	if _, err := ParseAction("REBOOT"); err == nil || !strings.Contains(err.Error(), "NONE, REFRESH, RESTART, REPLACE") {
		t.Fatalf("ParseAction(REBOOT) error = %v", err)
	}
	if Action(9).String() != "Action(9)" {
		t.Fatal("out of range action name")
	}
}
