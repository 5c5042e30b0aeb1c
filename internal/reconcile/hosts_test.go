package reconcile

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// threeHosts is a reconciler over three fake hosts: default, h2 and h3.
func threeHosts() (*Reconciler, map[string]*fake.Backend) {
	fakes := map[string]*fake.Backend{"default": fake.New(), "h2": fake.New(), "h3": fake.New()}
	r := New(fakes["default"])
	r.Hosts = map[string]backend.Backend{"h2": fakes["h2"], "h3": fakes["h3"]}
	return r, fakes
}

func domainsOn(b *fake.Backend) string {
	var names []string
	for n := range b.Domains {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, " ")
}

// change writes s as the group's record, as the group resource does before it applies.
func change(t *testing.T, r *Reconciler, s engine.GroupState) engine.GroupState {
	t.Helper()
	got, err := r.Change(context.Background(), s.Group.Name, s.Pool, func(st *engine.GroupState, _ bool) error {
		placement, placed := st.Placement, st.Placed
		*st = s
		st.Placement, st.Placed = placement, placed
		return nil
	})
	if err != nil {
		t.Fatalf("write record: %v", err)
	}
	return got
}

func TestApply_spreadsOverHostsAndKeepsMembersWhereTheyAre(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, fakes := threeHosts()
	s := spec(6)
	s.Group.Hosts = []string{"h2", "default", "h3"}
	s = change(t, r, s)
	if err := r.Apply(ctx, s); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"h2": "db-1 db-4", "default": "db-2 db-5", "h3": "db-3 db-6"}
	for h, names := range want {
		if got := domainsOn(fakes[h]); got != names {
			t.Errorf("%s has %q, want %q", h, got, names)
		}
	}
	// The record is on the group's first host, with where every member is.
	if _, err := fakes["h2"].ReadGroupRecord(ctx, "db"); err != nil {
		t.Fatalf("record on h2: %v", err)
	}
	if _, err := fakes["default"].ReadGroupRecord(ctx, "db"); !errors.Is(err, backend.ErrNotFound) {
		t.Fatalf("record on the default host too: %v", err)
	}
	s, err := r.Load(ctx, "db")
	if err != nil {
		t.Fatal(err)
	}
	if s.Placement["db-4"] != "h2" || s.Placement["db-6"] != "h3" || len(s.Placement) != 6 {
		t.Fatalf("placement %v", s.Placement)
	}

	// h3 stops answering: its members are UNKNOWN, nothing is made up for them, and a change
	// reaches the others.
	fakes["h3"].Hook = func(op, _ string) error { return errors.New("connection refused") }
	s.Group.Template.Metadata = map[string]string{"role": "new"}
	s = change(t, r, s)
	p, o, err := r.Preview(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if _, down := o.Down["h3"]; !down || len(p.Create) != 0 || len(p.Delete) != 0 || len(p.Steps) != 4 {
		t.Fatalf("with h3 down: down %v, create %v, delete %v, %d steps", o.Down, p.Create, p.Delete, len(p.Steps))
	}
	for _, m := range p.Final {
		if (m.Host == "h3") != (m.Status == engine.StatusUnknown) {
			t.Errorf("%s on %s is %s", m.Name, m.Host, m.Status)
		}
	}
	if err := r.Apply(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := r.Destroy(ctx, s); err == nil || !strings.Contains(err.Error(), `host "h3" cannot be reached`) {
		t.Fatalf("destroy with h3 down: %v", err)
	}
	if got := domainsOn(fakes["h2"]); got != "db-1 db-4" {
		t.Fatalf("a refused destroy deleted members: h2 has %q", got)
	}

	// h3 answers again; db-2 lost its definition on the default host: it comes back there.
	fakes["h3"].Hook = nil
	delete(fakes["default"].Domains, "db-2")
	if err := r.Apply(ctx, s); err != nil {
		t.Fatal(err)
	}
	if got := domainsOn(fakes["default"]); got != "db-2 db-5" {
		t.Fatalf("default has %q", got)
	}
	if got := fakes["h3"].Domains["db-3"].Spec.Record.Instance.TemplateRevision; got != s.Group.Template.Revision() {
		t.Fatalf("h3's members were not updated once it answered: revision %q", got)
	}

	// A scale-in keeps the spread even; destroy empties every host and removes the record.
	s.Group.TargetSize = 3
	s = change(t, r, s)
	if err := r.Apply(ctx, s); err != nil {
		t.Fatal(err)
	}
	for h, names := range map[string]string{"h2": "db-1", "default": "db-2", "h3": "db-3"} {
		if got := domainsOn(fakes[h]); got != names {
			t.Errorf("after scale-in %s has %q, want %q", h, got, names)
		}
	}
	s, _ = r.Load(ctx, "db")
	if err := r.Destroy(ctx, s); err != nil {
		t.Fatal(err)
	}
	for h, b := range fakes {
		if len(b.Domains) != 0 || len(b.VolumeNames("p")) != 0 {
			t.Errorf("%s keeps %q and %v", h, domainsOn(b), b.VolumeNames("p"))
		}
	}
	if _, err := fakes["h2"].ReadGroupRecord(ctx, "db"); !errors.Is(err, backend.ErrNotFound) {
		t.Fatalf("record left on h2: %v", err)
	}
}

func TestApply_aHostRemovedFromTheProviderIsForgotten(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, fakes := threeHosts()
	s := spec(3)
	s.Group.Hosts = []string{"default", "h2", "h3"}
	s = change(t, r, s)
	if err := r.Apply(ctx, s); err != nil {
		t.Fatal(err)
	}
	// The user takes h3 out of the group and out of the provider.
	delete(r.Hosts, "h3")
	s, _ = r.Load(ctx, "db")
	s.Group.Hosts = []string{"default", "h2"}
	s = change(t, r, s)
	if err := r.Apply(ctx, s); err != nil {
		t.Fatal(err)
	}
	if got := domainsOn(fakes["default"]) + " | " + domainsOn(fakes["h2"]); got != "db-1 db-3 | db-2" {
		t.Fatalf("members %s", got)
	}
	if got := domainsOn(fakes["h3"]); got != "db-3" {
		t.Fatalf("h3, no longer the provider's, was changed: %q", got)
	}
	s, _ = r.Load(ctx, "db")
	if s.Placement["db-3"] != "default" {
		t.Fatalf("placement %v", s.Placement)
	}
}

// TestApply_noRecordNothingToPlace: a group on several hosts applied without a record (as the
// reconciler may be used directly) with no member to place has nothing to write, and applies.
func TestApply_noRecordNothingToPlace(t *testing.T) {
	t.Parallel()
	r, _ := threeHosts()
	s := spec(0)
	s.Group.Hosts = []string{"h2", "default", "h3"}
	if err := r.Apply(context.Background(), s); err != nil {
		t.Fatalf("apply of an empty group without a record: %v", err)
	}
}

// TestApply_aMemberNeverMadeOnAHostThatStoppedIsNoMember: h3 stops answering in the middle of a
// scale-out, after the plan placed a member there. The record says that member was being
// created; with h3 down it is not counted, not shown, and a scale-in deletes no real member in
// its place; a new member goes where a host answers.
func TestApply_aMemberNeverMadeOnAHostThatStoppedIsNoMember(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, fakes := threeHosts()
	r.Workers = 1 // the creations run one after the other: db-4 and db-5 are made before db-6 fails
	s := spec(3)
	s.Group.Hosts = []string{"default", "h2", "h3"}
	s = change(t, r, s)
	if err := r.Apply(ctx, s); err != nil {
		t.Fatal(err)
	}
	down := errors.New("connection refused")
	// h3 answers the listing, then stops before its new member is made.
	fakes["h3"].Hook = func(op, _ string) error {
		if op == "list" || op == "names" || op == "lookup-pool" {
			return nil
		}
		return down
	}
	s.Group.TargetSize = 6
	s = change(t, r, s)
	if err := r.Apply(ctx, s); err == nil {
		t.Fatal("the creation on h3 did not fail")
	}
	rec, err := r.Load(ctx, "db")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rec.Creating, " "); got != "db-6" || rec.Placement["db-6"] != "h3" {
		t.Fatalf("after the stopped run the record has creating %q, placement %v", got, rec.Placement)
	}
	fakes["h3"].Hook = func(string, string) error { return down }

	// h3 down: db-6 is no member; db-3, made there, is UNKNOWN.
	p, o, err := r.Preview(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	var members []string
	for _, ob := range o.Observed {
		members = append(members, ob.Name)
	}
	if got := strings.Join(members, " "); got != "db-1 db-2 db-3 db-4 db-5" {
		t.Fatalf("observed %q", got)
	}
	if len(p.Create) != 1 || p.Create[0].Name != "db-6" || p.Create[0].Host == "h3" {
		t.Fatalf("creates %+v", p.Create)
	}

	// A scale-in to 5 deletes nothing real, and the record forgets db-6.
	rec.Group.TargetSize = 5
	rec = change(t, r, rec)
	if err := r.Apply(ctx, rec); err != nil {
		t.Fatal(err)
	}
	for h, names := range map[string]string{"default": "db-1 db-4", "h2": "db-2 db-5"} {
		if got := domainsOn(fakes[h]); got != names {
			t.Errorf("after the scale-in %s has %q, want %q", h, got, names)
		}
	}
	rec, _ = r.Load(ctx, "db")
	if _, ok := rec.Placement["db-6"]; ok || len(rec.Creating) != 0 {
		t.Fatalf("record keeps placement %v, creating %v", rec.Placement, rec.Creating)
	}

	// h3 answers again: nothing to do.
	fakes["h3"].Hook = nil
	p, _, err = r.Preview(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Create)+len(p.Delete)+len(p.Steps) != 0 || domainsOn(fakes["h3"]) != "db-3" {
		t.Fatalf("with h3 back: create %v, delete %v, %d steps; h3 has %q", p.Create, p.Delete, len(p.Steps), domainsOn(fakes["h3"]))
	}
}
