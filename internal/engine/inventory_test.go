package engine

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestInventory_recovered: a run cut off anywhere is settled by the next plan from what the hosts
// show: an intent whose object is there is confirmed (a domain with the UUID it has), one whose
// object is absent is dropped, and so is a confirmed object that is gone; a host whose pool was
// not listed keeps its entries as they are.
func TestInventory_recovered(t *testing.T) {
	t.Parallel()
	member := observed(base(), StatusRunning, 1)[0]
	member.UUID = "uuid-1"
	cases := map[string]struct {
		items    []Made
		observed []Observed
		listing  Listing
		want     []Made
	}{
		"an intent whose volume was made is confirmed": {
			items:   []Made{{Kind: MadeVolume, Host: "default", Name: "db-1-boot.qcow2"}},
			listing: Listing{"default": {"db-1-boot.qcow2": true}},
			want:    []Made{{Kind: MadeVolume, Host: "default", Name: "db-1-boot.qcow2", Confirmed: true}},
		},
		"an intent whose volume was not made is dropped": {
			items:   []Made{{Kind: MadeVolume, Host: "default", Name: "db-1-boot.qcow2"}},
			listing: Listing{"default": {}},
		},
		"a confirmed volume that is gone is dropped": {
			items:   []Made{{Kind: MadeSeed, Host: "default", Name: "db-1-cidata.iso", Confirmed: true}},
			listing: Listing{"default": {"db-2-cidata.iso": true}},
		},
		"an NVRAM the listing does not show stays (libvirt writes it behind the pool's back)": {
			items:   []Made{{Kind: MadeNVRAM, Host: "default", Name: "db-1-nvram.fd"}},
			listing: Listing{"default": {}},
			want:    []Made{{Kind: MadeNVRAM, Host: "default", Name: "db-1-nvram.fd"}},
		},
		"a host not listed keeps its entries": {
			items:   []Made{{Kind: MadeVolume, Host: "h2", Name: "db-1-boot.qcow2"}},
			listing: Listing{"default": {}},
			want:    []Made{{Kind: MadeVolume, Host: "h2", Name: "db-1-boot.qcow2"}},
		},
		"a domain intent gets the UUID the member has": {
			items:    []Made{{Kind: MadeDomain, Host: "default", Name: "db-1"}},
			observed: []Observed{member},
			listing:  Listing{"default": {}},
			want:     []Made{{Kind: MadeDomain, Host: "default", Name: "db-1", UUID: "uuid-1", Confirmed: true}},
		},
		"a domain intent whose domain has another UUID is dropped": {
			items:    []Made{{Kind: MadeDomain, Host: "default", Name: "db-1", UUID: "uuid-planned"}},
			observed: []Observed{member},
			listing:  Listing{"default": {}},
		},
		"a domain of the member's name with another UUID is not the one the group made": {
			items:    []Made{{Kind: MadeDomain, Host: "default", Name: "db-1", UUID: "uuid-old", Confirmed: true}},
			observed: []Observed{member},
			listing:  Listing{"default": {}},
		},
		"a domain that is gone from a host that answered is dropped": {
			items:   []Made{{Kind: MadeDomain, Host: "default", Name: "db-1", UUID: "uuid-1", Confirmed: true}},
			listing: Listing{"default": {}},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := Inventory{Kept: true, Items: c.items}.recovered(c.observed, c.listing, nil)
			if d := cmp.Diff(Inventory{Kept: true, Items: c.want}.sorted(), got); d != "" {
				t.Errorf("recovered (-want +got):\n%s", d)
			}
		})
	}
}

// TestInventory_adopted: a record of an earlier release gains the objects it proves the group
// made: the member domains it placed, with the volumes of their own names that the group made
// from its template, their NVRAM and seed; nothing of a domain it did not place, of an adopted or
// abandoned member, nor a volume no member holds.
func TestInventory_adopted(t *testing.T) {
	t.Parallel()
	tpl := base()
	tpl.Firmware = FirmwareEFI
	tpl.CloudInit = &CloudInit{UserData: "#cloud-config"}
	ms := observed(tpl, StatusRunning, 1, 2, 3)
	for i := range ms {
		ms[i].UUID = fmt.Sprintf("uuid-%d", i+1)
		ms[i].Attached = ms[i].Instance.Current.Disks
	}
	ms[2].Instance.Template.Adopted = true
	g := group(3)
	g.Template = tpl
	s := state(g)
	s.Placed, s.Placement = true, map[string]string{"db-1": DefaultHost, "db-3": DefaultHost}
	got := s.adopted(ms)
	want := Inventory{Kept: true, Items: []Made{
		{Kind: MadeDomain, Host: "default", Name: "db-1", UUID: "uuid-1", Confirmed: true},
		{Kind: MadeVolume, Host: "default", Name: "db-1-boot.qcow2", Confirmed: true},
		{Kind: MadeSeed, Host: "default", Name: "db-1-cidata.iso", Confirmed: true},
		{Kind: MadeVolume, Host: "default", Name: "db-1-data.qcow2", Confirmed: true},
		{Kind: MadeNVRAM, Host: "default", Name: "db-1-nvram.fd", Confirmed: true},
		// db-2's domain is one the record never placed; db-3 was adopted: its disks are its own.
		{Kind: MadeDomain, Host: "default", Name: "db-3", UUID: "uuid-3", Confirmed: true},
	}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("adopted (-want +got):\n%s", d)
	}
}

