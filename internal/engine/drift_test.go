package engine

import (
	"slices"
	"strings"
	"testing"
)

// onHost is a member of base() as built, then changed on the host by change.
func onHost(change func(o *Observed)) Observed {
	o := observed(base(), StatusRunning, 1)[0]
	o.Attached = slices.Clone(o.Instance.Current.Disks)
	o.VCPU, o.MemoryMiB = o.Instance.Current.VCPU, o.Instance.Current.MemoryMiB
	desc := o.Instance.Current.Description
	o.Description = &desc
	if change != nil {
		change(&o)
	}
	return o
}

// planOnHost plans a group of one member, changed on the host by change, from its template
// changed by tmpl (either may be nil).
func planOnHost(change func(o *Observed), tmpl func(t *Template)) GroupPlan {
	g := group(1)
	if tmpl != nil {
		tmpl(&g.Template)
	}
	return PlanGroup(state(g), []Observed{onHost(change)}, Env{})
}

func TestDrift_plannedPerMemberWithTheLeastRepair(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		change  func(o *Observed)
		tmpl    func(t *Template)
		action  Action
		planned string // the step's planned text; "" when nothing is planned
	}{
		{name: "nothing changed", planned: ""},
		{name: "vcpu changed on the host", change: func(o *Observed) { o.VCPU = 2 },
			action: ActionRestart, planned: "RESTART: drift: vcpu 2 -> 1"},
		{name: "memory changed on the host", change: func(o *Observed) { o.MemoryMiB = 256 },
			action: ActionRestart, planned: "RESTART: drift: memory 256 -> 128 MiB"},
		{name: "data disk detached", change: func(o *Observed) { o.Attached = o.Attached[:1] },
			action: ActionRefresh, planned: "REFRESH: drift: disk data attached"},
		{name: "a disk attached behind our back", change: func(o *Observed) {
			o.Attached = append(o.Attached, DesiredDisk{DeviceName: "extra", Source: "x.qcow2"})
		}, action: ActionRefresh, planned: "REFRESH: drift: disk extra detached"},
		{name: "data disk swapped for another volume", change: func(o *Observed) {
			o.Attached[1].Source = "other.qcow2"
		}, action: ActionRefresh, planned: "REFRESH: drift: disk data swapped on the host"},
		{name: "data disk made read-only", change: func(o *Observed) { o.Attached[1].ReadOnly = true },
			action: ActionRefresh, planned: "REFRESH: drift: disk data swapped on the host"},
		{name: "description changed on the host", change: func(o *Observed) { edited := "edited"; o.Description = &edited },
			action: ActionNone, planned: "NONE: description"},
		{name: "boot volume deleted", change: func(o *Observed) { o.Missing = []string{"db-1-boot.qcow2"} },
			action: ActionReplace, planned: "REPLACE: drift: volume db-1-boot.qcow2 missing"},
		{name: "running member undefined on the host", change: func(o *Observed) { o.Transient = true },
			action: ActionNone, planned: "NONE: " + DefinitionGone},
		{name: "undefined on the host and its vcpu changed", change: func(o *Observed) { o.Transient = true; o.VCPU = 2 },
			action: ActionRestart, planned: "RESTART: drift: vcpu 2 -> 1, " + DefinitionGone},
		{name: "drift and a configured change, each named", change: func(o *Observed) { o.VCPU = 2 },
			tmpl: func(t *Template) { t.MemoryMiB = 256 }, action: ActionRestart, planned: "RESTART: drift: vcpu 2 -> 1, memory 128 -> 256 MiB"},
		{name: "a change in flight settles instead", change: func(o *Observed) {
			target := o.Instance.Current
			o.Instance.InFlight, o.Instance.InFlightAction = &target, ActionRefresh
			o.VCPU = 2
		}, action: ActionRefresh, planned: "REFRESH: interrupted REFRESH settled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := planOnHost(tt.change, tt.tmpl)
			if tt.planned == "" {
				if len(p.Steps) != 0 {
					t.Fatalf("steps %+v, want none", p.Steps)
				}
				return
			}
			if len(p.Steps) != 1 {
				t.Fatalf("steps %+v, want one", p.Steps)
			}
			st := p.Steps[0]
			if st.Action != tt.action || !strings.HasPrefix(st.Planned().String(), tt.planned) {
				t.Fatalf("planned %q (%v), want %q (%v)", st.Planned().String(), st.Action, tt.planned, tt.action)
			}
		})
	}
}

