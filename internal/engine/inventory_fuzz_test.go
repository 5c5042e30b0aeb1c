package engine

import (
	"fmt"
	"slices"
	"testing"
)

// inventoryScenario is a random group with hand-made volumes in its pools, from fuzz bytes:
// members on two hosts whose own objects the inventory holds, and, on every host, volumes made by
// hand under the names the group's scheme gives members of any index (boot, data and other disks,
// NVRAM, seed, staged boot), which it does not.
type inventoryScenario struct {
	s        GroupState
	observed []Observed
	volumes  map[string][]string
	// handMade are the hand-made volumes, by "host/name".
	handMade map[string]bool
	// plans are the plans made: a change of size, template, firmware or distribution, and a
	// destroy.
	plans map[string]GroupPlan
}

func newInventoryScenario(data []byte) inventoryScenario {
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	hosts := []string{DefaultHost, "h2"}
	g := group(int(next() % 6))
	g.Hosts = hosts
	if next()%2 == 0 {
		g.Template.CloudInit = &CloudInit{UserData: "#cloud-config"}
	}
	efi := next()%3 == 0
	if efi {
		g.Template.Firmware = FirmwareEFI
	}
	s := state(g)
	s.Placed, s.Placement = true, map[string]string{}
	s.Inventory = Inventory{Kept: true}
	sc := inventoryScenario{volumes: map[string][]string{}, handMade: map[string]bool{}, plans: map[string]GroupPlan{}}
	made := map[string]bool{}
	add := func(kind MadeKind, host, name string) {
		s.Inventory.Items = append(s.Inventory.Items, Made{Kind: kind, Host: host, Name: name, Confirmed: true})
		sc.volumes[host] = append(sc.volumes[host], name)
		made[host+"/"+name] = true
	}
	// Members 1 to 5, each there or not, on a host of its own choice, built from the template.
	members := next()
	for i := 1; i <= 5; i++ {
		if members&(1<<(i-1)) == 0 {
			continue
		}
		host := hosts[int(next())%2]
		o := observed(g.Template, StatusRunning, i)[0]
		o.Host, o.UUID = host, fmt.Sprintf("uuid-%d", i)
		o.Attached = slices.Clone(o.Instance.Current.Disks)
		sc.observed = append(sc.observed, o)
		s.Placement[o.Name] = host
		s.Inventory.Items = append(s.Inventory.Items, Made{Kind: MadeDomain, Host: host, Name: o.Name, UUID: o.UUID, Confirmed: true})
		for _, d := range o.Instance.Current.Disks {
			add(MadeVolume, host, d.Source)
		}
		if o.Instance.Current.NVRAM != "" {
			add(MadeNVRAM, host, o.Instance.Current.NVRAM)
		}
		if o.Instance.Current.CloudInit != nil {
			add(MadeSeed, host, SeedVolumeName(o.Name))
		}
	}
	// Hand-made volumes under the scheme's names of members 1 to 8, on either host.
	for n := int(next() % 24); n > 0; n-- {
		instance := InstanceName(g.Base, 1+int(next())%8)
		var name string
		switch next() % 6 {
		case 0:
			name = VolumeName(instance, BootDeviceName)
		case 1:
			name = VolumeName(instance, "data")
		case 2:
			name = VolumeName(instance, "logs")
		case 3:
			name = NVRAMVolumeName(instance)
		case 4:
			name = SeedVolumeName(instance)
		default:
			name = StagingVolumeName(instance)
		}
		host := hosts[int(next())%2]
		if made[host+"/"+name] || sc.handMade[host+"/"+name] {
			continue
		}
		sc.handMade[host+"/"+name] = true
		sc.volumes[host] = append(sc.volumes[host], name)
	}
	sc.s = s
	env := Env{HostVolumes: sc.volumes, Hosts: hosts}
	// The plans: the group as it is (creations, scale-in), with a new boot image (replacements),
	// with the firmware switched, with a host drained (moves), and its destroy.
	sc.plans["size"] = PlanGroup(s, sc.observed, env)
	image := s
	image.Group.Template.BootDisk.SourceImage = "/images/new.qcow2"
	sc.plans["replace"] = PlanGroup(image, sc.observed, env)
	firmware := s
	if efi {
		firmware.Group.Template.Firmware = ""
	} else {
		firmware.Group.Template.Firmware = FirmwareEFI
	}
	sc.plans["firmware"] = PlanGroup(firmware, sc.observed, env)
	drained := s
	drained.Group.Drain = []string{hosts[int(next())%2]}
	drained.Group.ColdMoves = next()%2 == 0
	sc.plans["drain"] = PlanGroup(drained, sc.observed, env)
	sc.plans["destroy"] = PlanDestroy(s, sc.observed, sc.volumes, env)
	return sc
}

