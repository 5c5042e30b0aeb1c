package reconcile

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// objectsOf is everything of one group on the fake host that another group must leave as it is:
// its domains (identity, power, definition) and its volumes (size, backing, bytes).
func objectsOf(b *fake.Backend, base string) map[string]string {
	out := map[string]string{}
	for n, d := range b.Domains {
		if strings.HasPrefix(n, base+"-") || d.Spec.Record.Group == base {
			out["domain "+n] = fmt.Sprintf("%s id=%d record=%s/%d disks=%d", d.UUID, d.ID, d.Spec.Record.Group, d.Spec.Record.Index, len(d.Spec.Disks))
		}
	}
	for n, v := range b.Volumes {
		if strings.HasPrefix(n, "p/"+base+"-") {
			out["volume "+n] = fmt.Sprintf("%d %s %q", v.SizeMiB, v.Backing, v.Data)
		}
	}
	return out
}

// TestApply_aGroupNeverTouchesAnothersObjects: two groups share one host and one pool; group b's
// configs name what is group a's (a member, a scaled-in member whose disk a kept, a name of a's
// scheme, a volume no group made). b's plan refuses each such member, and its apply changes none
// of a's domains or volumes, bytes included, while b's own members are made.
func TestApply_aGroupNeverTouchesAnothersObjects(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		config string
		// prepare runs after group a is applied, before group b's apply.
		prepare func(b *fake.Backend)
		// blocked is what b's plan must say of the member.
		blocked string
	}{
		"a member of a":                          {config: "a-1", blocked: `belongs to group "a" (domain a-1`},
		"a member a scaled in, its disk kept":    {config: "a-3", blocked: `belongs to group "a" (its record`},
		"a name of a's scheme no member has yet": {config: "a-7", blocked: `belongs to group "a" (its record`},
		"a domain of a, under b's own scheme": {config: "b-1", prepare: func(fb *fake.Backend) {
			fb.Domains["b-1"] = &fake.Domain{Spec: fakeSpec("b-1", "a"), UUID: "uuid-a-b1", ID: -1}
		}, blocked: `belongs to group "a" (domain b-1`},
		"a volume no group made": {config: "loose", prepare: func(fb *fake.Backend) {
			fb.Volumes["p/loose-boot.qcow2"] = &fake.Volume{SizeMiB: 64, Data: "the user's"}
		}, blocked: "the group did not make it"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			fb := fake.New()
			r := New(fb)
			// a scales in from 3 to 2: a-3 goes, its NEVER data disk stays.
			groupAScaledIn(t, r, fb, 3, 2)
			if _, kept := fb.Volumes["p/a-3-data.qcow2"]; !kept {
				t.Fatal("a's NEVER disk of a-3 was not kept at scale-in")
			}
			if tc.prepare != nil {
				tc.prepare(fb)
			}
			before := objectsOf(fb, "a")
			var loose *fake.Volume
			if v := fb.Volumes["p/loose-boot.qcow2"]; v != nil {
				c := *v
				loose = &c
			}

			b := withPolicy(spec(1), engine.DeleteNever)
			b.Group.Name, b.Group.Base = "b", "b"
			b.Configs = map[string]engine.ConfigEntry{tc.config: {}}
			b = change(t, r, b)
			p, _, err := r.Preview(ctx, b)
			if err != nil {
				t.Fatal(err)
			}
			var problem string
			for _, bl := range p.Blocked {
				if bl.Name == tc.config {
					problem = bl.Problem
				}
			}
			if !strings.Contains(problem, tc.blocked) {
				t.Fatalf("b's plan says of %s %q, want it to contain %q (blocked: %v)", tc.config, problem, tc.blocked, p.Blocked)
			}
			for _, c := range p.Create {
				if c.Name == tc.config {
					t.Fatalf("b's plan creates %s", tc.config)
				}
			}
			var blocked *BlockedError
			if err := r.Apply(ctx, b); !errors.As(err, &blocked) {
				t.Fatalf("b's apply: %v, want the blocked members refused", err)
			}
			if diff := cmp.Diff(before, objectsOf(fb, "a")); diff != "" {
				t.Errorf("group a's objects changed (-before +after):\n%s", diff)
			}
			if v := fb.Volumes["p/loose-boot.qcow2"]; loose != nil && (v == nil || *v != *loose) {
				t.Errorf("the loose volume changed: %+v", fb.Volumes["p/loose-boot.qcow2"])
			}
			if _, taken := fb.Domains["b-1"]; taken {
				return
			}
			// Without the config that names what is not b's, b is made as usual.
			b.Configs = nil
			b = change(t, r, b)
			if err := r.Apply(ctx, b); err != nil {
				t.Fatal(err)
			}
			if fb.Domains["b-1"] == nil {
				t.Fatal("b-1 was not made")
			}
			if diff := cmp.Diff(before, objectsOf(fb, "a")); diff != "" {
				t.Errorf("group a's objects changed (-before +after):\n%s", diff)
			}
		})
	}
}

