package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// named renames the test configuration's group resource, so that one configuration can declare
// the same group twice.
func named(cfg, resourceName string) string {
	return strings.Replace(cfg, `"virt_stateful_group" "test"`, fmt.Sprintf("%q %q", "virt_stateful_group", resourceName), 1)
}

// recordMeta reads who owns and who holds the group, from the host.
func recordMeta(t *testing.T, group string) (reconcile.Meta, int64) {
	t.Helper()
	b := testLibvirt(t)
	_, m, err := reconcile.New(b).LoadRecord(context.Background(), group)
	if err != nil {
		t.Fatalf("read group record of %s: %v", group, err)
	}
	rec, err := b.ReadGroupRecord(context.Background(), group)
	if err != nil {
		t.Fatalf("read group record of %s: %v", group, err)
	}
	return m, rec.Generation
}

// otherApply is a reconciler of another Terraform run, on this machine or another.
func otherApply(t *testing.T, holder string, now time.Time, pid int) *reconcile.Reconciler {
	r := reconcile.New(testLibvirt(t))
	r.Holder, r.HolderPID = holder, pid
	r.HolderHost, _ = os.Hostname()
	r.Now = func() time.Time { return now }
	return r
}

// takeLease makes another apply hold the group's lease, as it would while it runs.
func takeLease(t *testing.T, r *reconcile.Reconciler, group string) {
	t.Helper()
	if _, err := r.Change(context.Background(), group, "", func(*engine.GroupState, bool) error { return nil }); err != nil {
		t.Fatalf("take the lease of %s as %s: %v", group, r.Holder, err)
	}
}

// checkGeneration fails when the group record changed since *gen was taken.
func checkGeneration(t *testing.T, group string, gen *int64) resource.TestCheckFunc {
	return func(*terraform.State) error {
		if _, g := recordMeta(t, group); g != *gen {
			return fmt.Errorf("group record of %s is at generation %d, was %d: a refused apply wrote it", group, g, *gen)
		}
		return nil
	}
}

// TestAccStatefulGroup_secondStateCannotCreate declares an existing group a second time, as a
// second working directory would: the create fails at plan with the import hint, and nothing on
// the host changes.
func TestAccStatefulGroup_secondStateCannotCreate(t *testing.T) {
	name := testPrefix + "own"
	first := groupConfig(name, 1, "", "")
	second := named(groupConfig(name, 2, "", ""), "second")
	var gen int64
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{
				Config: first,
				Check: resource.ComposeTestCheckFunc(checkMembers(t, name, "RUNNING", name+"-1"), func(*terraform.State) error {
					m, g := recordMeta(t, name)
					if m.Owner == nil || m.Owner.ID == "" || m.Owner.Creating || m.Lease != nil {
						return fmt.Errorf("after create: owner %+v, lease %+v; want an owner, creation finished, no lease", m.Owner, m.Lease)
					}
					gen = g
					return nil
				}),
			},
			{
				Config:      first + second,
				ExpectError: regexp.MustCompile(`(?s)group ` + name + ` already exists.*terraform import\s+virt_stateful_group.<name>\s+` + name),
			},
			{
				// The refused create changed nothing and left nothing in state: the first
				// configuration alone plans nothing.
				Config:   first,
				PlanOnly: true,
				Check:    resource.ComposeTestCheckFunc(checkMembers(t, name, "RUNNING", name+"-1"), checkGeneration(t, name, &gen)),
			},
		},
	})
}