// TestPlanGroup_inventoryIntentsAndConfirmations: a new member's objects are intents in the
// record write before the run (its domain with the UUID the plan gives its definition) and
// confirmed in the one after; a member scaled in leaves the inventory with its objects; a data
// volume reused under a new member's name (identity reuse) never enters it.
func TestPlanGroup_inventoryIntentsAndConfirmations(t *testing.T) {
	t.Parallel()
	uuids := 0
	env := Env{HostVolumes: map[string][]string{DefaultHost: {"db-2-data.qcow2"}}, NewUUID: func() string { uuids++; return fmt.Sprintf("uuid-%d", uuids) }}
	s := stateWith(group(2), Inventory{Kept: true})
	p := PlanGroup(s, nil, env)
	intent := func(kind MadeKind, name, uuid string) Made {
		return Made{Kind: kind, Host: DefaultHost, Name: name, UUID: uuid}
	}
	want := Inventory{Kept: true, Items: []Made{
		intent(MadeDomain, "db-1", "uuid-1"),
		intent(MadeVolume, "db-1-boot.qcow2", ""),
		intent(MadeVolume, "db-1-data.qcow2", ""),
		intent(MadeDomain, "db-2", "uuid-2"),
		intent(MadeVolume, "db-2-boot.qcow2", ""),
	}}
	if d := cmp.Diff(want, p.Inventory); d != "" {
		t.Errorf("before the run (-want +got):\n%s", d)
	}
	for i := range want.Items {
		want.Items[i].Confirmed = true
	}
	if d := cmp.Diff(want, p.FinalInventory); d != "" {
		t.Errorf("after the run (-want +got):\n%s", d)
	}
	// The reused data volume is attached as it is, and the scale-in leaves it (it is the
	// user's), naming it.
	s.Inventory = p.FinalInventory
	obs := observed(base(), StatusRunning, 1, 2)
	for i := range obs {
		obs[i].UUID = fmt.Sprintf("uuid-%d", i+1)
	}
	s.Group.TargetSize = 1
	env.HostVolumes[DefaultHost] = []string{"db-1-boot.qcow2", "db-1-data.qcow2", "db-2-boot.qcow2", "db-2-data.qcow2"}
	in := PlanGroup(s, obs, env)
	if d := cmp.Diff([]Left{{Host: DefaultHost, Volume: "db-2-data.qcow2"}}, in.LeftVolumes()); d != "" {
		t.Errorf("scale-in leaves (-want +got):\n%s", d)
	}
	var names []string
	for _, m := range in.FinalInventory.Items {
		names = append(names, m.Name)
	}
	if d := cmp.Diff([]string{"db-1", "db-1-boot.qcow2", "db-1-data.qcow2"}, names); d != "" {
		t.Errorf("after the scale-in (-want +got):\n%s", d)
	}
}

// TestPlanDestroy_leavesWhatTheGroupDidNotMake is the reported case: group g of one member,
// applied; volumes made by hand under the names of members 2, 3 and 5 (a boot volume, a data
// disk, an NVRAM) are left by the destroy and named, while every object the group made goes.
func TestPlanDestroy_leavesWhatTheGroupDidNotMake(t *testing.T) {
	t.Parallel()
	g := group(1)
	g.Base, g.Name = "g", "g"
	o := Observed{Name: "g-1", Index: 1, Status: StatusRunning, UUID: "uuid-1", Instance: built("g-1", g.Template, Policy{}, InstanceConfig{})}
	s := stateWith(g, kept("g-1-boot.qcow2", "g-1-data.qcow2"))
	volumes := map[string][]string{DefaultHost: {"g-1-boot.qcow2", "g-1-data.qcow2", "g-2-boot.qcow2", "g-3-data.qcow2", "g-5-nvram.fd"}}
	listed := map[string]bool{}
	for _, v := range volumes[DefaultHost] {
		listed[v] = true
	}
	p := PlanDestroy(s, []Observed{o}, volumes, Env{Volumes: listed})
	var deleted []string
	for _, w := range p.Waves {
		for _, op := range w.Ops {
			for _, task := range op.Tasks {
				if task.Kind == TaskDeleteVolume || task.Kind == TaskDeleteNVRAM {
					deleted = append(deleted, task.Volume.Volume)
				}
			}
		}
	}
	if d := cmp.Diff([]string{"g-1-boot.qcow2", "g-1-data.qcow2"}, deleted); d != "" {
		t.Errorf("deleted (-want +got):\n%s", d)
	}
	var left []string
	for _, l := range p.LeftVolumes() {
		left = append(left, l.String())
	}
	want := "g-2-boot.qcow2 on host default (not made by this group: left); g-3-data.qcow2 on host default (not made by this group: left); g-5-nvram.fd on host default (not made by this group: left)"
	if got := strings.Join(left, "; "); got != want {
		t.Errorf("left\n got %s\nwant %s", got, want)
	}
}

