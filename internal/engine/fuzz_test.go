package engine

import (
	"maps"
	"testing"
)

// scenario builds a template, a policy and a config from fuzz bytes, over a small vocabulary of
// device names and metadata keys so that the three often name the same things.
func scenario(data []byte) (Template, Policy, InstanceConfig) {
	names := []string{"a", "b", "c", "d", BootDeviceName}
	keys := []string{"k1", "k2", "k3"}
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	t := Template{Shape: Shape{DomainType: "qemu", VCPU: 1, MemoryMiB: 64}, BootDisk: BootDisk{SizeMiB: 64}, Metadata: map[string]string{}}
	var p Policy
	c := InstanceConfig{Metadata: map[string]string{}}
	mask := next()
	for i, n := range names[:4] {
		if mask&(1<<i) != 0 {
			t.Disks = append(t.Disks, Disk{DeviceName: n, SizeMiB: int64(next()%8 + 1)})
		}
		if mask&(1<<(i+4)) != 0 {
			rule := DeleteRules[next()%2]
			p.Disks = append(p.Disks, PolicyDisk{DeviceName: n, DeleteRule: rule})
		}
	}
	for n := next() % 4; n > 0; n-- {
		name := names[next()%byte(len(names))]
		source := []string{"x.qcow2", "/srv/y.img", VolumeName("i-1", name)}[next()%3]
		c.Disks = append(c.Disks, ConfigDisk{DeviceName: name, Source: source, Mode: DiskModes[next()%2], DeleteRule: DeleteRules[next()%2]})
	}
	for _, k := range keys {
		switch next() % 3 {
		case 1:
			t.Metadata[k] = "t"
		case 2:
			c.Metadata[k] = "c"
		}
	}
	return t, p, c
}

func addSeeds(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0xff, 1, 2, 3, 4, 0, 1, 0, 1, 2, 3, 1, 0, 1, 1, 1, 1, 2, 1})
	f.Add([]byte{0x33, 5, 5, 1, 2, 1, 1, 0, 0, 2, 2, 2})
	f.Add([]byte{0x0f, 1, 1, 1, 1, 3, 4, 1, 0, 1, 0, 0, 2, 1, 2, 1, 0})
}

// FuzzPriority checks config > policy > template: every config entry is in the config part and
// in the desired domain as given; a policy entry appears only for a template disk the config does
// not name; metadata comes from the config, else from the template.
func FuzzPriority(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		tp, p, c := scenario(data)
		fromPolicy, fromConfig := Preserve("i-1", tp, p, c)
		d := Desire("i-1", tp, fromPolicy, fromConfig)
		for name, pd := range fromConfig.Disks {
			if _, dup := fromPolicy.Disks[name]; dup {
				t.Fatalf("%s is in both parts", name)
			}
			dd, ok := d.DiskByName(name)
			if !ok || dd.Source != pd.Source || !dd.Preserved {
				t.Fatalf("config disk %s not desired as given: %+v", name, dd)
			}
		}
		for name := range fromPolicy.Disks {
			if _, ok := tp.DiskByName(name); !ok {
				t.Fatalf("policy disk %s is not in the template", name)
			}
		}
		for k, v := range d.Metadata {
			want, ok := c.Metadata[k]
			if !ok {
				want, ok = tp.Metadata[k]
			}
			if !ok || v != want {
				t.Fatalf("metadata %s = %q, want %q", k, v, want)
			}
		}
		if len(d.Metadata) != len(mergedKeys(tp.Metadata, c.Metadata)) {
			t.Fatalf("metadata %v from template %v and config %v", d.Metadata, tp.Metadata, c.Metadata)
		}
	})
}

func mergedKeys(a, b map[string]string) map[string]bool {
	out := map[string]bool{}
	for k := range maps.Keys(a) {
		out[k] = true
	}
	for k := range maps.Keys(b) {
		out[k] = true
	}
	return out
}