// TestAccStatefulGroup_importTakesOver moves a group to another resource address by import, as
// a second state would take it: the importing apply records itself as the owner, and the old
// owner can then change nothing.
func TestAccStatefulGroup_importTakesOver(t *testing.T) {
	name := testPrefix + "take"
	var before engine.Owner
	moved := named(groupConfig(name, 1, "", ""), "taker") + fmt.Sprintf(`
removed {
  from = virt_stateful_group.test
  lifecycle {
    destroy = false
  }
}

import {
  to = virt_stateful_group.taker
  id = %q
}
`, name)
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{
				Config: groupConfig(name, 1, "", ""),
				Check: func(*terraform.State) error {
					m, _ := recordMeta(t, name)
					if m.Owner == nil {
						return fmt.Errorf("no owner after create")
					}
					before = *m.Owner
					return nil
				},
			},
			{
				Config: moved,
				Check: resource.ComposeTestCheckFunc(checkMembers(t, name, "RUNNING", name+"-1"), func(*terraform.State) error {
					m, _ := recordMeta(t, name)
					if m.Owner == nil || m.Owner.ID == before.ID {
						return fmt.Errorf("owner %+v after the import's apply, want a new one (was %s)", m.Owner, before.ID)
					}
					// The state the group came from can change nothing now.
					old := otherApply(t, "tfacc-old-owner", time.Now(), 0)
					_, err := old.ChangeAs(context.Background(), name, "", &engine.Claim{ID: before.ID}, func(s *engine.GroupState, _ bool) error {
						s.Group.TargetSize = 3
						return nil
					})
					var owner *engine.OwnerError
					if !errors.As(err, &owner) {
						return fmt.Errorf("a change by the old owner: %v, want an OwnerError", err)
					}
					return nil
				}),
			},
			{
				Config:   moved,
				PlanOnly: true,
			},
		},
	})
}

// TestAccStatefulGroup_oneWriterAtATime runs an apply while another apply holds the group's
// lease: it fails at plan, naming the holder, and changes nothing. A lease whose holder was
// killed ends at its expiry, or at once when its process is known gone from this machine.
func TestAccStatefulGroup_oneWriterAtATime(t *testing.T) {
	name := testPrefix + "lease"
	var gen int64
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	var other *reconcile.Reconciler
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{Config: groupConfig(name, 1, "", "")},
			{
				PreConfig: func() {
					// Another apply, on another machine, is changing the group.
					other = otherApply(t, "tfacc-other-apply", time.Now(), 0)
					other.HolderHost = "elsewhere"
					takeLease(t, other, name)
					_, gen = recordMeta(t, name)
				},
				Config:      groupConfig(name, 2, "", ""),
				ExpectError: regexp.MustCompile(`(?s)group ` + name + ` is being changed by\s+another\s+apply\s+\(tfacc-other-apply\)\s+since`),
			},
			{
				PreConfig: func() {
					// The refused apply changed nothing.
					if err := resource.ComposeTestCheckFunc(checkMembers(t, name, "RUNNING", name+"-1"), checkGeneration(t, name, &gen))(nil); err != nil {
						t.Fatal(err)
					}
					// The other apply finishes and gives its lease back.
					_, release, err := other.Hold(context.Background(), name, nil)
					if err != nil {
						t.Fatal(err)
					}
					release(true)
					// Another apply was killed a lease length ago: its lease has expired.
					killed := otherApply(t, "tfacc-killed-apply", time.Now().Add(-reconcile.DefaultLeaseTTL-time.Second), 0)
					killed.HolderHost = "elsewhere"
					takeLease(t, killed, name)
				},
				Config: groupConfig(name, 2, "", ""),
				Check:  checkMembers(t, name, "RUNNING", name+"-1", name+"-2"),
			},
			{
				PreConfig: func() {
					// An apply on this machine was killed just now: its process is gone.
					takeLease(t, otherApply(t, "tfacc-killed-here", time.Now(), dead.Process.Pid), name)
				},
				Config: groupConfig(name, 3, "", ""),
				Check: resource.ComposeTestCheckFunc(checkMembers(t, name, "RUNNING", name+"-1", name+"-2", name+"-3"), func(*terraform.State) error {
					if m, _ := recordMeta(t, name); m.Lease != nil {
						return fmt.Errorf("lease %+v left after the apply", *m.Lease)
					}
					return nil
				}),
			},
		},
	})
}