// TestPlanGroup_replaceRefusesOverWhatTheGroupDidNotMake: a replacement whose staged boot
// volume's name is taken by a volume the group did not make changes nothing of the member: its
// only task is the refusal, which names the volume.
func TestPlanGroup_replaceRefusesOverWhatTheGroupDidNotMake(t *testing.T) {
	t.Parallel()
	g := group(1)
	g.Template.BootDisk.SourceImage = "/images/new.qcow2"
	s := stateWith(g, kept("db-1-boot.qcow2", "db-1-data.qcow2"))
	env := Env{HostVolumes: map[string][]string{DefaultHost: {"db-1-boot.qcow2", "db-1-data.qcow2", "db-1-boot.staging.qcow2"}}}
	p := PlanGroup(s, observed(base(), StatusRunning, 1), env)
	op := p.Waves[0].Ops[0]
	if op.Kind != OpReplace || len(op.Tasks) != 1 || op.Tasks[0].Kind != TaskRefuse || len(op.Early) != 0 ||
		!strings.Contains(op.Tasks[0].Refusal, "db-1-boot.staging.qcow2 on host default") {
		t.Fatalf("replace tasks %v", tasksOf(op))
	}
}

// TestPlanGroup_theDestroyOfAPolicyOrConfigCreatesNothing: the apply of a policy's or a config's
// destroy (NoCreate) plans no creation, whatever members are missing (their records removed by
// hand, say): only the group's own apply creates members.
func TestPlanGroup_theDestroyOfAPolicyOrConfigCreatesNothing(t *testing.T) {
	t.Parallel()
	s := state(group(3))
	s.NoCreate = true
	p := PlanGroup(s, observed(base(), StatusRunning, 1), Env{})
	for _, w := range p.Waves {
		for _, op := range w.Ops {
			if op.Kind == OpCreate {
				t.Errorf("creates %s", op.Name)
			}
		}
	}
	if len(p.Create) != 0 || len(p.Creating) != 0 {
		t.Errorf("creates %v", p.Creating)
	}
	s.NoCreate = false
	if p := PlanGroup(s, observed(base(), StatusRunning, 1), Env{}); len(p.Create) != 2 {
		t.Errorf("the group's own apply creates %d members, want 2", len(p.Create))
	}
}

// TestPlanDestroy_namesWhatAnEarlierScaleInKept: an earlier scale-in kept db-2's data disk under
// the policy's NEVER rule; the destroy keeps it again and names it (Kept), beside the member's own
// NEVER disk (DestroyedMembers); a stateless leftover of the group's (a seed) goes and is not
// named.
func TestPlanDestroy_namesWhatAnEarlierScaleInKept(t *testing.T) {
	t.Parallel()
	g := group(1)
	g.Template.CloudInit = &CloudInit{}
	pol := Policy{Disks: []PolicyDisk{{DeviceName: "data", DeleteRule: DeleteNever}}}
	o := Observed{Name: "db-1", Index: 1, Status: StatusRunning, UUID: "uuid-1", Instance: built("db-1", g.Template, pol, InstanceConfig{})}
	s := stateWith(g, kept("db-1-boot.qcow2", "db-1-data.qcow2", "db-1-cidata.iso", "db-2-data.qcow2", "db-2-cidata.iso"))
	s.Policy = &pol
	volumes := map[string][]string{DefaultHost: {"db-1-boot.qcow2", "db-1-cidata.iso", "db-1-data.qcow2", "db-2-cidata.iso", "db-2-data.qcow2"}}
	p := PlanDestroy(s, []Observed{o}, volumes, Env{})
	if d := cmp.Diff([]Left{{Host: DefaultHost, Volume: "db-2-data.qcow2"}}, p.Kept); d != "" {
		t.Errorf("kept volumes no member holds (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]Destroyed{{Name: "db-1", Takedown: TakedownShutdown, Kept: []string{"db-1-data.qcow2"}}}, p.DestroyedMembers([]Observed{o})); d != "" {
		t.Errorf("destroyed members (-want +got):\n%s", d)
	}
	var deleted []string
	for _, w := range p.Waves {
		for _, op := range w.Ops {
			for _, task := range op.Tasks {
				if task.Kind == TaskDeleteVolume {
					deleted = append(deleted, task.Volume.Volume)
				}
			}
		}
	}
	if slices.Contains(deleted, "db-2-data.qcow2") || !slices.Contains(deleted, "db-2-cidata.iso") {
		t.Errorf("deleted %v: want db-2-cidata.iso and not db-2-data.qcow2", deleted)
	}
}
