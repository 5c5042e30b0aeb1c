package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// actionTerraform is the terraform binary these tests drive: Terraform 1.14 or later, which actions need
// it; an older one fails the test (needsTerraform), never skips it.
func actionTerraform(t *testing.T) string {
	t.Helper()
	return needsTerraform{min: "1.14.0", feature: "Actions (terraform apply -invoke)"}.require(t)
}

// cliRun runs terraform in a working directory of its own, on the provider built from this tree.
type cliRun struct {
	t        *testing.T
	tf, cli  string
	dir      string
	lastCode int
}

func newCLIRun(t *testing.T, tf string) *cliRun {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return &cliRun{t: t, tf: tf, cli: devOverrides(t, buildProvider(t, root)), dir: t.TempDir()}
}

func (c *cliRun) write(main string) {
	c.t.Helper()
	header := cliHeader
	if err := os.WriteFile(filepath.Join(c.dir, "main.tf"), []byte(header+main), 0o644); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cliRun) run(args ...string) (string, error) {
	out, err := runTerraform(c.tf, c.cli, c.dir, nil, args...)
	c.lastCode = 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		c.lastCode = exit.ExitCode()
	}
	return out, err
}

// must runs terraform and fails the test when it fails.
func (c *cliRun) must(args ...string) string {
	c.t.Helper()
	out, err := c.run(args...)
	if err != nil {
		c.t.Fatalf("terraform %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// destroyAtCleanup destroys what the directory applied when the test ends, and checks that
// nothing of the group name is left.
func (c *cliRun) destroyAtCleanup(name string) {
	c.t.Cleanup(func() {
		if out, err := c.run("destroy", "-auto-approve", "-no-color"); err != nil {
			c.t.Errorf("cleanup: terraform destroy: %v\n%s", err, out)
		}
		if err := checkNothingLeft(c.t, name)(nil); err != nil {
			c.t.Errorf("after terraform destroy: %v", err)
		}
	})
}

// emptyPlan fails the test unless a plan of the configuration changes nothing.
func (c *cliRun) emptyPlan(after string) {
	c.t.Helper()
	out, err := c.run("plan", "-detailed-exitcode", "-no-color")
	if err != nil {
		c.t.Fatalf("the plan after %s is not empty (exit code %d):\n%s", after, c.lastCode, out)
	}
}

// instanceActions renders the test group's actions: recreate of member 2, restart of member 1,
// preserve and release of member 3, and a recreate naming a member the group does not have.
func instanceActions(name string) string {
	action := func(kind, label string, members ...string) string {
		return fmt.Sprintf("\naction \"virt_instance_%s\" %q {\n  config {\n    group     = virt_stateful_group.test.name\n    instances = [%s]\n  }\n}\n",
			kind, label, `"`+strings.Join(members, `", "`)+`"`)
	}
	return action("recreate", "two", name+"-2") + action("restart", "one", name+"-1") +
		action("preserve", "three", name+"-3") + action("release", "three", name+"-3") +
		action("recreate", "unknown", name+"-2", name+"-9")
}

// TestAccCLI_instanceActions drives `terraform apply -invoke` on a group of 3 whose data disk
// the stateful policy preserves: while another apply holds the group's lease an action is
// refused and nothing changes; recreate of member 2 gives it a new UUID and keeps its data
// disk's bytes, and members 1 and 3 keep their domains; restart of member 1 keeps its UUID and
// starts a new QEMU process; preserve and release of member 3 write its record only; an
// action_trigger restarts member 1 after an update of the group; a name that is not a member is
// refused, naming it. After each action the next plan is empty.
func TestAccCLI_instanceActions(t *testing.T) {
	name := testPrefix + "act"
	n1, n2, n3 := name+"-1", name+"-2", name+"-3"
	data2 := n2 + "-data.qcow2"
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	// Parallel with the other tests: its terraform runs in a directory of its own, on objects
	// named for it alone.
	accParallel(t)
	testAccPreCheck(t)
	c := newCLIRun(t, actionTerraform(t))
	// The data disks are preserved, and go with the group's destroy.
	config := func(running bool) string {
		return groupConfig(name, 3, diskBlocks(8, "data"), fmt.Sprintf("  running = %v\n", running)) + dataPolicy + instanceActions(name)
	}
	c.write(config(false))
	c.destroyAtCleanup(name)
	c.must("apply", "-auto-approve", "-no-color")
	// Member 2's data is written while no member runs (QEMU holds the image's write lock).
	sums, uuids := checksums{}, domainUUIDs{}
	sums.write(t, data2, 0x5a)
	c.write(config(true))
	c.must("apply", "-auto-approve", "-no-color")
	c.emptyPlan("the create")
	ids := domainIDs{}
	check := func(what string, fs ...resource.TestCheckFunc) {
		t.Helper()
		if err := resource.ComposeTestCheckFunc(fs...)(nil); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	check("before the actions", uuids.record(t, name), ids.record(t, name), checkMembers(t, name, "RUNNING", n1, n2, n3))

	// Another apply holds the group's lease: the action is refused, and nothing changes.
	other := otherApply(t, testPrefix+"other-apply", time.Now(), 0)
	other.HolderHost = "elsewhere"
	// Run before the destroy above (cleanups run last first): a test stopped while the other
	// apply held the lease leaves nothing behind.
	t.Cleanup(func() {
		if _, release, err := other.Hold(context.Background(), name, nil); err == nil {
			release(true)
		}
	})
	takeLease(t, other, name)
	_, gen := recordMeta(t, name)
	out, err := c.run("apply", "-auto-approve", "-no-color", "-invoke=action.virt_instance_recreate.two")
	if err == nil {
		t.Fatalf("the recreate ran while another apply held the group's lease:\n%s", out)
	}
	t.Logf("terraform apply -invoke=action.virt_instance_recreate.two under another's lease:\n%s", out)
	if !regexp.MustCompile(`(?s)being changed by\s+another\s+apply\s+\(` + testPrefix + `other-apply\)`).MatchString(out) {
		t.Fatalf("the refused recreate does not name the lease's holder:\n%s", out)
	}
	check("after the refused recreate", ids.same(t, name), uuids.check(t, name, n2, true), checkGeneration(t, name, &gen))
	_, release, err := other.Hold(context.Background(), name, nil)
	if err != nil {
		t.Fatal(err)
	}
	release(true)
	// The lease is taken again between the action's plan and its run: the run is refused too.
	c.must("plan", "-no-color", "-invoke=action.virt_instance_recreate.two", "-out=recreate.tfplan")
	takeLease(t, other, name)
	_, gen = recordMeta(t, name)
	out, err = c.run("apply", "-no-color", "recreate.tfplan")
	t.Logf("terraform apply of the recreate's plan under another's lease:\n%s", out)
	if err == nil || !regexp.MustCompile(`(?s)being changed by\s+another\s+apply\s+\(`+testPrefix+`other-apply\)`).MatchString(out) {
		t.Fatalf("the recreate's run under another apply's lease was not refused with the lease error (%v):\n%s", err, out)
	}
	check("after the refused run", ids.same(t, name), uuids.check(t, name, n2, true), checkGeneration(t, name, &gen))
	if _, release, err = other.Hold(context.Background(), name, nil); err != nil {
		t.Fatal(err)
	}
	release(true)

	// recreate of member 2 of 3.
	out = c.must("apply", "-auto-approve", "-no-color", "-invoke=action.virt_instance_recreate.two")
	t.Logf("terraform apply -invoke=action.virt_instance_recreate.two:\n%s", out)
	if !strings.Contains(out, "instance 1 of 1 recreated: "+n2) {
		t.Errorf("the recreate's output does not show its progress:\n%s", out)
	}
	check("after the recreate",
		checkMembers(t, name, "RUNNING", n1, n2, n3),
		uuids.check(t, name, n2, false), sums.same(t, data2),
		uuids.check(t, name, n1, true), uuids.check(t, name, n3, true),
		sameDomainIDs(t, name, ids, n1, n3))
	c.emptyPlan("the recreate")

	// restart of member 1: same UUID, a new QEMU process.
	check("before the restart", uuids.record(t, name), ids.record(t, name))
	c.must("apply", "-auto-approve", "-no-color", "-invoke=action.virt_instance_restart.one")
	check("after the restart",
		checkMembers(t, name, "RUNNING", n1, n2, n3),
		uuids.check(t, name, n1, true), sums.same(t, data2), sameDomainIDs(t, name, ids, n2, n3),
		func(*terraform.State) error {
			if id := members(t, name)[n1].ID; id == ids[n1] {
				return fmt.Errorf("%s still has domain id %d: it was not restarted", n1, id)
			}
			return nil
		})
	c.emptyPlan("the restart")

	// preserve and release of member 3: its record only, no disruption.
	check("before the preserve", ids.record(t, name))
	c.must("apply", "-auto-approve", "-no-color", "-invoke=action.virt_instance_preserve.three")
	check("after the preserve", ids.same(t, name), memberPreserved(t, name, n3, "NOW"))
	c.emptyPlan("the preserve")
	c.must("apply", "-auto-approve", "-no-color", "-invoke=action.virt_instance_release.three")
	check("after the release", ids.same(t, name), memberPreserved(t, name, n3, ""))
	c.emptyPlan("the release")

	// An action_trigger runs the restart after an update of the group in the same apply.
	check("before the triggered restart", uuids.record(t, name), ids.record(t, name))
	trigger := "  running = true\n  lifecycle {\n    action_trigger {\n      events  = [after_update]\n      actions = [action.virt_instance_restart.one]\n    }\n  }\n"
	c.write(groupConfig(name, 3, diskBlocks(8, "data")+"\n    description = \"triggered\"", trigger) + dataPolicy + instanceActions(name))
	out = c.must("apply", "-auto-approve", "-no-color")
	if !strings.Contains(out, "instance 1 of 1 restarted: "+n1) {
		t.Errorf("the apply does not show the triggered restart:\n%s", out)
	}
	check("after the triggered restart",
		uuids.check(t, name, n1, true), sameDomainIDs(t, name, ids, n2, n3),
		func(*terraform.State) error {
			if id := members(t, name)[n1].ID; id == ids[n1] {
				return fmt.Errorf("%s still has domain id %d: the triggered action did not restart it", n1, id)
			}
			return nil
		})
	c.emptyPlan("the triggered restart")

	// A name that is not a member: refused, naming it, and nothing changes.
	check("before the unknown member", uuids.record(t, name), ids.record(t, name))
	_, gen = recordMeta(t, name)
	out, err = c.run("apply", "-auto-approve", "-no-color", "-invoke=action.virt_instance_recreate.unknown")
	if err == nil {
		t.Fatalf("a recreate naming a member the group does not have ran:\n%s", out)
	}
	t.Logf("terraform apply -invoke=action.virt_instance_recreate.unknown:\n%s", out)
	if !regexp.MustCompile(`(?s)"` + name + `-9"\s+is\s+not\s+a\s+member`).MatchString(out) {
		t.Fatalf("the refusal does not name the unknown member:\n%s", out)
	}
	check("after the refused recreate", ids.same(t, name), uuids.check(t, name, n2, true), checkGeneration(t, name, &gen))
}

// sameDomainIDs checks that the named members still run in the domains ids recorded.
func sameDomainIDs(t *testing.T, base string, ids domainIDs, names ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		got := members(t, base)
		for _, n := range names {
			if got[n].ID != ids[n] {
				return fmt.Errorf("%s has domain id %d, had %d: it was restarted or recreated", n, got[n].ID, ids[n])
			}
		}
		return nil
	}
}

// memberPreserved checks the member's preservation as its record on the host has it ("" for
// none).
func memberPreserved(t *testing.T, base, member, want string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		r := reconcile.New(testLibvirt(t))
		s, err := r.Load(context.Background(), base)
		if err != nil {
			return err
		}
		o, err := r.Observe(context.Background(), s)
		if err != nil {
			return err
		}
		for _, m := range o.Observed {
			if m.Name == member {
				if m.Instance.Preserved != want {
					return fmt.Errorf("%s is preserved %q, want %q", member, m.Instance.Preserved, want)
				}
				return nil
			}
		}
		return fmt.Errorf("%s is not a member of %s", member, base)
	}
}
