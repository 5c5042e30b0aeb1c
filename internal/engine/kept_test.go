package engine

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// deletedVolumes are the volumes that are there (env's listing) that a plan's tasks delete, as
// "host/name", in order: a deletion of what is not there (a target cleared first, a seed or a
// staged volume that may be left) takes nothing.
func deletedVolumes(p GroupPlan, there map[string][]string) []string {
	var out []string
	var walk func(op Operation, tasks []Task)
	walk = func(op Operation, tasks []Task) {
		for _, t := range tasks {
			if t.Kind == TaskDeleteVolume {
				h := op.Host
				if t.Host != "" {
					h = t.Host
				}
				if slices.Contains(there[HostOf(h)], t.Volume.Volume) {
					out = append(out, HostOf(h)+"/"+t.Volume.Volume)
				}
			}
			walk(op, t.Otherwise)
		}
	}
	for _, w := range p.Waves {
		for _, op := range w.Ops {
			walk(op, op.Early)
			walk(op, op.Tasks)
		}
	}
	return out
}

func vol(host, name string, reclaimed bool) Made {
	return Made{Kind: MadeVolume, Host: host, Name: name, Confirmed: true, Reclaimed: reclaimed}
}

// TestPlanDestroy_keptRecord: a destroy's kept record lists every volume of the inventory it
// does not delete: the member's NEVER disk, the disk an earlier scale-in kept, and a volume
// taken over from an earlier kept record that no policy preserves yet; never what it deletes or
// what the group did not make.
func TestPlanDestroy_keptRecord(t *testing.T) {
	t.Parallel()
	never := Policy{Disks: []PolicyDisk{{DeviceName: "data", DeleteRule: DeleteNever}}}
	tests := []struct {
		name      string
		policy    *Policy
		inv       Inventory
		volumes   []string
		wantKept  []Made
		wantGone  []string
		wantNamed []Left
	}{
		{
			name: "NEVER: the member's data disk and the one an earlier scale-in kept", policy: &never,
			inv:      kept("db-1-boot.qcow2", "db-1-data.qcow2", "db-2-data.qcow2"),
			volumes:  []string{"db-1-boot.qcow2", "db-1-data.qcow2", "db-2-data.qcow2", "db-3-data.qcow2"},
			wantKept: []Made{vol(DefaultHost, "db-1-data.qcow2", false), vol(DefaultHost, "db-2-data.qcow2", false)},
			wantGone: []string{"default/db-1-boot.qcow2"},
			// db-3-data.qcow2 was not made by the group: left, and not in the kept record.
			wantNamed: []Left{{Host: DefaultHost, Volume: "db-2-data.qcow2"}},
		},
		{
			name:     "no policy: stateless disks go, nothing is kept",
			inv:      kept("db-1-boot.qcow2", "db-1-data.qcow2"),
			volumes:  []string{"db-1-boot.qcow2", "db-1-data.qcow2"},
			wantGone: []string{"default/db-1-boot.qcow2", "default/db-1-data.qcow2"},
		},
		{
			name: "no policy yet (a tainted create): a Reclaimed disk stays, and is kept again",
			inv: Inventory{Kept: true, Items: []Made{vol(DefaultHost, "db-1-boot.qcow2", false), vol(DefaultHost, "db-1-data.qcow2", true),
				vol(DefaultHost, "db-2-data.qcow2", true)}},
			volumes:   []string{"db-1-boot.qcow2", "db-1-data.qcow2", "db-2-data.qcow2"},
			wantKept:  []Made{vol(DefaultHost, "db-1-data.qcow2", false), vol(DefaultHost, "db-2-data.qcow2", false)},
			wantGone:  []string{"default/db-1-boot.qcow2"},
			wantNamed: []Left{{Host: DefaultHost, Volume: "db-2-data.qcow2"}},
		},
		{
			name:     "a policy that deletes on permanent deletion clears the mark: the disk goes",
			policy:   &Policy{Disks: []PolicyDisk{{DeviceName: "data", DeleteRule: DeleteOnPermanentDeletion}}},
			inv:      Inventory{Kept: true, Items: []Made{vol(DefaultHost, "db-1-boot.qcow2", false), vol(DefaultHost, "db-1-data.qcow2", true)}},
			volumes:  []string{"db-1-boot.qcow2", "db-1-data.qcow2"},
			wantGone: []string{"default/db-1-boot.qcow2", "default/db-1-data.qcow2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := group(1)
			s := stateWith(g, tt.inv)
			s.Policy = tt.policy
			pol := Policy{}
			if tt.policy != nil {
				pol = *tt.policy
			}
			o := Observed{Name: "db-1", Index: 1, Status: StatusRunning, UUID: "uuid-1", Instance: built("db-1", g.Template, pol, InstanceConfig{})}
			p := PlanDestroy(s, []Observed{o}, map[string][]string{DefaultHost: tt.volumes}, Env{})
			if d := cmp.Diff(tt.wantKept, p.KeptRecord); d != "" {
				t.Errorf("kept record (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantGone, deletedVolumes(p, map[string][]string{DefaultHost: tt.volumes})); d != "" {
				t.Errorf("deleted (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantNamed, p.Kept); d != "" {
				t.Errorf("kept and named (-want +got):\n%s", d)
			}
		})
	}
}

// TestInventory_takeOver: the first record of a group takes the kept record's volumes, marked;
// the first plan confirms those on their host and drops those that are gone; an entry the
// inventory has already is not doubled; MergeKept lists each volume once.
func TestInventory_takeOver(t *testing.T) {
	t.Parallel()
	keptRec := []Made{vol("h2", "db-1-data.qcow2", false), vol(DefaultHost, "db-2-data.qcow2", false), vol(DefaultHost, "db-9-data.qcow2", false)}
	inv := Inventory{}.TakeOver(keptRec)
	want := Inventory{Kept: true, Items: []Made{vol(DefaultHost, "db-2-data.qcow2", true), vol(DefaultHost, "db-9-data.qcow2", true), vol("h2", "db-1-data.qcow2", true)}}
	if d := cmp.Diff(want, inv); d != "" {
		t.Errorf("taken over (-want +got):\n%s", d)
	}
	// db-9's volume went meanwhile (by hand): the first plan drops it.
	s := stateWith(group(2), inv)
	settled := s.Inventoried(nil, Env{HostVolumes: map[string][]string{DefaultHost: {"db-2-data.qcow2"}, "h2": {"db-1-data.qcow2"}}})
	want = Inventory{Kept: true, Items: []Made{vol(DefaultHost, "db-2-data.qcow2", true), vol("h2", "db-1-data.qcow2", true)}}
	if d := cmp.Diff(want, settled.Inventory); d != "" {
		t.Errorf("settled (-want +got):\n%s", d)
	}
	if d := cmp.Diff(inv, inv.TakeOver(keptRec)); d != "" {
		t.Errorf("taken twice (-want +got):\n%s", d)
	}
	merged := MergeKept(keptRec[:2], keptRec[1:])
	if d := cmp.Diff(Inventory{Items: keptRec}.sorted().Items, merged); d != "" {
		t.Errorf("merged (-want +got):\n%s", d)
	}
	if KeptRecordName("db") == "db" || NamePattern.MatchString(KeptRecordName("db")) || !IsKeptRecordName(KeptRecordName("db")) {
		t.Errorf("kept record name %q can be a group's", KeptRecordName("db"))
	}
}

// TestPlanGroup_reclaimedNeverDeletedButMoved: a Reclaimed data disk (no policy yet) is not
// deleted by a scale-in, and is copied by a move that then deletes its checked source, the copy
// Reclaimed too; once the policy preserves the disk the mark is gone from the record.
func TestPlanGroup_reclaimedNeverDeletedButMoved(t *testing.T) {
	t.Parallel()
	mark := func(inv Inventory) Inventory {
		for i := range inv.Items {
			inv.Items[i].Reclaimed = strings.HasSuffix(inv.Items[i].Name, "-data.qcow2")
		}
		return inv
	}
	t.Run("scale-in keeps it", func(t *testing.T) {
		t.Parallel()
		s := stateWith(group(1), mark(kept("db-1-boot.qcow2", "db-1-data.qcow2", "db-2-boot.qcow2", "db-2-data.qcow2")))
		env := Env{HostVolumes: map[string][]string{DefaultHost: {"db-1-boot.qcow2", "db-1-data.qcow2", "db-2-boot.qcow2", "db-2-data.qcow2"}}}
		p := PlanGroup(s, observed(base(), StatusRunning, 1, 2), env)
		if d := cmp.Diff([]string{"default/db-2-boot.qcow2"}, deletedVolumes(p, env.HostVolumes)); d != "" {
			t.Errorf("deleted (-want +got):\n%s", d)
		}
		if !p.FinalInventory.reclaimed(DefaultHost, "db-2-data.qcow2") {
			t.Errorf("db-2-data.qcow2 is not kept Reclaimed: %v", p.FinalInventory.Items)
		}
		if left := p.LeftVolumes(); len(left) > 0 {
			t.Errorf("a Reclaimed volume is named as not made by the group: %v", left)
		}
	})
	t.Run("a move copies it and deletes the source", func(t *testing.T) {
		t.Parallel()
		s := state(group(1))
		s.Group.Hosts, s.Group.Drain = []string{"h2", "default"}, []string{"h2"}
		s.Inventory = mark(Inventory{Kept: true, Items: []Made{{Kind: MadeDomain, Host: "h2", Name: "db-1", UUID: "uuid-1", Confirmed: true},
			vol("h2", "db-1-boot.qcow2", false), vol("h2", "db-1-data.qcow2", false)}})
		obs := onHosts(observed(base(), StatusStopped, 1), "h2")
		obs[0].UUID = "uuid-1"
		env := Env{HostVolumes: map[string][]string{"h2": {"db-1-boot.qcow2", "db-1-data.qcow2"}, DefaultHost: {}}}
		p := PlanGroup(s, obs, env)
		if len(p.Blocked) > 0 {
			t.Fatalf("blocked: %v", p.Blocked)
		}
		if d := cmp.Diff([]string{"h2/db-1-boot.qcow2", "h2/db-1-data.qcow2"}, deletedVolumes(p, env.HostVolumes)); d != "" {
			t.Errorf("deleted (-want +got):\n%s", d)
		}
		var vols []Made
		for _, m := range p.FinalInventory.Items {
			if m.Kind == MadeVolume {
				vols = append(vols, m)
			}
		}
		if d := cmp.Diff([]Made{vol(DefaultHost, "db-1-boot.qcow2", false), vol(DefaultHost, "db-1-data.qcow2", true)}, vols); d != "" {
			t.Errorf("volumes after the move (-want +got):\n%s", d)
		}
		if !slices.ContainsFunc(p.Inventory.Items, func(m Made) bool {
			return m.Host == DefaultHost && m.Name == "db-1-data.qcow2" && !m.Confirmed && m.Reclaimed
		}) {
			t.Errorf("the copy's intent is not Reclaimed: %v", p.Inventory.Items)
		}
	})
	t.Run("the policy preserves it: the mark is cleared", func(t *testing.T) {
		t.Parallel()
		s := stateWith(group(1), mark(kept("db-1-boot.qcow2", "db-1-data.qcow2")))
		s.Policy = &Policy{Disks: []PolicyDisk{{DeviceName: "data", DeleteRule: DeleteNever}}}
		settled := s.Inventoried(nil, Env{HostVolumes: map[string][]string{DefaultHost: {"db-1-boot.qcow2", "db-1-data.qcow2"}}})
		if d := cmp.Diff(kept("db-1-boot.qcow2", "db-1-data.qcow2"), settled.Inventory); d != "" {
			t.Errorf("settled (-want +got):\n%s", d)
		}
	})
}

// TestPlanGroup_moveOfAVolumeTheGroupDidNotMake: a member whose data volume the group did not
// make (reused by name, no kept record) is refused at plan when its host is drained, with the
// member, the volume, the host and the ways out; the drain undone, the plan is clean; a volume of
// the name on the target that the group did not make refuses the move too.
func TestPlanGroup_moveOfAVolumeTheGroupDidNotMake(t *testing.T) {
	t.Parallel()
	inv := Inventory{Kept: true, Items: []Made{{Kind: MadeDomain, Host: "h2", Name: "db-1", UUID: "uuid-1", Confirmed: true}, vol("h2", "db-1-boot.qcow2", false)}}
	obs := onHosts(observed(base(), StatusRunning, 1), "h2")
	obs[0].UUID = "uuid-1"
	tests := []struct {
		name    string
		drain   []string
		inv     Inventory
		target  []string
		blocked []Blocked
	}{
		{
			name: "drained: refused at plan", drain: []string{"h2"}, inv: inv,
			blocked: []Blocked{{Name: "db-1", Problem: "it cannot move from host h2 to host default: its volume db-1-data.qcow2 on host h2 was not made by this group (reused under the member's name, or made by hand), and a move deletes the source of each volume it copies, which the group never does to a volume it did not make. Keep the member where it is (take host h2 out of distribution_policy.drain, or back into distribution_policy.hosts), or move the data by hand (copy the volume to host default and delete it on host h2, virsh vol-delete) and apply again"}},
		},
		{name: "drain undone: clean", inv: inv},
		{
			name: "the target has a volume of the name the group did not make", drain: []string{"h2"},
			inv: Inventory{Kept: true, Items: append(slices.Clone(inv.Items), vol("h2", "db-1-data.qcow2", false))}, target: []string{"db-1-data.qcow2"},
			blocked: []Blocked{{Name: "db-1", Problem: "it cannot move from host h2 to host default: volume db-1-data.qcow2 is already on host default and was not made by this group, and a move never writes over a volume the group did not make. Keep the member where it is (take host h2 out of distribution_policy.drain, or back into distribution_policy.hosts), or delete or rename that volume on host default (virsh vol-delete) if it is garbage"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := stateWith(group(1), tt.inv)
			s.Group.Hosts, s.Group.Drain = []string{"h2", "default"}, tt.drain
			env := Env{HostVolumes: map[string][]string{"h2": {"db-1-boot.qcow2", "db-1-data.qcow2"}, DefaultHost: tt.target}}
			p := PlanGroup(s, obs, env)
			if d := cmp.Diff(tt.blocked, p.Blocked); d != "" {
				t.Errorf("blocked (-want +got):\n%s", d)
			}
			if len(tt.blocked) == 0 && (len(p.Waves) > 0 || len(p.Moves) > 0) {
				t.Errorf("plan not clean: waves %s", waveNames(p))
			}
		})
	}
}
