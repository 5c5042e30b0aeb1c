package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Templates and desired instances without graphics, rng or shares keep the revision and hash
// every earlier release wrote for them: the new keys are written only when set.
func TestDevices_unsetKeepEarlierRevisions(t *testing.T) {
	t.Parallel()
	for _, c := range canonTemplates() {
		tmpl := c.t
		tmpl.Graphics, tmpl.RNG, tmpl.Filesystems = nil, false, []Filesystem{}
		if got, want := tmpl.Revision(), goldenRevisions[c.name]; got != want {
			t.Errorf("%s: revision %s with the devices unset, want the earlier release's %s", c.name, got, want)
		}
	}
	for _, c := range canonDesired() {
		d := c.d
		d.Graphics, d.RNG, d.Filesystems = nil, false, nil
		if got, want := d.Hash(), goldenHashes[c.name]; got != want {
			t.Errorf("%s: hash %s with the devices unset, want the earlier release's %s", c.name, got, want)
		}
	}
}

func TestDevices_revision(t *testing.T) {
	t.Parallel()
	base := Template{Shape: Shape{DomainType: "qemu", VCPU: 1, MemoryMiB: 128}, BootDisk: BootDisk{SizeMiB: 1024}}
	with := func(f func(*Template)) Template {
		t := base
		f(&t)
		return t
	}
	shares := []Filesystem{{Source: "/srv/a", Target: "a"}, {Source: "/srv/b", Target: "b", ReadOnly: true}}
	variants := map[string]Template{
		"base":             base,
		"vnc":              with(func(t *Template) { t.Graphics = &Graphics{Type: GraphicsVNC, Listen: "127.0.0.1"} }),
		"spice":            with(func(t *Template) { t.Graphics = &Graphics{Type: GraphicsSpice, Listen: "127.0.0.1"} }),
		"vnc other listen": with(func(t *Template) { t.Graphics = &Graphics{Type: GraphicsVNC, Listen: "0.0.0.0"} }),
		"vnc password 1":   with(func(t *Template) { t.Graphics = &Graphics{Type: GraphicsVNC, Listen: "127.0.0.1", PasswordVersion: 1} }),
		"vnc password 2":   with(func(t *Template) { t.Graphics = &Graphics{Type: GraphicsVNC, Listen: "127.0.0.1", PasswordVersion: 2} }),
		"rng":              with(func(t *Template) { t.RNG = true }),
		"shares":           with(func(t *Template) { t.Filesystems = shares }),
		"share read-write": with(func(t *Template) { t.Filesystems = []Filesystem{{Source: "/srv/a", Target: "a"}} }),
		"tpm crb":          with(func(t *Template) { t.TPM = &TPM{Model: TPMModelCRB, Version: TPMVersion2} }),
		"tpm tis":          with(func(t *Template) { t.TPM = &TPM{Model: TPMModelTIS, Version: TPMVersion2} }),
	}
	seen := map[string]string{}
	for name, v := range variants {
		rev := v.Revision()
		if other, ok := seen[rev]; ok {
			t.Errorf("%s and %s have the same revision %s", name, other, rev)
		}
		seen[rev] = name
	}
	reordered := with(func(t *Template) { t.Filesystems = []Filesystem{shares[1], shares[0]} })
	if got, want := reordered.Revision(), variants["shares"].Revision(); got != want {
		t.Errorf("shares in another order: revision %s, want %s", got, want)
	}
}