// TestAccStatefulGroup_failedCreateIsTainted fails a create half-way. What it made is in the
// state, tainted, with the record saying the creation is unfinished: a plain terraform destroy
// removes it all (it was out of every destroy's sight when a failed create saved no state), and
// after a create that failed again, the next apply replaces the group and finishes.
func TestAccStatefulGroup_failedCreateIsTainted(t *testing.T) {
	name := testPrefix + "half"
	addr := "virt_stateful_group.test"
	fb := &faultyBackend{defining: name + "-2", defineAt: 1}
	failed := resource.TestStep{
		PreConfig: func() {
			// The next definition of member 2 fails, once.
			fb.mu.Lock()
			fb.defines = 0
			fb.mu.Unlock()
			fb.arm(true)
		},
		Config:      groupConfig(name, 2, "", ""),
		ExpectError: regexp.MustCompile(`injected fault defining ` + name + `-2`),
	}
	halfMade := func() {
		fb.arm(false)
		m, _ := recordMeta(t, name)
		if m.Owner == nil || !m.Owner.Creating || m.Lease != nil {
			t.Fatalf("after the failed create: owner %+v, lease %+v; want an unfinished creation and no lease", m.Owner, m.Lease)
		}
		if len(members(t, name)) == 0 {
			t.Fatalf("the failed create made no member: the test proves nothing")
		}
	}
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { fb.preCheck(t) },
		ProtoV6ProviderFactories: fb.factories(),
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			failed,
			{
				PreConfig: halfMade,
				Config:    groupConfig(name, 2, "", ""),
				Destroy:   true,
				Check:     checkNothingLeft(t, name),
			},
			failed,
			{
				PreConfig: halfMade,
				Config:    groupConfig(name, 2, "", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: resource.ComposeTestCheckFunc(
					checkMembers(t, name, "RUNNING", name+"-1", name+"-2"),
					func(*terraform.State) error {
						if m, _ := recordMeta(t, name); m.Owner == nil || m.Owner.Creating {
							return fmt.Errorf("owner %+v: the creation is still unfinished", m.Owner)
						}
						return nil
					},
				),
			},
		},
	})
}

// TestAccStatefulGroup_scaleOutIntoATakenName scales a group out onto a name a domain no
// provider created already has: the plan fails naming it and both ways in (adopt_existing, or
// another base_instance_name), and nothing changes.
func TestAccStatefulGroup_scaleOutIntoATakenName(t *testing.T) {
	name := testPrefix + "taken"
	base := testPrefix + "x-taken"
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	testAccPreCheck(t)
	cfg := func(size int) string {
		return strings.Replace(groupConfig(name, size, "", ""), "target_size", fmt.Sprintf("base_instance_name = %q\n  target_size", base), 1)
	}
	var gen int64
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: resource.ComposeTestCheckFunc(checkNothingLeft(t, name), func(*terraform.State) error {
			if left := leftovers(t, base); len(left) != 2 || !strings.Contains(strings.Join(left, " "), base+"-2") {
				return fmt.Errorf("after destroy: %v, want only the domain and volume no provider created", left)
			}
			return nil
		}),
		Steps: []resource.TestStep{
			{
				Config: cfg(1),
				Check: func(*terraform.State) error {
					createLegacyDomain(t, base+"-2", testPrefix+"x-taken-2-legacy.img")
					_, gen = recordMeta(t, name)
					return nil
				},
			},
			{
				Config:      cfg(2),
				ExpectError: regexp.MustCompile(`(?s)Member names taken by existing domains.*domains\s+` + base + `-2,\s+which\s+no\s+provider\s+created.*adopt_existing\s+=\s+true.*another\s+base_instance_name`),
			},
			{
				Config: cfg(1),
				Check: resource.ComposeTestCheckFunc(func(*terraform.State) error {
					m := members(t, base)
					if d := m[base+"-1"]; d.Status != "RUNNING" || d.Record == nil {
						return fmt.Errorf("%s-1: %+v, want a running member", base, d)
					}
					if d := m[base+"-2"]; d.Record != nil {
						return fmt.Errorf("%s-2 was taken over: %+v", base, d.Record)
					}
					return nil
				}, checkGeneration(t, name, &gen)),
			},
		},
	})
}

// meanwhile is a plan check that does not check: it runs between terraform's plan and its apply
// of the saved plan (terraform-plugin-testing applies the plan it checked), to make another
// apply change the host in that window.
type meanwhile func()

func (m meanwhile) CheckPlan(_ context.Context, _ plancheck.CheckPlanRequest, _ *plancheck.CheckPlanResponse) {
	m()
}

