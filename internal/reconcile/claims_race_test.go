package reconcile

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/store"
)

// racingRecords answers the reads of a group's record from a script first (what a writer of that
// group does between the listing and each read), then from the host.
type racingRecords struct {
	*fake.Backend
	script map[string][]error
}

func (r *racingRecords) ReadGroupRecord(ctx context.Context, group string) (backend.GroupRecord, error) {
	if s := r.script[group]; len(s) > 0 {
		r.script[group] = s[1:]
		return backend.GroupRecord{}, s[0]
	}
	return r.Backend.ReadGroupRecord(ctx, group)
}

// TestClaimsOnRecordChangingMeanwhile: another group's record whose newest generation goes while
// it is read (its own apply writing it, its destroy deleting it) is read again, not reported as
// this group's error; only a record that changes under every read is one.
func TestClaimsOnRecordChangingMeanwhile(t *testing.T) {
	t.Parallel()
	conflict := backend.ErrConflict
	gone := backend.ErrNotFound
	cases := map[string]struct {
		script   []error
		want     []string
		conflict bool
	}{
		"read at once":                     {want: []string{"db-1"}},
		"rewritten meanwhile, twice":       {script: []error{conflict, conflict}, want: []string{"db-1"}},
		"deleted meanwhile":                {script: []error{conflict, gone}},
		"changing under every read (five)": {script: []error{conflict, conflict, conflict, conflict, conflict}, conflict: true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			b := &racingRecords{Backend: fake.New(), script: map[string][]error{"other": c.script}}
			data, err := store.EncodeGroup(engine.GroupRecord{GroupState: engine.GroupState{
				Group: engine.Group{Name: "other"}, Placement: map[string]string{"db-1": engine.DefaultHost},
			}})
			if err != nil {
				t.Fatal(err)
			}
			if err := b.WriteGroupRecord(ctx, "other", backend.GroupRecord{Pool: "p", Generation: 1, Data: data}); err != nil {
				t.Fatal(err)
			}
			var got []string
			err = claimsOn(ctx, b, engine.DefaultHost, "db", []string{"db-1", "db-2"}, func(name, _ string) { got = append(got, name) })
			if c.conflict {
				if !errors.Is(err, backend.ErrConflict) {
					t.Fatalf("claimsOn: %v, want an error wrapping ErrConflict", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("claimsOn: %v", err)
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("names claimed (-want +got):\n%s", d)
			}
		})
	}
}
