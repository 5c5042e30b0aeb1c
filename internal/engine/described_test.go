package engine

import (
	"testing"
	"time"
)

// Described reads a record left from before a change of the description alone as on the template
// the domain's description completes, when that is the template planned or one the group had,
// and only then: every other record is returned as it was written.
func TestDescribed(t *testing.T) {
	t.Parallel()
	newer := base()
	newer.Description = "new"
	later := newer
	later.VCPU = 2
	wider := newer
	wider.MemoryMiB = 256
	tests := []struct {
		name    string
		change  func(o *Observed) // to a member built from base() whose domain has "new"
		planned Template          // the template planned
		had     []Template        // the templates the group had
		want    *Template         // the template it is read as on; nil: as recorded
	}{
		{name: "description written, record not", planned: newer, want: &newer},
		{name: "then a template that changes more: the one the group had", planned: later, had: []Template{base(), newer}, want: &newer},
		{name: "then a template that changes more, the group's history lost", planned: later},
		{name: "a description no template had", change: func(o *Observed) { d := "edited"; o.Description = &d }, planned: newer, had: []Template{base(), newer}},
		{name: "the host has the record's description", change: func(o *Observed) { d := ""; o.Description = &d }, planned: newer},
		{name: "description not read", change: func(o *Observed) { o.Description = nil }, planned: newer},
		{name: "the planned template differs by more than the description", planned: wider},
		{name: "a change in flight", change: func(o *Observed) {
			target := o.Instance.Current
			o.Instance.InFlight, o.Instance.InFlightAction = &target, ActionRefresh
		}, planned: newer},
		{name: "a record that does not say its template was applied", change: func(o *Observed) { o.Instance.LastAppliedHash = "other" }, planned: newer},
		{name: "heals counted", change: func(o *Observed) { o.Instance.Heals = 1 }, planned: newer},
		{name: "an adopted domain", change: func(o *Observed) { o.Instance.Template.Adopted = true }, planned: newer},
		{name: "a domain no provider created", change: func(o *Observed) { o.Unmanaged = true }, planned: newer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := observed(base(), StatusRunning, 1)[0]
			o.Instance.Created, o.Instance.LastHeal = 42, 7
			d := "new"
			o.Description = &d
			if tt.change != nil {
				tt.change(&o)
			}
			var had []string
			for _, h := range tt.had {
				had = append(had, h.Revision())
			}
			got := Described(o, tt.planned.Revision(), had)
			if tt.want == nil {
				if !sameInstance(got, o.Instance) {
					t.Fatalf("read as %+v, want the record as written %+v", got, o.Instance)
				}
				return
			}
			rebuilt := built(o.Name, *tt.want, Policy{}, InstanceConfig{})
			rebuilt.Created, rebuilt.LastHeal = 42, 7
			if !sameInstance(got, rebuilt) || got.TemplateRevision != tt.want.Revision() {
				t.Fatalf("read as %+v, want the member built from %+v", got, rebuilt)
			}
		})
	}
}

// SetGroup keeps the revisions of the group's templates, the current one last, each once, up to
// maxTemplateRevisions.
func TestSetGroup_keepsTheTemplateRevisions(t *testing.T) {
	t.Parallel()
	var s GroupState
	g := group(1)
	var want []string
	for i := range maxTemplateRevisions + 5 {
		g.Template.VCPU = int64(i + 1)
		s.SetGroup(g)
		want = append(want, g.Template.Revision())
	}
	g.Template.VCPU = maxTemplateRevisions + 2 // a template the group had: it moves to the end
	s.SetGroup(g)
	want = append(want[:maxTemplateRevisions+1], append(want[maxTemplateRevisions+2:], want[maxTemplateRevisions+1])...)
	want = want[len(want)-maxTemplateRevisions:]
	if len(s.TemplateRevisions) != maxTemplateRevisions || s.TemplateRevisions[0] != want[0] || s.TemplateRevisions[maxTemplateRevisions-1] != g.Template.Revision() {
		t.Fatalf("revisions %v, want %v", s.TemplateRevisions, want)
	}
	for i := range want {
		if s.TemplateRevisions[i] != want[i] {
			t.Fatalf("revision %d is %s, want %s", i, s.TemplateRevisions[i], want[i])
		}
	}
	if s.Group.Template.VCPU != maxTemplateRevisions+2 {
		t.Fatalf("group not set: %+v", s.Group)
	}
}

// A member autohealing gave up on gets a change of the description alone: the plan starts it and
// its heal count again, writing the record. When that record write fails after the description
// was written, the next plan still sees the change and does both.
func TestDescribed_healResetSurvivesAFailedRecordWrite(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	g := group(1)
	g.AutoHealing = &AutoHealing{InitialDelay: "0s", Backoff: "60s", MaxConsecutiveFailures: 2}
	g.Template.Description = "new"
	o := onHost(func(o *Observed) {
		o.Status, o.StateReason = StatusStopped, StateReasonCrashed
		o.Instance.Heals, o.Instance.LastHeal = 2, now.Add(-time.Minute).UnixMilli()
	})
	for _, host := range []string{"", "new"} { // before the description write, and after it
		o.Description = &host
		p := PlanGroup(state(g), []Observed{o}, Env{Now: now})
		if len(p.Steps) != 1 || !p.Steps[0].ResetHeals || len(p.Waves) != 1 || !p.Waves[0].Ops[0].Record {
			t.Fatalf("host description %q: planned %q, steps %+v; want the heal count reset and the record written", host, p.Final[0].Planned.String(), p.Steps)
		}
	}
}