// A running member that lost its persistent definition is defined again by the operation that
// repairs it: first thing in a live change, which then writes its record as any change does; a
// restart or a replacement defines it anyway. A member with a change in flight is left to the
// settlement, as every drift is.
func TestDrift_undefinedMemberIsDefinedAgain(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		change     func(o *Observed)
		tmpl       func(t *Template)
		kind       OpKind
		define     bool
		wantRecord bool
	}{
		{name: "undefined while running", change: func(o *Observed) { o.Transient = true }, kind: OpLive, define: true, wantRecord: true},
		{name: "undefined, and metadata changed in the template", change: func(o *Observed) { o.Transient = true },
			tmpl: func(t *Template) { t.Metadata = map[string]string{"role": "other"} }, kind: OpLive, define: true, wantRecord: true},
		{name: "undefined, and memory changed in the template", change: func(o *Observed) { o.Transient = true },
			tmpl: func(t *Template) { t.MemoryMiB = 256 }, kind: OpRestart},
		{name: "undefined, and a change in flight", change: func(o *Observed) {
			o.Transient = true
			target := o.Instance.Current
			o.Instance.InFlight, o.Instance.InFlightAction = &target, ActionRefresh
		}, kind: OpLive, wantRecord: true},
		{name: "still defined, metadata changed", tmpl: func(t *Template) { t.Metadata = map[string]string{"role": "other"} }, kind: OpLive, wantRecord: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := planOnHost(tt.change, tt.tmpl)
			var ops []Operation
			for _, w := range p.Waves {
				ops = append(ops, w.Ops...)
			}
			if len(ops) != 1 {
				t.Fatalf("operations %+v, want one", ops)
			}
			op := ops[0]
			if op.Kind != tt.kind || op.Define != tt.define || op.Record != tt.wantRecord {
				t.Fatalf("operation %v define=%v record=%v, want %v define=%v record=%v", op.Kind, op.Define, op.Record, tt.kind, tt.define, tt.wantRecord)
			}
		})
	}
}

func TestDrift_adoptedAndUnmanagedDomainsHaveNone(t *testing.T) {
	t.Parallel()
	o := onHost(func(o *Observed) { o.VCPU = 4; o.Unmanaged = true })
	if mi, missing := Drift(o); mi.Current.VCPU != o.Instance.Current.VCPU || missing != nil {
		t.Fatalf("drift of an unmanaged domain: %+v %v", mi.Current, missing)
	}
}

// A live change writes the description only when the host does not have the desired one, and
// the record only when it changes more than the description (engine.Described reads a record
// left from before a description change as updated): a metadata or label change is one record
// write, a description change alone one description write.
func TestLiveOp_writesOnlyWhatTheHostLacks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		change     func(o *Observed)
		tmpl       func(t *Template)
		wantDesc   bool
		wantRecord bool
	}{
		{name: "metadata changed", tmpl: func(t *Template) { t.Metadata = map[string]string{"role": "other"} }, wantRecord: true},
		{name: "labels changed", tmpl: func(t *Template) { t.Labels = map[string]string{"team": "b"} }, wantRecord: true},
		{name: "description changed in the template", tmpl: func(t *Template) { t.Description = "new" }, wantDesc: true},
		{name: "description and metadata changed", tmpl: func(t *Template) { t.Description, t.Metadata = "new", map[string]string{"role": "other"} },
			wantDesc: true, wantRecord: true},
		{name: "description changed on the host", change: func(o *Observed) { edited := "edited"; o.Description = &edited }, wantDesc: true},
		{name: "description not read, metadata changed", change: func(o *Observed) { o.Description = nil },
			tmpl: func(t *Template) { t.Metadata = map[string]string{"role": "other"} }, wantDesc: true, wantRecord: true},
		{name: "description not read, description changed", change: func(o *Observed) { o.Description = nil },
			tmpl: func(t *Template) { t.Description = "new" }, wantDesc: true, wantRecord: true},
		{name: "host already has the new description", change: func(o *Observed) { edited := "new"; o.Description = &edited },
			tmpl: func(t *Template) { t.Description, t.Metadata = "new", map[string]string{"role": "other"} }, wantRecord: true},
		{name: "description changed on a member with heals counted", change: func(o *Observed) { o.Instance.Heals, o.Instance.LastHeal = 2, 1000 },
			tmpl: func(t *Template) { t.Description = "new" }, wantDesc: true, wantRecord: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := planOnHost(tt.change, tt.tmpl)
			var ops []Operation
			for _, w := range p.Waves {
				ops = append(ops, w.Ops...)
			}
			if len(ops) != 1 || ops[0].Kind != OpLive {
				t.Fatalf("operations %+v, want one live change", ops)
			}
			if ops[0].Description != tt.wantDesc || ops[0].Record != tt.wantRecord {
				t.Errorf("writes the description: %v, the record: %v; want %v and %v (%s)", ops[0].Description, ops[0].Record, tt.wantDesc, tt.wantRecord, ops[0].Reason)
			}
			if !ops[0].Record {
				// What the next plan reads is what the record write would have written.
				after := onHost(tt.change)
				after.Description = &ops[0].Step.Plan.Desired.Description
				st := ops[0].Step
				if got, want := Described(after, st.Template.Revision(), nil), st.Recorded(); !sameInstance(got, want) {
					t.Errorf("the record is read as\n%+v\nnot as the step would write it\n%+v", got, want)
				}
			}
		})
	}
}

// An interrupted change whose description the host already has is not told as drift: only a
// member with a record to drift from and no change in flight is compared with the host.
func TestDrift_inFlightDescriptionIsNotDrift(t *testing.T) {
	t.Parallel()
	p := planOnHost(func(o *Observed) {
		target := o.Instance.Current
		target.Description, target.Metadata = "new", map[string]string{"role": "web"}
		o.Instance.InFlight, o.Instance.InFlightAction = &target, ActionRefresh
		d := "new"
		o.Description = &d
	}, func(t *Template) { t.Description, t.Metadata = "new", map[string]string{"role": "web"} })
	if got := p.Final[0].Planned.String(); strings.Contains(got, "drift") || !strings.Contains(got, "description") {
		t.Errorf("planned %q, want the description as a configured change", got)
	}
}
