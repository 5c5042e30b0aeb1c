package engine

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// bootView renders the tasks of an operation that touch the boot volume or its image, with what
// a made volume backs onto.
func bootView(op Operation) []string {
	var out []string
	for _, t := range op.Tasks {
		v := t.Volume
		switch {
		case t.Kind == TaskImportImage:
			out = append(out, fmt.Sprintf("import-image %s from %s", v.Import.Volume, v.Import.Source))
		case (t.Kind == TaskCreateVolume || t.Kind == TaskFreshVolume || t.Kind == TaskStage) && v.DeviceName == BootDeviceName:
			out = append(out, fmt.Sprintf("%s %s on path %q volume %q", t.Kind, v.Volume, v.BackingImage, v.BackingVolume))
		}
	}
	return out
}

// TestImaged plans the boot volumes of a group whose source_image is a host file outside the
// pools: on a host that has its copy (Env.Images) new boot volumes back onto the copy, made
// first when the pool does not have it; elsewhere, and for an overlay that is kept, the path
// stays as it was.
func TestImaged(t *testing.T) {
	t.Parallel()
	const src = "/srv/images/base.qcow2"
	img := HostImage{Source: src, Format: "qcow2", SHA256: "0123456789abcdef0123", Bytes: 1 << 20, VirtualBytes: 1 << 30}
	const copyName = "db-image-0123456789ab.qcow2"
	withImage := func(size int) Group {
		g := group(size)
		g.Template.BootDisk.SourceImage = src
		return g
	}
	member := func(tpl Template) []Observed {
		o := onHost(nil)
		o.Instance = built(o.Name, tpl, Policy{}, InstanceConfig{})
		o.Attached = o.Instance.Current.Disks
		return []Observed{o}
	}
	present := map[string]bool{"db-1-boot.qcow2": true, "db-1-data.qcow2": true}
	cases := map[string]struct {
		plan func() GroupPlan
		want []string
	}{
		"scale-out on a host with the copy to make": {
			plan: func() GroupPlan {
				return PlanGroup(state(withImage(1)), nil, Env{Volumes: map[string]bool{}, Images: map[string]HostImage{DefaultHost: img}})
			},
			want: []string{
				"import-image " + copyName + " from " + src,
				`fresh-volume db-1-boot.qcow2 on path "" volume "` + copyName + `"`,
			},
		},
		"scale-out where the pool has the copy": {
			plan: func() GroupPlan {
				return PlanGroup(state(withImage(1)), nil, Env{Volumes: map[string]bool{copyName: true}, Images: map[string]HostImage{DefaultHost: img}})
			},
			want: []string{`fresh-volume db-1-boot.qcow2 on path "" volume "` + copyName + `"`},
		},
		"scale-out where the pool was not listed: the import looks": {
			plan: func() GroupPlan {
				return PlanGroup(state(withImage(1)), nil, Env{Images: map[string]HostImage{DefaultHost: img}})
			},
			want: []string{
				"import-image " + copyName + " from " + src,
				`create-volume db-1-boot.qcow2 on path "" volume "` + copyName + `"`,
			},
		},
		"scale-out on a host whose files are not seen: the path, as before": {
			plan: func() GroupPlan {
				return PlanGroup(state(withImage(1)), nil, Env{Volumes: map[string]bool{}, Images: map[string]HostImage{"h2": img}})
			},
			want: []string{`fresh-volume db-1-boot.qcow2 on path "` + src + `" volume ""`},
		},
		"an image the copy is not of (another source)": {
			plan: func() GroupPlan {
				other := img
				other.Source = "/srv/images/other.qcow2"
				return PlanGroup(state(withImage(1)), nil, Env{Volumes: map[string]bool{}, Images: map[string]HostImage{DefaultHost: other}})
			},
			want: []string{`fresh-volume db-1-boot.qcow2 on path "` + src + `" volume ""`},
		},
		"replace onto a new host image: staged on the copy": {
			plan: func() GroupPlan {
				return PlanGroup(state(withImage(1)), member(base()), Env{Volumes: present, Images: map[string]HostImage{DefaultHost: img}})
			},
			want: []string{
				"import-image " + copyName + " from " + src,
				`stage db-1-boot.staging.qcow2 on path "" volume "` + copyName + `"`,
				`create-volume db-1-boot.qcow2 on path "" volume "` + copyName + `"`,
			},
		},
		"restart of a member on the path: its overlay is kept as it is": {
			plan: func() GroupPlan {
				g := withImage(1)
				old := g.Template
				g.Template.VCPU = 2
				return PlanGroup(state(g), member(old), Env{Volumes: present, Images: map[string]HostImage{DefaultHost: img}})
			},
			want: nil,
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := c.plan()
			if len(p.Waves) == 0 || len(p.Waves[0].Ops) != 1 {
				t.Fatalf("want one operation first, got %d waves", len(p.Waves))
			}
			if diff := cmp.Diff(c.want, bootView(p.Waves[0].Ops[0])); diff != "" {
				t.Errorf("boot tasks (-want +got):\n%s", diff)
			}
		})
	}
}