// groupAScaledIn applies group "a" (base "a", a NEVER data disk) with size members, marks every
// volume's bytes with its name, and scales it in to scaledTo: its scaled-in members' data disks
// stay, a's own.
func groupAScaledIn(t *testing.T, r *Reconciler, fb *fake.Backend, size, scaledTo int) {
	t.Helper()
	ctx := context.Background()
	a := withPolicy(spec(size), engine.DeleteNever)
	a.Group.Name, a.Group.Base = "a", "a"
	a = change(t, r, a)
	if err := r.Apply(ctx, a); err != nil {
		t.Fatal(err)
	}
	for n, v := range fb.Volumes {
		v.Data = "bytes of " + n
	}
	a.Group.TargetSize = scaledTo
	a = change(t, r, a)
	if err := r.Apply(ctx, a); err != nil {
		t.Fatal(err)
	}
}

// fakeSpec is the definition of a domain that carries group's record.
func fakeSpec(name, group string) (s backend.DomainSpec) {
	s.Name = name
	s.Record.Group = group
	return s
}

// TestApply_aNameTakenAfterThePlanIsLeftAlone: a domain of another group appears under a new
// member's name after the plan saw the name free, and the member's own boot volume (a leftover
// the plan would make again) is then that domain's: the creation stops before deleting it.
func TestApply_aNameTakenAfterThePlanIsLeftAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fb := fake.New()
	r := New(fb)
	change(t, r, spec(1))
	// An interrupted creation of db-1 left its boot volume: the group placed db-1.
	s, err := r.Change(ctx, "db", "p", func(st *engine.GroupState, _ bool) error {
		// Its inventory holds the intent written before the volume was made.
		st.Placement, st.Placed = map[string]string{"db-1": engine.DefaultHost}, true
		st.Inventory = engine.Inventory{Kept: true, Items: []engine.Made{{Kind: engine.MadeVolume, Host: engine.DefaultHost, Name: "db-1-boot.qcow2"}}}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	fb.Volumes["p/db-1-boot.qcow2"] = &fake.Volume{SizeMiB: 64, Data: "leftover"}
	p, _, err := r.Preview(ctx, s)
	if err != nil || len(p.Create) != 1 {
		t.Fatalf("plan: %+v, %v", p.Create, err)
	}
	fb.Domains["db-1"] = &fake.Domain{Spec: fakeSpec("db-1", "other"), UUID: "uuid-other", ID: -1}
	err = r.Execute(ctx, s, p)
	if err == nil || !strings.Contains(err.Error(), `appeared on the host after the plan was made (it carries the record of group "other")`) {
		t.Fatalf("execute: %v", err)
	}
	if v := fb.Volumes["p/db-1-boot.qcow2"]; v == nil || v.Data != "leftover" {
		t.Fatalf("the boot volume of the other domain was touched: %+v", v)
	}
	if fb.Calls["delete-volume"] != 0 || fb.Calls["ensure-volume"] != 0 {
		t.Fatalf("volume calls: %v", fb.Calls)
	}
}

// TestOccupied_anotherGroupsBaseName: a new group whose members would be named as another
// group's are (the same base_instance_name) is refused, even when that group has no member now
// and only its record says the names are its own (disks its scale-in kept).
func TestOccupied_anotherGroupsBaseName(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fb := fake.New()
	r := New(fb)
	groupAScaledIn(t, r, fb, 1, 0)
	if len(fb.Domains) != 0 {
		t.Fatalf("domains left after scaling a to 0: %v", domainsOn(fb))
	}
	var taken *NamesTakenError
	_, err := r.Occupied(ctx, engine.Group{Name: "b", Base: "a"})
	if !errors.As(err, &taken) || !strings.Contains(err.Error(), `claimed by group "a"`) {
		t.Fatalf("group b with a's base: %v, want the names taken by group a", err)
	}
	if _, err := r.Occupied(ctx, engine.Group{Name: "b", Base: "b"}); err != nil {
		t.Fatalf("group b with its own base: %v", err)
	}
}
