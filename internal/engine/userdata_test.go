package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A new user_data_wo_version is a user data change, as a change of user_data is: REPLACE, named
// after the attribute. The same version is no change, whatever the value (the engine never sees
// it).
func TestUserData_instanceDiff(t *testing.T) {
	t.Parallel()
	ci := func(userData string, version int64) DesiredInstance {
		return DesiredInstance{Shape: Shape{CloudInit: &CloudInit{UserData: userData, UserDataWOVersion: version}}}
	}
	tests := map[string]struct {
		current, desired DesiredInstance
		action           Action
		reasons          []string
	}{
		"same version":              {ci("", 1), ci("", 1), ActionNone, nil},
		"new version":               {ci("", 1), ci("", 2), ActionReplace, []string{"cloud_init user_data_wo_version 1 -> 2"}},
		"version lowered":           {ci("", 3), ci("", 2), ActionReplace, []string{"cloud_init user_data_wo_version 3 -> 2"}},
		"user_data to user_data_wo": {ci("#cloud-config\n", 0), ci("", 1), ActionReplace, []string{"cloud_init user_data_wo_version 0 -> 1"}},
		"user_data_wo to user_data": {ci("", 1), ci("#cloud-config\n", 0), ActionReplace, []string{"cloud_init user_data_wo_version 1 -> 0"}},
		"user_data changed":         {ci("a", 0), ci("b", 0), ActionReplace, []string{"cloud_init user_data changed"}},
		"cloud_init added with wo":  {DesiredInstance{}, ci("", 1), ActionReplace, []string{"cloud_init added"}},
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

// The version is part of the template's revision and the member's hash (so that a new one is
// recorded), and a template without it keeps the revision it had before the attribute existed
// (TestDevices_unsetKeepEarlierRevisions covers the goldens).
func TestUserData_revision(t *testing.T) {
	t.Parallel()
	revs := map[string]string{}
	for name, c := range map[string]*CloudInit{"none": nil, "user_data": {UserData: "x"}, "wo 1": {UserDataWOVersion: 1}, "wo 2": {UserDataWOVersion: 2}} {
		tpl := base()
		tpl.CloudInit = c
		rev := tpl.Revision()
		for other, r := range revs {
			if r == rev {
				t.Errorf("%s and %s have the same revision", name, other)
			}
		}
		revs[name] = rev
	}
}

// seedKeepsUserData: the member's seed holds the write-only user data of the desired version
// only when its record says so, no change in flight may have written another, and the volume is
// there.
func TestSeedKeepsUserData(t *testing.T) {
	t.Parallel()
	withVersion := func(v int64) DesiredInstance {
		return DesiredInstance{Name: "db-1", Shape: Shape{CloudInit: &CloudInit{UserDataWOVersion: v}}}
	}
	obs := func(current DesiredInstance, inFlight *DesiredInstance) Observed {
		return Observed{Name: "db-1", Instance: ManagedInstance{Current: current, InFlight: inFlight}}
	}
	tests := map[string]struct {
		o       Observed
		desired DesiredInstance
		want    bool
	}{
		"same version":                      {obs(withVersion(1), nil), withVersion(1), true},
		"not write-only":                    {obs(withVersion(0), nil), withVersion(0), false},
		"no cloud-init":                     {obs(DesiredInstance{}, nil), DesiredInstance{}, false},
		"a new version":                     {obs(withVersion(1), nil), withVersion(2), false},
		"seed had no cloud-init":            {obs(DesiredInstance{Name: "db-1"}, nil), withVersion(1), false},
		"in flight to another version":      {obs(withVersion(1), &DesiredInstance{Shape: Shape{CloudInit: &CloudInit{UserDataWOVersion: 2}}}), withVersion(1), false},
		"in flight without cloud-init":      {obs(withVersion(1), &DesiredInstance{}), withVersion(1), false},
		"in flight to the same version":     {obs(withVersion(1), &DesiredInstance{Shape: Shape{CloudInit: &CloudInit{UserDataWOVersion: 1}}}), withVersion(1), true},
		"seed volume missing":               {Observed{Name: "db-1", SeedMissing: true, Instance: ManagedInstance{Current: withVersion(1)}}, withVersion(1), false},
		"unmanaged domain of the same name": {Observed{Name: "db-1", Unmanaged: true, Instance: ManagedInstance{Current: withVersion(1)}}, withVersion(1), false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := seedKeepsUserData(tt.o, tt.desired); got != tt.want {
				t.Errorf("seedKeepsUserData = %t, want %t", got, tt.want)
			}
		})
	}
}

// The seed tasks of a plan say whether the member's current seed may give the user data: a
// metadata change (a live swap) or another replacement of a member on the same version may; a
// new version, a seed volume that is gone and a new member may not (only the group's apply can
// write those).
func TestUserData_seedTasks(t *testing.T) {
	t.Parallel()
	wo := func(v int64) func(*Template) {
		return func(t *Template) { t.CloudInit = &CloudInit{UserDataWOVersion: v} }
	}
	cases := map[string]struct {
		before, after func(*Template)
		seedMissing   bool
		size          int
		want          map[string]bool // member -> UserDataFromSeed of its seed task
	}{
		"metadata (live swap)": {before: wo(1), after: func(t *Template) { wo(1)(t); t.Metadata = map[string]string{"role": "web"} }, want: map[string]bool{"db-1": true}},
		"boot image (replace)": {before: wo(1), after: func(t *Template) { wo(1)(t); t.BootDisk.SourceImage = "/img.qcow2" }, want: map[string]bool{"db-1": true}},
		"new version":          {before: wo(1), after: wo(2), want: map[string]bool{"db-1": false}},
		"seed volume missing":  {before: wo(1), after: wo(1), seedMissing: true, want: map[string]bool{"db-1": false}},
		"scale-out":            {before: wo(1), after: wo(1), size: 2, want: map[string]bool{"db-2": false}},
		"not write-only":       {before: func(t *Template) { t.CloudInit = &CloudInit{UserData: "a"} }, after: func(t *Template) { t.CloudInit = &CloudInit{UserData: "b"} }, want: map[string]bool{"db-1": false}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			before := base()
			c.before(&before)
			o := observed(before, StatusRunning, 1)[0]
			o.Attached = o.Instance.Current.Disks
			o.VCPU, o.MemoryMiB = o.Instance.Current.VCPU, o.Instance.Current.MemoryMiB
			desc := o.Instance.Current.Description
			o.Description, o.SeedMissing = &desc, c.seedMissing
			g := group(max(c.size, 1))
			g.Template = before
			c.after(&g.Template)
			p := PlanGroup(state(g), []Observed{o}, Env{Volumes: map[string]bool{"db-1-boot.qcow2": true, "db-1-data.qcow2": true, "db-1-cidata.iso": !c.seedMissing}})
			got := map[string]bool{}
			for _, w := range p.Waves {
				for _, op := range w.Ops {
					for _, task := range op.Tasks {
						if task.Kind == TaskWriteSeed || task.Kind == TaskSwapSeed {
							got[op.Name] = task.UserDataFromSeed
						}
					}
				}
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("UserDataFromSeed of the seed tasks by member (-want +got):\n%s", diff)
			}
		})
	}
}
