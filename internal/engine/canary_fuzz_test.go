package engine

import (
	"slices"
	"testing"
	"time"
)

// FuzzCanary plans groups under a canary hold from bytes: a target size, members each on the old
// or the new template, up or down, or gone, a hold as a number or a percentage, a change that needs a
// replacement, a restart or only a refresh. Whatever the group, the plan never moves a member off
// the group's template, holds back only members that are not on it and whose move would take them
// down, leaves on the group's template once applied max(hold, those that are or reach it live or
// are created) of the members that stay (or all of them), and, applied, gives a plan that does
// nothing and holds back the same members.
func FuzzCanary(f *testing.F) {
	f.Add([]byte{4, 1, 0, 0, 0, 0, 0})
	f.Add([]byte{5, 2, 0x12, 0x01, 0x00, 0x10, 0x02})
	f.Add([]byte{3, 0x82, 1, 0x11, 0x00, 0x01})
	f.Add([]byte{6, 0x32, 2, 0x01, 0x11, 0x00, 0x00, 0x10, 0x10})
	f.Add([]byte{5, 1, 0, 0x21, 0x00, 0x20, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		at := func(i int) byte {
			if i < len(data) {
				return data[i]
			}
			return 0
		}
		size := int(at(0) % 8)
		canary := &Canary{Fixed: int(at(1) & 0x7f % 8)}
		if at(1)&0x80 != 0 {
			canary = &Canary{Percent: int(at(1)&0x7f) % 101}
		}
		g := group(size)
		old := g.Template
		switch at(2) % 3 {
		case 0:
			g.Template.BootDisk.SourceImage = "/images/new.qcow2"
		case 1:
			g.Template.VCPU = 2
		case 2:
			g.Template.Metadata = map[string]string{"role": "web"}
		}
		g.Policy.Canary = canary
		g.Policy.MaxUnavailable = 1 + int(at(1)>>4)%3
		now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		var obs []Observed
		for i := 1; i <= len(data)-3 && i <= 8; i++ {
			b := at(i + 2)
			if b&0x20 != 0 {
				// Its domain is gone: the plan creates it again.
				continue
			}
			tpl := old
			if b&0x01 != 0 {
				tpl = g.Template
			}
			o := observed(tpl, StatusRunning, i)[0]
			if b&0x10 != 0 {
				o.Status = StatusStopped
			}
			obs = append(obs, o)
		}
		rev := g.Template.Revision()
		s := state(g)
		env := Env{Now: now}
		p := PlanGroup(s, obs, env)
		before := map[string]string{}
		for _, o := range obs {
			before[o.Name] = o.Instance.TemplateRevision
		}
		staying := 0
		for _, m := range p.Final {
			staying++
			if before[m.Name] == rev && m.Revision != rev {
				t.Fatalf("%s moved off the group's template: %s", m.Name, m.Revision)
			}
			if m.Planned.Held {
				if before[m.Name] == rev || m.Revision == rev {
					t.Fatalf("%s is held back, and is on the group's template", m.Name)
				}
			}
		}
		after := applied(g, obs, p)
		on := 0
		for _, o := range after {
			if o.Instance.TemplateRevision == rev {
				on++
			}
		}
		if want := min(canary.Members(size), staying); on < want {
			t.Fatalf("%d members on the group's template after the apply, the hold lets %d (plan %q)", on, want, waveView(p))
		}
		// Members beyond the hold are on the group's template only because they already were,
		// reached it live, or were created: none was taken down for it.
		moved := 0
		for _, st := range p.Steps {
			if st.Disruptive() && st.Revision == rev && before[st.Name] != rev {
				moved++
			}
		}
		if baseline := on - moved; on > max(canary.Members(size), baseline) {
			t.Fatalf("%d members taken down onto the group's template, %d on it without that, the hold is %d (plan %q)", moved, baseline, canary.Members(size), waveView(p))
		}
		again := PlanGroup(s, after, env)
		if !again.Idle() {
			t.Fatalf("the plan after the apply is not idle: %q, blocked %v", waveView(again), again.Blocked)
		}
		var was, is []string
		for _, m := range p.Final {
			if m.Planned.Held {
				was = append(was, m.Name)
			}
		}
		for _, m := range again.Final {
			if m.Planned.Held {
				is = append(is, m.Name)
			}
		}
		if !slices.Equal(was, is) {
			t.Fatalf("held back %v, then %v after the apply", was, is)
		}
	})
}