// TestAccStatefulGroup_staleCopyOfTheState applies a plan after another apply (a copy of this
// state, say) changed the group since the plan was made: the apply is refused before writing
// anything, and the next apply plans from what the host has.
func TestAccStatefulGroup_staleCopyOfTheState(t *testing.T) {
	name := testPrefix + "stale"
	// The copy, the same owner, scales the group to 3 and finishes.
	testPlanMadeBeforeAnotherApply(t, name, "tfacc-copy-of-the-state", func(s *engine.GroupState) {
		s.Group.TargetSize = 3
		s.Resource = strings.Replace(s.Resource, `"target_size":1`, `"target_size":3`, 1)
	})
}

// TestAccStatefulGroup_planMadeBeforeAnotherApply applies a plan after another apply changed
// the group without changing its configuration (it added a per-instance config of a member the
// plan creates): the apply is refused with the provider's words before anything is changed,
// never run over the other's change, and the next apply plans from what the host has.
func TestAccStatefulGroup_planMadeBeforeAnotherApply(t *testing.T) {
	name := testPrefix + "basis"
	testPlanMadeBeforeAnotherApply(t, name, "tfacc-another-apply", func(s *engine.GroupState) {
		s.Configs = map[string]engine.ConfigEntry{name + "-2": {Config: engine.InstanceConfig{Metadata: map[string]string{"from": "another apply"}}}}
	})
}

// testPlanMadeBeforeAnotherApply plans a scale-out of group name from 1 to 2, lets another
// terraform run (holder) change the group's record with change before the apply, and checks
// that the apply is refused, that it changed nothing (record, members), and that the next apply
// makes the group of 2.
func testPlanMadeBeforeAnotherApply(t *testing.T, name, holder string, change func(s *engine.GroupState)) {
	var before string
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{Config: groupConfig(name, 1, "", "")},
			{
				Config: groupConfig(name, 2, "", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{meanwhile(func() {
					anotherApplyChanges(t, name, holder, change)
					before = groupContent(t, name)
				})}},
				ExpectError: regexp.MustCompile(`group ` + name + ` was changed by another apply since this plan\s+was\s+made`),
			},
			{
				// The refused apply changed nothing in the record (it took and gave back its
				// lease), nor made a member; the next one plans from the record to 2.
				PreConfig: func() {
					if after := groupContent(t, name); after != before {
						t.Fatalf("the refused apply changed the record:\n%s\nwas\n%s", after, before)
					}
					if _, ok := members(t, name)[name+"-2"]; ok {
						t.Fatalf("the refused apply created %s-2", name)
					}
				},
				Config: groupConfig(name, 2, "", ""),
				Check:  checkMembers(t, name, "RUNNING", name+"-1", name+"-2"),
			},
		},
	})
}

// anotherApplyChanges makes another terraform run (holder, a run of its own), the group's owner,
// hold the group, change its record with mutate and give the lease back, as an apply that
// finished does.
func anotherApplyChanges(t *testing.T, group, holder string, mutate func(s *engine.GroupState)) {
	t.Helper()
	m, _ := recordMeta(t, group)
	other := otherApply(t, holder, time.Now(), 0)
	other.Env.Run = holder
	claim := &engine.Claim{ID: m.Owner.ID}
	held, release, err := other.Hold(context.Background(), group, claim)
	if err != nil {
		t.Fatal(err)
	}
	_, err = other.ChangeAs(held, group, "", claim, func(s *engine.GroupState, _ bool) error {
		mutate(s)
		return nil
	})
	release(err == nil)
	if err != nil {
		t.Fatal(err)
	}
}

// groupContent is the group record's content as the engine reads it, with its owner: what a
// refused apply must not change (its lease comes and goes).
func groupContent(t *testing.T, group string) string {
	t.Helper()
	s, m, err := reconcile.New(testLibvirt(t)).LoadRecord(context.Background(), group)
	if err != nil {
		t.Fatalf("read group record of %s: %v", group, err)
	}
	b, err := json.Marshal(struct {
		State engine.GroupState
		Owner *engine.Owner
	}{s, m.Owner})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
