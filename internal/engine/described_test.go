package engine

import "testing"

// Described reads a record left from before a change of the description alone as the new
// template's, and only that: every other record is returned as it was written.
func TestDescribed(t *testing.T) {
	newer := base()
	newer.Description = "new"
	tests := []struct {
		name    string
		change  func(o *Observed) // to a member built from base() whose domain has "new"
		want    Template          // the template passed to Described
		updated bool              // read as on want
	}{
		{name: "description written, record not", want: newer, updated: true},
		{name: "the host has another description", change: func(o *Observed) { d := "edited"; o.Description = &d }, want: newer},
		{name: "the host has the record's description", change: func(o *Observed) { d := ""; o.Description = &d }, want: newer},
		{name: "description not read", change: func(o *Observed) { o.Description = nil }, want: newer},
		{name: "the template differs by more than the description", want: func() Template {
			t := newer
			t.MemoryMiB = 256
			return t
		}()},
		{name: "a change in flight", change: func(o *Observed) {
			target := o.Instance.Current
			o.Instance.InFlight, o.Instance.InFlightAction = &target, ActionRefresh
		}, want: newer},
		{name: "a record that does not say its template was applied", change: func(o *Observed) { o.Instance.LastAppliedHash = "other" }, want: newer},
		{name: "an adopted domain", change: func(o *Observed) { o.Instance.Template.Adopted = true }, want: newer},
		{name: "a domain no provider created", change: func(o *Observed) { o.Unmanaged = true }, want: newer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := observed(base(), StatusRunning, 1)[0]
			o.Instance.Heals, o.Instance.Created = 1, 42
			d := "new"
			o.Description = &d
			if tt.change != nil {
				tt.change(&o)
			}
			got := Described(o, tt.want, tt.want.Revision())
			if !tt.updated {
				if shortHash(got) != shortHash(o.Instance) {
					t.Fatalf("read as %+v, want the record as written %+v", got, o.Instance)
				}
				return
			}
			rebuilt := built(o.Name, tt.want, Policy{}, InstanceConfig{})
			rebuilt.Heals, rebuilt.Created = 1, 42
			if shortHash(got) != shortHash(rebuilt) || got.TemplateRevision != tt.want.Revision() {
				t.Fatalf("read as %+v, want the member built from the new template %+v", got, rebuilt)
			}
		})
	}
}
