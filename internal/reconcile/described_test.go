package reconcile

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// applied applies s as the provider does: the group record keeps the revision of every template
// the group had (engine.GroupState.SetGroup) before the members are changed.
func applied(t *testing.T, b *fake.Backend, s *engine.GroupState) {
	t.Helper()
	s.SetGroup(s.Group)
	apply(t, b, *s)
}

// After a change of the description alone (records left on the template before it), a later
// template change that is more than a description leaves the members on the template they have:
// an OPPORTUNISTIC group does not touch them, and a member the update policy blocks is shown on
// the template with the new description, not the one before it.
func TestApply_descriptionChangeThenAnother(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		then  func(s *engine.GroupState)
		steps int // planned steps for db-1
	}{
		{name: "opportunistic, vcpu changed", then: func(s *engine.GroupState) {
			s.Group.Policy.Type = engine.UpdateOpportunistic
			s.Group.Template.VCPU = 2
		}},
		{name: "restart not allowed, vcpu changed", then: func(s *engine.GroupState) {
			s.Group.Policy.MostDisruptiveAllowed = engine.ActionRefresh
			s.Group.Template.VCPU = 2
		}},
		{name: "opportunistic, a config's metadata for the member", steps: 1, then: func(s *engine.GroupState) {
			s.Group.Policy.Type = engine.UpdateOpportunistic
			s.Group.Template.VCPU = 2
			s.Configs = map[string]engine.ConfigEntry{"db-1": {Config: engine.InstanceConfig{Metadata: map[string]string{"k": "v"}},
				MinimalAction: engine.ActionNone, MostDisruptiveAllowed: engine.ActionReplace}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := fake.New()
			s := spec(1)
			applied(t, b, &s)
			s.Group.Template.Description = "new"
			applied(t, b, &s)
			described := s.Group.Template.Revision()
			tt.then(&s)
			s.SetGroup(s.Group)
			p, _, err := New(b).Preview(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Steps) != tt.steps || strings.Contains(p.Final[0].Planned.String(), "description") {
				t.Fatalf("planned %q (%d steps), want %d steps and no description change", p.Final[0].Planned.String(), len(p.Steps), tt.steps)
			}
			if len(p.Blocked) > 0 && p.Final[0].Revision != described {
				t.Errorf("the blocked member is shown on %s, want %s (the template with the new description)", p.Final[0].Revision, described)
			}
			b.Log = nil
			err = New(b).Apply(context.Background(), s)
			var blocked *BlockedError
			if err != nil && !errors.As(err, &blocked) {
				t.Fatal(err)
			}
			if d := b.Domains["db-1"].Spec.Description; d != "new" || slices.ContainsFunc(b.Log, func(l string) bool { return strings.HasPrefix(l, "set-description") }) {
				t.Errorf("description %q after it, writes %q; want \"new\" and no description write", d, b.Log)
			}
		})
	}
}

// Random template, policy, config and host changes, with failures injected at description and
// record writes: after every apply that succeeds the next plan has no step, and under PROACTIVE
// every member reads (Described) as built from what the group asks now, with the template's
// description on its domain.
func TestApply_descriptionWritesConverge(t *testing.T) {
	t.Parallel()
	for seed := int64(0); seed < 150; seed++ {
		rng := rand.New(rand.NewSource(seed))
		b := fake.New()
		s := spec(2)
		applied(t, b, &s)
		var hist []string
		for range 20 {
			switch rng.Intn(11) {
			case 0, 1, 2:
				s.Group.Template.Description = []string{"", "a", "b", "c"}[rng.Intn(4)]
				hist = append(hist, "desc="+s.Group.Template.Description)
			case 3:
				s.Group.Template.Metadata = map[string]string{"role": []string{"db", "web"}[rng.Intn(2)]}
				hist = append(hist, "meta")
			case 4:
				s.Group.Template.Labels = map[string]string{"team": []string{"a", "b"}[rng.Intn(2)]}
				hist = append(hist, "labels")
			case 5:
				if rng.Intn(2) == 0 {
					s.Configs = nil
				} else {
					s.Configs = map[string]engine.ConfigEntry{"db-1": {Config: engine.InstanceConfig{Metadata: map[string]string{"k": "v"}},
						MinimalAction: engine.ActionNone, MostDisruptiveAllowed: engine.ActionReplace}}
				}
				hist = append(hist, "config")
			case 6:
				if rng.Intn(2) == 0 {
					s.Policy = nil
				} else {
					s = withPolicy(s, engine.DeleteNever)
				}
				hist = append(hist, "policy")
			case 7:
				n := fmt.Sprintf("db-%d", rng.Intn(2)+1)
				b.Domains[n].Spec.Description = []string{"", "a", "b", "x"}[rng.Intn(4)]
				hist = append(hist, "host "+n+" desc="+b.Domains[n].Spec.Description)
			case 8:
				s.Group.Policy.Type = []string{engine.UpdateProactive, engine.UpdateOpportunistic}[rng.Intn(2)]
				hist = append(hist, s.Group.Policy.Type)
			case 9:
				s.Group.Template.VCPU = int64(rng.Intn(2) + 1)
				hist = append(hist, fmt.Sprint("vcpu=", s.Group.Template.VCPU))
			case 10:
				s.Group.Policy.MinimalAction = []engine.Action{engine.ActionNone, engine.ActionRefresh, engine.ActionRestart}[rng.Intn(3)]
				hist = append(hist, "minimal="+s.Group.Policy.MinimalAction.String())
			}
			s.SetGroup(s.Group)
			if rng.Intn(3) == 0 {
				f := []string{"set-record", "set-description", "define", "stop"}[rng.Intn(4)] + fmt.Sprintf(" db-%d", rng.Intn(2)+1)
				b.FailOn[f] = errors.New("injected")
				err := New(b).Apply(context.Background(), s)
				delete(b.FailOn, f)
				hist = append(hist, fmt.Sprintf("fail %s (%v)", f, err != nil))
			}
			if err := New(b).Apply(context.Background(), s); err != nil {
				t.Fatalf("seed %d %v: apply: %v", seed, hist, err)
			}
			p, o, err := New(b).Preview(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Steps) != 0 {
				var what []string
				for _, f := range p.Final {
					what = append(what, f.Name+": "+f.Planned.String())
				}
				t.Fatalf("seed %d %v: not converged: %s", seed, hist, strings.Join(what, "; "))
			}
			if s.Group.Policy.Type == engine.UpdateOpportunistic {
				continue
			}
			rev := s.Group.Template.Revision()
			for _, ob := range o.Observed {
				mi := engine.Described(ob, rev, s.TemplateRevisions)
				want := engine.NewInstancePlan(ob.Name, s.Group.Template, s.StatefulPolicy(), s.Config(ob.Name))
				if mi.TemplateRevision != rev || mi.LastAppliedHash != want.Hash || *ob.Description != s.Group.Template.Description {
					t.Fatalf("seed %d %v: %s reads as %+v, description %q; want %+v", seed, hist, ob.Name, mi, *ob.Description, want.Desired)
				}
			}
		}
	}
}