func TestImageVolumeName(t *testing.T) {
	t.Parallel()
	tests := map[string]struct{ base, digest, format, want string }{
		"qcow2":              {"db", "ABCDEF0123456789ffff", "qcow2", "db-image-abcdef012345.qcow2"},
		"raw":                {"web", "00112233445566778899", "raw", "web-image-001122334455.raw"},
		"a digest too short": {"db", "abc", "raw", "db-image-abc.raw"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := ImageVolumeName(tt.base, tt.digest, tt.format); got != tt.want {
				t.Errorf("ImageVolumeName = %q, want %q", got, tt.want)
			}
			if _, ok := ParseInstanceIndex(tt.base, ImageVolumeName(tt.base, tt.digest, tt.format)); ok {
				t.Errorf("an image volume's name reads as a member's")
			}
		})
	}
}

// TestImageVolumes lists the image volumes a plan makes, for the group record to keep before
// the plan runs.
func TestImageVolumes(t *testing.T) {
	t.Parallel()
	g := group(3)
	g.Template.BootDisk.SourceImage = "/srv/images/base.qcow2"
	img := HostImage{Source: "/srv/images/base.qcow2", Format: "qcow2", SHA256: "0123456789abcdef"}
	p := PlanGroup(state(g), nil, Env{Volumes: map[string]bool{}, Images: map[string]HostImage{DefaultHost: img}})
	made := img
	made.Volume = "db-image-0123456789ab.qcow2"
	want := map[string][]HostImage{DefaultHost: {made}}
	if diff := cmp.Diff(want, p.ImageVolumes()); diff != "" {
		t.Errorf("ImageVolumes (-want +got):\n%s", diff)
	}
}

// TestPlanDestroy_imageVolumes deletes the image volumes the record lists after the members,
// and leaves a volume of the same scheme that it does not list.
func TestPlanDestroy_imageVolumes(t *testing.T) {
	t.Parallel()
	s := state(group(1))
	s.Images = map[string][]HostImage{DefaultHost: {{Source: "/srv/base.img", Volume: "db-image-0123456789ab.qcow2"}}}
	// The group made its copy (the inventory says so); the other image volume of its scheme it
	// did not make.
	s.Inventory = Inventory{Kept: true, Items: []Made{
		{Kind: MadeVolume, Host: DefaultHost, Name: "db-1-boot.qcow2", Confirmed: true},
		{Kind: MadeVolume, Host: DefaultHost, Name: "db-1-data.qcow2", Confirmed: true},
		{Kind: MadeVolume, Host: DefaultHost, Name: "db-image-0123456789ab.qcow2", Confirmed: true},
	}}
	volumes := map[string][]string{DefaultHost: {"db-1-boot.qcow2", "db-1-data.qcow2", "db-image-0123456789ab.qcow2", "db-image-ffffffffffff.qcow2"}}
	p := PlanDestroy(s, []Observed{onHost(nil)}, volumes, Env{Volumes: map[string]bool{"db-1-boot.qcow2": true, "db-1-data.qcow2": true}})
	if len(p.Waves) != 2 {
		t.Fatalf("want the members' wave and the volumes' wave, got %d waves", len(p.Waves))
	}
	if diff := cmp.Diff([]string{"delete-volume db-image-0123456789ab.qcow2"}, tasksOf(p.Waves[1].Ops[0])); diff != "" {
		t.Errorf("second wave (-want +got):\n%s", diff)
	}
}

