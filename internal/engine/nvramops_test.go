package engine

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// efiGroup is group(size) booting with EFI.
func efiGroup(size int) Group {
	g := group(size)
	g.Template.Firmware = FirmwareEFI
	return g
}

// efiMember is a running member built from the EFI template, as the host shows it.
func efiMember(change func(o *Observed)) Observed {
	o := observed(efiGroup(1).Template, StatusRunning, 1)[0]
	o.Attached = slices.Clone(o.Instance.Current.Disks)
	o.VCPU, o.MemoryMiB = o.Instance.Current.VCPU, o.Instance.Current.MemoryMiB
	desc := o.Instance.Current.Description
	o.Description = &desc
	if change != nil {
		change(&o)
	}
	return o
}

// TestNVRAMTasks: an EFI member's NVRAM volume is made fresh before a new member's first
// definition (after the name is checked free) and after a replacement's undefinition, kept by a
// restart, deleted after the undefinition of a member deleted for good, and never touched when
// the member's record does not name it as its own.
func TestNVRAMTasks(t *testing.T) {
	t.Parallel()
	env := Env{Volumes: map[string]bool{"db-1-boot.qcow2": true, "db-1-data.qcow2": true, "db-1-nvram.fd": true}}
	cases := map[string]struct {
		plan  func() GroupPlan
		want  []string
		fate  Fate
		nvram string // the NVRAM the new definition names
	}{
		"create": {
			plan: func() GroupPlan { return PlanGroup(state(efiGroup(1)), nil, Env{}) },
			want: []string{
				"name-free", "delete-volume db-1-boot.qcow2", "create-volume db-1-boot.qcow2",
				"create-volume db-1-data.qcow2", "delete-volume db-1-boot.staging.qcow2", "delete-nvram db-1-nvram.fd",
				"define", "start",
			},
			fate: Recreate, nvram: "db-1-nvram.fd",
		},
		"restart keeps it": {
			plan: func() GroupPlan {
				g := efiGroup(1)
				g.Template.CPU = &CPU{Mode: CPUHostModel}
				return PlanGroup(state(g), []Observed{efiMember(nil)}, env)
			},
			want: []string{"mark", "define-next", "shutdown", "  otherwise power-off ", "stop-wait", "record", "start"},
			fate: Keep, nvram: "db-1-nvram.fd",
		},
		"replace makes it fresh": {
			plan: func() GroupPlan {
				g := efiGroup(1)
				g.Template.BootDisk.SourceImage = "/images/new.qcow2"
				return PlanGroup(state(g), []Observed{efiMember(nil)}, env)
			},
			want: []string{
				"mark", "delete-volume db-1-boot.staging.qcow2", "stage db-1-boot.staging.qcow2", "define-next",
				"shutdown", "  otherwise power-off ", "stop-wait", "undefine",
				"delete-volume db-1-boot.qcow2", "create-volume db-1-boot.qcow2", "delete-volume db-1-data.qcow2", "create-volume db-1-data.qcow2",
				"delete-nvram db-1-nvram.fd", "delete-volume db-1-boot.staging.qcow2", "define", "start",
			},
			fate: Recreate, nvram: "db-1-nvram.fd",
		},
		"efi to bios deletes it": {
			plan: func() GroupPlan { return PlanGroup(state(group(1)), []Observed{efiMember(nil)}, env) },
			want: []string{
				"mark", "delete-volume db-1-boot.staging.qcow2", "stage db-1-boot.staging.qcow2", "define-next", "shutdown", "  otherwise power-off ", "stop-wait", "undefine",
				"delete-volume db-1-boot.qcow2", "create-volume db-1-boot.qcow2", "delete-volume db-1-data.qcow2", "create-volume db-1-data.qcow2",
				"delete-nvram db-1-nvram.fd", "delete-volume db-1-boot.staging.qcow2", "define", "start",
			},
			fate: Delete,
		},
		"bios to efi": {
			plan: func() GroupPlan {
				s := state(efiGroup(1))
				s.Inventory = kept("db-1-boot.qcow2", "db-1-data.qcow2", "db-1-nvram.fd")
				return PlanGroup(s, []Observed{onHost(nil)}, env)
			},
			want: []string{
				"mark", "delete-volume db-1-boot.staging.qcow2", "stage db-1-boot.staging.qcow2", "define-next", "shutdown", "  otherwise power-off ", "stop-wait", "undefine",
				"delete-volume db-1-boot.qcow2", "create-volume db-1-boot.qcow2", "delete-volume db-1-data.qcow2", "create-volume db-1-data.qcow2",
				"delete-nvram db-1-nvram.fd", "delete-volume db-1-boot.staging.qcow2", "define", "start",
			},
			fate: Recreate, nvram: "db-1-nvram.fd",
		},
		// The pool has an NVRAM of the member's name that the group did not make (the BIOS
		// member has none): the change refuses before anything stops.
		"bios to efi over an NVRAM the group did not make": {
			plan: func() GroupPlan { return PlanGroup(state(efiGroup(1)), []Observed{onHost(nil)}, env) },
			want: []string{"refuse db-1-nvram.fd"},
			fate: Recreate, nvram: "",
		},
		"scale-in deletes it": {
			plan: func() GroupPlan { return PlanGroup(state(efiGroup(0)), []Observed{efiMember(nil)}, env) },
			want: []string{
				"early shutdown", "  otherwise power-off ", "stop-wait", "delete-nvram db-1-nvram.fd", "undefine",
				"delete-volume db-1-boot.qcow2", "delete-volume db-1-data.qcow2",
			},
			fate: Delete,
		},
		"destroy deletes it": {
			plan: func() GroupPlan { return PlanDestroy(state(efiGroup(1)), []Observed{efiMember(nil)}, nil, env) },
			want: []string{"early shutdown", "  otherwise power-off ", "stop-wait", "delete-nvram db-1-nvram.fd", "undefine", "delete-volume db-1-boot.qcow2", "delete-volume db-1-data.qcow2"},
			fate: Delete,
		},
		"a bios member's scale-in leaves a file of that name alone": {
			plan: func() GroupPlan { return PlanGroup(state(efiGroup(0)), []Observed{onHost(nil)}, env) },
			want: []string{"early shutdown", "  otherwise power-off ", "stop-wait", "undefine", "delete-volume db-1-boot.qcow2", "delete-volume db-1-data.qcow2"},
			fate: Keep,
		},
		"a record naming another volume is not believed": {
			plan: func() GroupPlan {
				return PlanGroup(state(efiGroup(0)), []Observed{efiMember(func(o *Observed) { o.Instance.Current.NVRAM = "db-2-nvram.fd" })}, env)
			},
			want: []string{"early shutdown", "  otherwise power-off ", "stop-wait", "undefine", "delete-volume db-1-boot.qcow2", "delete-volume db-1-data.qcow2"},
			fate: Keep,
		},
		"an interrupted change to efi makes it the member's": {
			plan: func() GroupPlan {
				return PlanGroup(state(group(0)), []Observed{onHost(func(o *Observed) {
					target := Desire(o.Name, efiGroup(1).Template, PreservedState{}, PreservedState{})
					o.Instance.InFlight = &target
				})}, env)
			},
			want: []string{"early shutdown", "  otherwise power-off ", "stop-wait", "delete-nvram db-1-nvram.fd", "undefine", "delete-volume db-1-boot.qcow2", "delete-volume db-1-data.qcow2"},
			fate: Delete,
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := c.plan()
			if len(p.Waves) == 0 || len(p.Waves[0].Ops) != 1 {
				t.Fatalf("want one operation first, got %d waves", len(p.Waves))
			}
			op := p.Waves[0].Ops[0]
			if diff := cmp.Diff(c.want, tasksOf(op)); diff != "" {
				t.Errorf("tasks (-want +got):\n%s", diff)
			}
			if op.NVRAM != c.fate {
				t.Errorf("NVRAM fate %s, want %s", op.NVRAM, c.fate)
			}
			for _, task := range op.Tasks {
				if (task.Kind == TaskDefine || task.Kind == TaskDefineNext) && task.Desired.NVRAM != c.nvram {
					t.Errorf("%s names NVRAM %q, want %q", task.Kind, task.Desired.NVRAM, c.nvram)
				}
			}
		})
	}
}