func TestDevices_instanceDiff(t *testing.T) {
	t.Parallel()
	vnc := &Graphics{Type: GraphicsVNC, Listen: "127.0.0.1"}
	share := Filesystem{Source: "/srv/a", Target: "a"}
	tests := map[string]struct {
		current, desired DesiredInstance
		action           Action
		reasons          []string
	}{
		"nothing":           {DesiredInstance{Shape: Shape{Hardware: Hardware{Graphics: vnc, RNG: true, Filesystems: []Filesystem{share}}}}, DesiredInstance{Shape: Shape{Hardware: Hardware{Graphics: &Graphics{Type: GraphicsVNC, Listen: "127.0.0.1"}, RNG: true, Filesystems: []Filesystem{share}}}}, ActionNone, nil},
		"graphics added":    {DesiredInstance{}, DesiredInstance{Shape: Shape{Hardware: Hardware{Graphics: vnc}}}, ActionRestart, []string{"graphics added"}},
		"graphics removed":  {DesiredInstance{Shape: Shape{Hardware: Hardware{Graphics: vnc}}}, DesiredInstance{}, ActionRestart, []string{"graphics removed"}},
		"graphics type":     {DesiredInstance{Shape: Shape{Hardware: Hardware{Graphics: vnc}}}, DesiredInstance{Shape: Shape{Hardware: Hardware{Graphics: &Graphics{Type: GraphicsSpice, Listen: "127.0.0.1"}}}}, ActionRestart, []string{"graphics type vnc -> spice"}},
		"graphics listen":   {DesiredInstance{Shape: Shape{Hardware: Hardware{Graphics: vnc}}}, DesiredInstance{Shape: Shape{Hardware: Hardware{Graphics: &Graphics{Type: GraphicsVNC, Listen: "0.0.0.0"}}}}, ActionRestart, []string{"graphics listen 127.0.0.1 -> 0.0.0.0"}},
		"password set":      {DesiredInstance{Shape: Shape{Hardware: Hardware{Graphics: vnc}}}, DesiredInstance{Shape: Shape{Hardware: Hardware{Graphics: &Graphics{Type: GraphicsVNC, Listen: "127.0.0.1", PasswordVersion: 1}}}}, ActionRefresh, []string{"graphics password_wo_version 0 -> 1"}},
		"password bumped":   {DesiredInstance{Shape: Shape{Hardware: Hardware{Graphics: &Graphics{Type: GraphicsVNC, Listen: "127.0.0.1", PasswordVersion: 1}}}}, DesiredInstance{Shape: Shape{Hardware: Hardware{Graphics: &Graphics{Type: GraphicsVNC, Listen: "127.0.0.1", PasswordVersion: 2}}}}, ActionRefresh, []string{"graphics password_wo_version 1 -> 2"}},
		"password removed":  {DesiredInstance{Shape: Shape{Hardware: Hardware{Graphics: &Graphics{Type: GraphicsVNC, Listen: "127.0.0.1", PasswordVersion: 2}}}}, DesiredInstance{Shape: Shape{Hardware: Hardware{Graphics: vnc}}}, ActionRefresh, []string{"graphics password_wo_version 2 -> 0"}},
		"password and type": {DesiredInstance{Shape: Shape{Hardware: Hardware{Graphics: vnc}}}, DesiredInstance{Shape: Shape{Hardware: Hardware{Graphics: &Graphics{Type: GraphicsSpice, Listen: "127.0.0.1", PasswordVersion: 1}}}}, ActionRestart, []string{"graphics type vnc -> spice"}},
		"rng added":         {DesiredInstance{}, DesiredInstance{Shape: Shape{Hardware: Hardware{RNG: true}}}, ActionRestart, []string{"rng added"}},
		"rng removed":       {DesiredInstance{Shape: Shape{Hardware: Hardware{RNG: true}}}, DesiredInstance{}, ActionRestart, []string{"rng removed"}},
		"share added":       {DesiredInstance{}, DesiredInstance{Shape: Shape{Hardware: Hardware{Filesystems: []Filesystem{share}}}}, ActionRestart, []string{"filesystem share a added"}},
		"share removed":     {DesiredInstance{Shape: Shape{Hardware: Hardware{Filesystems: []Filesystem{share}}}}, DesiredInstance{}, ActionRestart, []string{"filesystem share a removed"}},
		"share source":      {DesiredInstance{Shape: Shape{Hardware: Hardware{Filesystems: []Filesystem{share}}}}, DesiredInstance{Shape: Shape{Hardware: Hardware{Filesystems: []Filesystem{{Source: "/srv/b", Target: "a"}}}}}, ActionRestart, []string{"filesystem share a changed"}},
		"share mode":        {DesiredInstance{Shape: Shape{Hardware: Hardware{Filesystems: []Filesystem{share}}}}, DesiredInstance{Shape: Shape{Hardware: Hardware{Filesystems: []Filesystem{{Source: "/srv/a", Target: "a", ReadOnly: true}}}}}, ActionRestart, []string{"filesystem share a changed"}},
		"tpm added":         {DesiredInstance{}, DesiredInstance{Shape: Shape{Hardware: Hardware{TPM: &TPM{Model: TPMModelCRB, Version: TPMVersion2}}}}, ActionRestart, []string{"tpm added"}},
		"tpm removed":       {DesiredInstance{Shape: Shape{Hardware: Hardware{TPM: &TPM{Model: TPMModelCRB, Version: TPMVersion2}}}}, DesiredInstance{}, ActionRestart, []string{"tpm removed"}},
		"tpm model":         {DesiredInstance{Shape: Shape{Hardware: Hardware{TPM: &TPM{Model: TPMModelCRB, Version: TPMVersion2}}}}, DesiredInstance{Shape: Shape{Hardware: Hardware{TPM: &TPM{Model: TPMModelTIS, Version: TPMVersion2}}}}, ActionRestart, []string{"tpm tpm-crb 2.0 -> tpm-tis 2.0"}},
		"tpm same":          {DesiredInstance{Shape: Shape{Hardware: Hardware{TPM: &TPM{Model: TPMModelCRB, Version: TPMVersion2}}}}, DesiredInstance{Shape: Shape{Hardware: Hardware{TPM: &TPM{Model: TPMModelCRB, Version: TPMVersion2}}}}, ActionNone, nil},
		"share renamed":     {DesiredInstance{Shape: Shape{Hardware: Hardware{Filesystems: []Filesystem{share}}}}, DesiredInstance{Shape: Shape{Hardware: Hardware{Filesystems: []Filesystem{{Source: "/srv/a", Target: "b"}}}}}, ActionRestart, []string{"filesystem share b added", "filesystem share a removed"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			action, reasons := InstanceDiff(tt.current, tt.desired)
			var got []string
			for _, r := range reasons {
				got = append(got, r.What)
			}
			if action != tt.action {
				t.Errorf("action %s, want %s", action, tt.action)
			}
			if diff := cmp.Diff(tt.reasons, got); diff != "" {
				t.Errorf("reasons (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGraphicsPasswordChanged(t *testing.T) {
	t.Parallel()
	g := func(typ string, v int64) *Graphics {
		return &Graphics{Type: typ, Listen: "127.0.0.1", PasswordVersion: v}
	}
	tests := map[string]struct {
		current, desired *Graphics
		want             bool
	}{
		"no graphics":        {nil, nil, false},
		"added":              {nil, g(GraphicsVNC, 1), false},
		"same version":       {g(GraphicsVNC, 1), g(GraphicsVNC, 1), false},
		"new version":        {g(GraphicsVNC, 1), g(GraphicsVNC, 2), true},
		"type and version":   {g(GraphicsVNC, 1), g(GraphicsSpice, 2), false},
		"password dropped":   {g(GraphicsSpice, 3), g(GraphicsSpice, 0), true},
		"graphics removed":   {g(GraphicsVNC, 1), nil, false},
		"version on spice 1": {g(GraphicsSpice, 0), g(GraphicsSpice, 1), true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := GraphicsPasswordChanged(DesiredInstance{Shape: Shape{Hardware: Hardware{Graphics: tt.current}}}, DesiredInstance{Shape: Shape{Hardware: Hardware{Graphics: tt.desired}}}); got != tt.want {
				t.Errorf("GraphicsPasswordChanged = %t, want %t", got, tt.want)
			}
		})
	}
}

// TestDevices_tasks: a new password version is one live task on the running member, before its
// record, with no stop and no marker (setting the password again is harmless); rng and shares
// restart it.
func TestDevices_tasks(t *testing.T) {
	t.Parallel()
	noSeed := Env{Volumes: map[string]bool{"db-1-boot.qcow2": true, "db-1-data.qcow2": true}}
	console := func(v int64) *Graphics { return &Graphics{Type: GraphicsVNC, Listen: "127.0.0.1", PasswordVersion: v} }
	cases := map[string]struct {
		before, after func(*Template)
		want          []string
	}{
		"password version": {
			before: func(t *Template) { t.Graphics = console(1) },
			after:  func(t *Template) { t.Graphics = console(2) },
			want:   []string{"graphics-password", "record"},
		},
		"rng added": {
			after: func(t *Template) { t.RNG = true },
			want:  []string{"mark", "define-next", "shutdown", "  otherwise power-off ", "stop-wait", "record", "start"},
		},
		"share added": {
			after: func(t *Template) { t.Filesystems = []Filesystem{{Source: "/srv/a", Target: "a"}} },
			want:  []string{"mark", "define-next", "shutdown", "  otherwise power-off ", "stop-wait", "record", "start"},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			before := base()
			if c.before != nil {
				c.before(&before)
			}
			o := observed(before, StatusRunning, 1)[0]
			o.Attached = o.Instance.Current.Disks
			o.VCPU, o.MemoryMiB = o.Instance.Current.VCPU, o.Instance.Current.MemoryMiB
			desc := o.Instance.Current.Description
			o.Description = &desc
			g := group(1)
			g.Template = before
			c.after(&g.Template)
			p := PlanGroup(state(g), []Observed{o}, noSeed)
			var ops []Operation
			for _, w := range p.Waves {
				ops = append(ops, w.Ops...)
			}
			if len(ops) != 1 {
				t.Fatalf("%d operations, want 1: %+v", len(ops), ops)
			}
			if diff := cmp.Diff(c.want, tasksOf(ops[0])); diff != "" {
				t.Errorf("tasks (-want +got):\n%s", diff)
			}
		})
	}
}