// TestImaged_problemBlocks blocks a member whose boot volume would be made from a host image
// that cannot be copied (refused when opened), naming the image; a member that makes none is
// not blocked.
func TestImaged_problemBlocks(t *testing.T) {
	t.Parallel()
	g := group(2)
	g.Template.BootDisk.SourceImage = "/srv/images/link.img"
	bad := HostImage{Source: "/srv/images/link.img", Problem: `"/srv/images/link.img" resolves to /etc/shadow, under /etc`}
	existing := onHost(nil)
	existing.Instance = built(existing.Name, g.Template, Policy{}, InstanceConfig{})
	existing.Attached = existing.Instance.Current.Disks
	p := PlanGroup(state(g), []Observed{existing}, Env{Volumes: map[string]bool{"db-1-boot.qcow2": true, "db-1-data.qcow2": true}, Images: map[string]HostImage{DefaultHost: bad}})
	want := []Blocked{{Name: "db-2", Problem: `source_image "/srv/images/link.img" cannot be copied into the group's pool on host default: "/srv/images/link.img" resolves to /etc/shadow, under /etc`}}
	if diff := cmp.Diff(want, p.Blocked); diff != "" {
		t.Errorf("Blocked (-want +got):\n%s", diff)
	}
}

func TestAddImages(t *testing.T) {
	t.Parallel()
	a := HostImage{Source: "/srv/a.img", Volume: "db-image-a.raw"}
	b := HostImage{Source: "/srv/b.img", Volume: "db-image-b.raw"}
	s := GroupState{Images: map[string][]HostImage{DefaultHost: {a}}}
	tests := map[string]struct {
		add     map[string][]HostImage
		want    map[string][]HostImage
		changed bool
	}{
		"nothing new":  {map[string][]HostImage{DefaultHost: {a}}, map[string][]HostImage{DefaultHost: {a}}, false},
		"another":      {map[string][]HostImage{DefaultHost: {b}}, map[string][]HostImage{DefaultHost: {a, b}}, true},
		"another host": {map[string][]HostImage{"h2": {a}}, map[string][]HostImage{DefaultHost: {a}, "h2": {a}}, true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, changed := s.AddImages(tt.add)
			if diff := cmp.Diff(tt.want, got); diff != "" || changed != tt.changed {
				t.Errorf("AddImages changed=%v (want %v) (-want +got):\n%s", changed, tt.changed, diff)
			}
		})
	}
}

func TestRecordedImage(t *testing.T) {
	t.Parallel()
	old := HostImage{Source: "/srv/a.img", Volume: "db-image-1.raw"}
	latest := HostImage{Source: "/srv/a.img", Volume: "db-image-2.raw"}
	s := GroupState{Images: map[string][]HostImage{DefaultHost: {old, {Source: "/srv/b.img", Volume: "db-image-3.raw"}, latest}}}
	if got, ok := s.RecordedImage("", "/srv/a.img"); !ok || got != latest {
		t.Errorf("RecordedImage = %+v, %v; want the latest copy %+v", got, ok, latest)
	}
	if _, ok := s.RecordedImage("h2", "/srv/a.img"); ok {
		t.Errorf("RecordedImage found a copy on a host that has none")
	}
}