func TestNVRAMFate(t *testing.T) {
	t.Parallel()
	for e, want := range map[Event]Fate{Creation: Recreate, Recreation: Recreate, PermanentDeletion: Delete} {
		if got := NVRAMFate(e); got != want {
			t.Errorf("%s: %s, want %s", e, got, want)
		}
	}
}

// TestPlanDestroy_sweepsLeftNVRAM: the destroy deletes an NVRAM volume of a member's name that no
// domain holds (left by a deletion interrupted before it), but not one whose domain is there and
// not the member's own (an unmanaged domain of that name), an abandoned member's, or a file
// named after no member of the group.
func TestPlanDestroy_sweepsLeftNVRAM(t *testing.T) {
	t.Parallel()
	g := efiGroup(3)
	g.Abandon = []string{"db-3"}
	unmanaged := onHost(func(o *Observed) { o.Name, o.Unmanaged = "db-2", true })
	volumes := map[string][]string{DefaultHost: {NVRAMVolumeName("db-1"), NVRAMVolumeName("db-2"), NVRAMVolumeName("db-3"), NVRAMVolumeName("web-1"), "db-x-nvram.fd"}}
	s := state(g)
	s.Inventory = kept(volumes[DefaultHost]...)
	p := PlanDestroy(s, []Observed{unmanaged}, volumes, Env{})
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
	if d := cmp.Diff([]string{NVRAMVolumeName("db-1")}, deleted); d != "" {
		t.Errorf("deleted (-want +got):\n%s", d)
	}
}