// FuzzIdempotence checks that an instance already at its desired state needs NONE, and that
// computing the desired state again from the same inputs gives the same spec hash.
func FuzzIdempotence(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		tp, p, c := scenario(data)
		fromPolicy, fromConfig := Preserve("i-1", tp, p, c)
		d := Desire("i-1", tp, fromPolicy, fromConfig)
		if a, r := InstanceDiff(d, d); a != ActionNone || len(r) != 0 {
			t.Fatalf("an instance at its desired state needs %s (%v)", a, r)
		}
		plan := PlanInstance(ManagedInstance{Current: DesiredInstance{Name: "i-1"}}, tp, p, c, ActionNone, ActionReplace)
		again := PlanInstance(plan.Applied(tp), tp, p, c, ActionReplace, ActionReplace)
		if again.Action != ActionNone {
			t.Fatalf("applying a plan and planning again needs %s (%v)", again.Action, again.Reasons)
		}
		fromPolicy2, fromConfig2 := Preserve("i-1", tp, p, c)
		if again := Desire("i-1", tp, fromPolicy2, fromConfig2); again.Hash() != d.Hash() {
			t.Fatal("the same inputs gave another desired state")
		}
	})
}

// FuzzPreservedDiskSafety checks the volume operations of real plans: a member built with one
// policy and config, planned under another (a live update, a replacement, a scale-in, a group
// destroy). No volume that the member's record or its desired state preserves is ever recreated,
// and one is deleted only by a permanent deletion when every state that preserves it says
// ON_PERMANENT_INSTANCE_DELETION.
func FuzzPreservedDiskSafety(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		half := len(data) / 2
		tp, before, beforeConfig := scenario(data[:half])
		_, now, nowConfig := scenario(data[half:])
		mi := NewInstancePlan("i-1", tp, before, beforeConfig).Applied(tp)
		obs := []Observed{{Name: "i-1", Index: 1, Status: StatusRunning, Instance: mi, Attached: mi.Current.Disks}}
		s := GroupState{
			Group:   Group{Name: "i", Base: "i", TargetSize: 1, Running: true, Template: tp, Policy: DefaultUpdatePolicy()},
			Pool:    "p",
			Policy:  &now,
			Configs: map[string]ConfigEntry{"i-1": {Config: nowConfig}},
		}
		replace := s
		replace.Group.Template.BootDisk.SourceImage = "/images/other.qcow2"
		scaleIn := s
		scaleIn.Group.TargetSize = 0
		var volumes []string
		for _, d := range knownVolumes(obs[0]) {
			volumes = append(volumes, d.Source)
		}
		fromPolicy, fromConfig := Preserve("i-1", tp, now, nowConfig)
		desired := Desire("i-1", tp, fromPolicy, fromConfig)
		plans := map[string]GroupPlan{
			"update":   PlanGroup(s, obs, Env{}),
			"replace":  PlanGroup(replace, obs, Env{}),
			"scale-in": PlanGroup(scaleIn, obs, Env{}),
			"destroy":  PlanDestroy(s, obs, map[string][]string{DefaultHost: volumes}, Env{}),
		}
		for what, p := range plans {
			for _, w := range p.Waves {
				for _, op := range w.Ops {
					for _, v := range op.Volumes {
						preserved, never := false, false
						for _, st := range []DesiredInstance{mi.Current, desired} {
							for _, d := range st.Disks {
								if d.Source == v.Volume && d.Preserved {
									preserved = true
									never = never || d.DeleteRule != DeleteOnPermanentDeletion
								}
							}
						}
						switch {
						case !preserved:
						case v.Fate == Recreate:
							t.Fatalf("%s: preserved volume %s recreated by %s", what, v.Volume, op.Kind)
						case v.Fate == Delete && (op.Kind != OpDelete || never):
							t.Fatalf("%s: preserved volume %s (NEVER: %v) deleted by %s", what, v.Volume, never, op.Kind)
						}
					}
				}
			}
		}
	})
}