// touches lists what the operation's tasks do to a hand-made volume: delete it, write over it or
// attach it. A new member's stateless data disk of its own name reuses a volume that is there
// (identity reuse, DESIGN): that attachment is the contract, and the group never deletes it.
func (sc inventoryScenario) touches(op Operation) []string {
	var out []string
	var walk func(tasks []Task)
	walk = func(tasks []Task) {
		for _, t := range tasks {
			host := HostOf(op.Host)
			if t.Host != "" {
				host = HostOf(t.Host)
			}
			hand := func(v string) bool { return sc.handMade[host+"/"+v] }
			switch t.Kind {
			case TaskDeleteVolume, TaskDeleteNVRAM:
				if hand(t.Volume.Volume) {
					out = append(out, "deletes "+host+"/"+t.Volume.Volume)
				}
			case TaskFreshVolume, TaskStage, TaskCopyVolume, TaskPrepareVolume:
				if hand(t.Volume.Volume) {
					out = append(out, t.Kind.String()+" over "+host+"/"+t.Volume.Volume)
				}
			case TaskCreateVolume:
				reuse := op.Kind == OpCreate && t.Volume.DeviceName != BootDeviceName && t.Volume.Fate == Keep
				if hand(t.Volume.Volume) && !reuse {
					out = append(out, "creates over "+host+"/"+t.Volume.Volume)
				}
			case TaskWriteSeed, TaskSwapSeed:
				if hand(SeedVolumeName(op.Name)) {
					out = append(out, "writes the seed over "+host+"/"+SeedVolumeName(op.Name))
				}
			case TaskDefine, TaskDefineNext, TaskDefineAgain:
				if t.Desired.NVRAM != "" && hand(t.Desired.NVRAM) {
					out = append(out, "attaches the NVRAM "+host+"/"+t.Desired.NVRAM)
				}
				for _, d := range t.Desired.Disks {
					reuse := op.Kind == OpCreate && d.DeviceName != BootDeviceName && !d.Preserved
					if hand(d.Source) && !reuse {
						out = append(out, "attaches "+host+"/"+d.Source)
					}
				}
			default:
				// The rest touch no volume.
			}
			walk(t.Otherwise)
		}
	}
	walk(op.Early)
	walk(op.Tasks)
	return out
}

func (sc inventoryScenario) check(t *testing.T) {
	t.Helper()
	for name, p := range sc.plans {
		for _, w := range p.Waves {
			for _, op := range w.Ops {
				if got := sc.touches(op); len(got) > 0 {
					t.Errorf("%s plan: %s %s of %q: %v", name, op.Kind, op.Name, op.Host, got)
				}
			}
		}
		// What the plan writes into the inventory is only what it makes: never a hand-made
		// volume.
		for _, inv := range []Inventory{p.Inventory, p.FinalInventory} {
			for _, m := range inv.Items {
				if m.Kind != MadeDomain && sc.handMade[HostOf(m.Host)+"/"+m.Name] {
					t.Errorf("%s plan: the inventory takes in the hand-made %s/%s", name, m.Host, m.Name)
				}
			}
		}
	}
	// The destroy names every hand-made volume a sweep by name would have taken, and deletes
	// every one the group made that nothing protects.
	destroy := sc.plans["destroy"]
	if len(destroy.Blocked) > 0 {
		return
	}
	left := map[string]bool{}
	for _, l := range destroy.LeftVolumes() {
		left[l.Host+"/"+l.Volume] = true
	}
	for hv := range sc.handMade {
		if !left[hv] {
			t.Errorf("destroy does not name the hand-made %s as left (left: %v)", hv, destroy.LeftVolumes())
		}
	}
}

// FuzzInventory: for random pools holding hand-made volumes named like members of any index
// (boot, data and other disks, NVRAM, seed, staged boot), no plan (scale-out, scale-in,
// replacement, firmware switch, moves and their cleanup, destroy) deletes, writes over or attaches
// a volume outside the inventory, nor takes one into it; the destroy names each as left.
func FuzzInventory(f *testing.F) {
	for _, seed := range [][]byte{
		{3, 0, 0, 0x1f, 0, 1, 0, 1, 0, 20, 0, 0, 1, 1, 2, 0, 3, 1, 4, 0, 5, 1, 7, 2, 3, 3},
		{1, 1, 0, 0x05, 1, 0, 12, 1, 0, 0, 1, 3, 1, 5, 0, 7, 5, 2, 4},
		{0, 0, 1, 0x03, 0, 1, 9, 2, 0, 2, 1, 2, 3, 2, 4, 2, 5},
		{5, 1, 3, 0x00, 10, 0, 0, 1, 1, 3, 3, 4, 4, 5, 5},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		newInventoryScenario(data).check(t)
	})
}

// TestInventory_handMadeVolumesAreLeft runs FuzzInventory's check over every seed byte pattern
// of a small exhaustive range, so that `go test` covers it without -fuzz.
func TestInventory_handMadeVolumesAreLeft(t *testing.T) {
	t.Parallel()
	seen := map[string]int{}
	for a := range 6 {
		for members := 0; members < 32; members += 3 {
			for hand := range 4 {
				data := []byte{byte(a), byte(members), byte(hand), byte(members), byte(a), byte(hand), byte(8 + hand*4)}
				for i := range 24 {
					data = append(data, byte(i*7+a+hand), byte(i+members))
				}
				sc := newInventoryScenario(data)
				sc.check(t)
				if t.Failed() {
					t.Fatalf("data %v", data)
				}
				for _, p := range sc.plans {
					seen["left"] += len(p.LeftVolumes())
					for _, w := range p.Waves {
						for _, op := range w.Ops {
							seen[op.Kind.String()]++
							for _, task := range op.Tasks {
								if task.Kind == TaskRefuse {
									seen["refused"]++
								}
							}
						}
					}
				}
			}
		}
	}
	// The scenarios reach every kind of plan the check is about, and the guard acts in them.
	for _, what := range []string{"create", "delete", "replace", "move", "left", "refused"} {
		if seen[what] == 0 {
			t.Errorf("no scenario has a %s: %v", what, seen)
		}
	}
}
