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

// snapshot is each domain's UUID and hypervisor id: a replaced domain has a new UUID, a restarted
// one a new id, an untouched one both the same.
type snapshot map[string][2]string

func snap(b *fake.Backend) snapshot {
	out := snapshot{}
	for n, d := range b.Domains {
		out[n] = [2]string{d.UUID, string('0' + d.ID)}
	}
	return out
}

func imageChange(size int, image string) engine.GroupState {
	s := withPolicy(spec(size), engine.DeleteNever)
	s.Group.ShutdownTimeout = "0s"
	s.Group.Template.BootDisk.SourceImage = image
	return s
}

// failOnce makes the n-th call of op on obj fail, once.
func failOnce(b *fake.Backend, op, obj string, n int) {
	calls := 0
	b.Hook = func(o, x string) error {
		if o == op && x == obj {
			if calls++; calls == n {
				return errors.New("injected fault")
			}
		}
		return nil
	}
}

// TestExecute_rolloutStopsAtTheFirstFailure runs a 4-member REPLACE one member per wave and
// injects a fault in the second wave, before and after the member is stopped: the first member is
// replaced, the failing one is either untouched or down with its preserved disk, the last two are
// untouched, the error names member and step, and the next apply finishes the rollout.
func TestExecute_rolloutStopsAtTheFirstFailure(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		op, obj  string
		n        int
		step     string
		down     bool
		db2Alive bool
	}{
		{"bad image, before the stop", "ensure-volume", "db-2-boot.staging.qcow2", 1, "stage the new boot volume", false, true},
		{"definition refused, before the stop", "define", "db-2", 1, "define the new definition", false, true},
		{"define after the stop", "define", "db-2", 2, "define", true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := fake.New()
			apply(t, b, imageChange(4, "/images/a.qcow2"))
			b.Volumes["p/db-2-data.qcow2"].Data = "precious"
			before := snap(b)
			failOnce(b, c.op, c.obj, c.n)
			err := New(b).Apply(context.Background(), imageChange(4, "/images/b.qcow2"))
			var re *RolloutError
			if !errors.As(err, &re) {
				t.Fatalf("error %v, want a RolloutError", err)
			}
			if re.Wave != 2 || len(re.Failed) != 1 || re.Failed[0].Op.Name != "db-2" || re.Failed[0].Step != c.step || re.Failed[0].Down != c.down {
				t.Fatalf("failure %+v in wave %d, want db-2 at %q (down %v) in wave 2", re.Failed, re.Wave, c.step, c.down)
			}
			for _, want := range []string{"db-2", c.step, "db-1 (replace)", "db-3 (replace), db-4 (replace)", "injected fault"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
			after := snap(b)
			if after["db-1"][0] == before["db-1"][0] || b.Volumes["p/db-1-boot.qcow2"].Backing != "/images/b.qcow2" {
				t.Error("db-1 was not replaced in the first wave")
			}
			for _, n := range []string{"db-3", "db-4"} {
				if after[n] != before[n] || b.Domains[n].ID <= 0 {
					t.Errorf("%s was touched: %v -> %v", n, before[n], after[n])
				}
			}
			if _, alive := b.Domains["db-2"]; alive != c.db2Alive {
				t.Fatalf("db-2 defined = %v, want %v", alive, c.db2Alive)
			}
			if c.db2Alive && (after["db-2"] != before["db-2"] || b.Domains["db-2"].ID <= 0) {
				t.Errorf("db-2 should still run as it was: %v -> %v", before["db-2"], after["db-2"])
			}
			if b.Volumes["p/db-2-data.qcow2"].Data != "precious" {
				t.Fatal("db-2's preserved volume lost its data")
			}
			b.Hook = nil
			apply(t, b, imageChange(4, "/images/b.qcow2"))
			for _, n := range []string{"db-1", "db-2", "db-3", "db-4"} {
				if b.Volumes["p/"+n+"-boot.qcow2"].Backing != "/images/b.qcow2" || b.Domains[n].ID <= 0 {
					t.Errorf("%s not finished by the next apply", n)
				}
			}
			if b.Volumes["p/db-2-data.qcow2"].Data != "precious" {
				t.Fatal("the next apply lost db-2's preserved data")
			}
			if slices.ContainsFunc(b.VolumeNames("p"), func(v string) bool { return strings.Contains(v, "staging") }) {
				t.Fatalf("a staged volume was left: %v", b.VolumeNames("p"))
			}
		})
	}
}

// TestExecute_gracefulStop orders the calls of a stop: an ACPI request and a wait, then a power
// off only when the guest did not stop in time; "0s" powers off at once.
func TestExecute_gracefulStop(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		timeout string
		ignores bool
		want    []string
	}{
		{"guest honours ACPI", "30s", false, []string{"shutdown db-1", "wait-stopped db-1", "undefine db-1"}},
		{"guest ignores ACPI", "30s", true, []string{"shutdown db-1", "wait-stopped db-1", "stop db-1", "undefine db-1"}},
		{"no timeout", "0s", false, []string{"stop db-1", "undefine db-1"}},
		{"default timeout", "", true, []string{"shutdown db-1", "wait-stopped db-1", "stop db-1", "undefine db-1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := fake.New()
			s := spec(1)
			s.Group.ShutdownTimeout = c.timeout
			apply(t, b, s)
			b.Domains["db-1"].IgnoresACPI = c.ignores
			b.Log = nil
			s.Group.TargetSize = 0
			apply(t, b, s)
			var got []string
			for _, l := range b.Log {
				if strings.HasSuffix(l, " db-1") && !strings.HasPrefix(l, "list") {
					got = append(got, l)
				}
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("calls %v, want %v", got, c.want)
			}
		})
	}
}

// TestApply_recreatedMemberGetsAFreshBootVolume: a member undefined behind Terraform's back leaves
// its boot volume, an overlay of the old image; after an image change it must not be reused.
func TestApply_recreatedMemberGetsAFreshBootVolume(t *testing.T) {
	t.Parallel()
	b := fake.New()
	apply(t, b, imageChange(1, "/images/a.qcow2"))
	b.Volumes["p/db-1-data.qcow2"].Data = "precious"
	delete(b.Domains, "db-1")
	apply(t, b, imageChange(1, "/images/b.qcow2"))
	if got := b.Volumes["p/db-1-boot.qcow2"].Backing; got != "/images/b.qcow2" {
		t.Fatalf("boot volume backs onto %s", got)
	}
	if b.Volumes["p/db-1-data.qcow2"].Data != "precious" {
		t.Fatal("the preserved volume was not reused")
	}
}

// policyRemoved makes two members whose data disks a policy preserves with NEVER, then removes the
// policy in run-1 as the policy's destroy does: released, then applied.
func policyRemoved(t *testing.T) (*fake.Backend, engine.GroupState, *Reconciler) {
	t.Helper()
	b := fake.New()
	s := withPolicy(spec(2), engine.DeleteNever)
	apply(t, b, s)
	policyRun := &Reconciler{Backend: b, Workers: 2, Env: engine.Env{Run: "run-1"}}
	s.Release(policyRun.Env.Run)
	s.Policy = nil
	if err := policyRun.Apply(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return b, s, policyRun
}

// TestDestroy_keepsWhatThePolicyPreservedWhenTheRunBegan: Terraform destroys the policy before the
// group, and removing the policy makes its disks stateless at once. The group's destroy of the
// same run keeps the NEVER volumes. A later run's destroy keeps them while the release is
// unfinished (the policy's removal, or the group's destroy that honoured it, was cut off), also
// when that later run releases something of its own; a finished removal, or the group resource's
// own apply since, leaves them stateless for good, and the destroy deletes them.
func TestDestroy_keepsWhatThePolicyPreservedWhenTheRunBegan(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name         string
		sameRun      bool
		between      func(s *engine.GroupState)
		wantDataLeft bool
	}{
		{"same run", true, func(*engine.GroupState) {}, true},
		{"later run, the removal cut off", false, func(*engine.GroupState) {}, true},
		{"later run, the removal finished", false, func(s *engine.GroupState) { s.FinishRelease("run-1") }, false},
		{"later run, the group's destroy cut off", false, func(s *engine.GroupState) {
			s.FinishRelease("run-1")
			s.DestroyBegins("run-1")
		}, true},
		{"later run that releases a config of its own", false, func(s *engine.GroupState) { s.Release("run-2") }, true},
		{"later run, the group applied since", false, func(s *engine.GroupState) { s.Applied() }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, s, policyRun := policyRemoved(t)
			if b.Domains["db-1"].Spec.Record.Instance.Current.Disks[1].Preserved {
				t.Fatal("removing the policy did not make the disk stateless at once")
			}
			c.between(&s)
			groupRun := policyRun
			if !c.sameRun {
				groupRun = &Reconciler{Backend: b, Workers: 2, Env: engine.Env{Run: "run-2"}}
			}
			if err := groupRun.Destroy(context.Background(), s); err != nil {
				t.Fatal(err)
			}
			var want []string
			if c.wantDataLeft {
				want = []string{"db-1-data.qcow2", "db-2-data.qcow2"}
			}
			if got := b.VolumeNames("p"); !slices.Equal(got, want) {
				t.Fatalf("volumes left %v, want %v", got, want)
			}
		})
	}
}

// TestDestroy_marksTheReleaseItHonours: a destroy that honours its own run's finished release,
// under the hold it takes (HoldToDestroy, as the group resource's destroy does), marks it
// unfinished in the record before it deletes anything, so that the destroy run again after a
// cut-off keeps honouring it.
func TestDestroy_marksTheReleaseItHonours(t *testing.T) {
	t.Parallel()
	b, s, policyRun := policyRemoved(t)
	s.FinishRelease("run-1")
	ctx := context.Background()
	if _, err := policyRun.Change(ctx, "db", "", func(gs *engine.GroupState, _ bool) error { *gs = s; return nil }); err != nil {
		t.Fatal(err)
	}
	b.FailOn["undefine db-2"] = errors.New("injected")
	held, release, _, err := policyRun.HoldToDestroy(ctx, "db", nil)
	if err != nil {
		t.Fatal(err)
	}
	s, _, err = policyRun.LoadRecord(held, "db")
	if err != nil {
		t.Fatal(err)
	}
	if err := policyRun.Destroy(held, s); err == nil {
		t.Fatal("the destroy did not fail")
	}
	release(false)
	stored, _, err := policyRun.LoadRecord(ctx, "db")
	if err != nil {
		t.Fatal(err)
	}
	if stored.Released == nil || !stored.Released.Unfinished {
		t.Fatalf("after a cut-off destroy the release is %+v, want it unfinished", stored.Released)
	}
}

// TestApply_aLaterRunDoesNotHonourAnEarlierRelease: outside the group's own destroy, a release
// protects only the deletions of its own run: a scale-in in a later run deletes the volumes the
// removed policy had preserved, as stateless ones.
func TestApply_aLaterRunDoesNotHonourAnEarlierRelease(t *testing.T) {
	t.Parallel()
	b, s, _ := policyRemoved(t)
	s.Group.TargetSize = 1
	if err := (&Reconciler{Backend: b, Workers: 2, Env: engine.Env{Run: "run-2"}}).Apply(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Volumes["p/db-2-data.qcow2"]; ok {
		t.Fatal("a scale-in of a later run kept a volume only an earlier run's release protected")
	}
}

// TestApply_configDiskRemovedStaysAttached: a config that swapped a template disk for the user's
// volume lets it go; the volume stays attached, now stateless, with no restart.
func TestApply_configDiskRemovedStaysAttached(t *testing.T) {
	t.Parallel()
	b := fake.New()
	s := spec(1)
	b.Volumes["p/blue-src.qcow2"] = &fake.Volume{SizeMiB: 8, Data: "user's"}
	s.Group.Template.Disks = []engine.Disk{{DeviceName: "blue", SizeMiB: 8}}
	s.Configs = map[string]engine.ConfigEntry{"db-1": {Config: engine.InstanceConfig{Disks: []engine.ConfigDisk{{DeviceName: "blue", Source: "blue-src.qcow2"}}}}}
	apply(t, b, s)
	before := ids(b)
	s.Configs = nil
	apply(t, b, s)
	d := b.Domains["db-1"]
	i := slices.IndexFunc(d.Spec.Disks, func(x backend.Disk) bool { return x.DeviceName == "blue" })
	if i < 0 || d.Spec.Disks[i].Volume != "blue-src.qcow2" {
		t.Fatalf("blue is %+v, want the user's volume still attached", d.Spec.Disks)
	}
	if !equalIDs(before, ids(b)) || b.Calls["stop"] != 0 {
		t.Fatal("letting a config disk go restarted the member")
	}
	if blue, _ := d.Spec.Record.Instance.Current.DiskByName("blue"); blue.Preserved {
		t.Fatal("the disk is still recorded as preserved")
	}
	if _, ok := b.Volumes["p/db-1-blue.qcow2"]; ok {
		t.Fatal("a template volume was made for a disk that stays on the user's volume")
	}
	// The next recreation builds the template's own volume and leaves the user's alone.
	s.Group.Policy.MinimalAction = engine.ActionReplace
	s.Group.Template.Description = "replace"
	apply(t, b, s)
	d = b.Domains["db-1"]
	i = slices.IndexFunc(d.Spec.Disks, func(x backend.Disk) bool { return x.DeviceName == "blue" })
	if i < 0 || d.Spec.Disks[i].Volume != "db-1-blue.qcow2" || b.Volumes["p/blue-src.qcow2"].Data != "user's" {
		t.Fatalf("after a replacement blue is %+v", d.Spec.Disks)
	}
}

// TestApply_policyChangeNeverRestarts: under minimal_action RESTART, a stateful policy change is
// bookkeeping and restarts nothing, while a template change is raised to a restart.
func TestApply_policyChangeNeverRestarts(t *testing.T) {
	t.Parallel()
	b := fake.New()
	s := spec(2)
	s.Group.Policy.MinimalAction = engine.ActionRestart
	apply(t, b, s)
	before := ids(b)
	for _, rule := range []string{engine.DeleteNever, engine.DeleteOnPermanentDeletion} {
		apply(t, b, withPolicy(s, rule))
	}
	apply(t, b, s)
	if !equalIDs(before, ids(b)) || b.Calls["stop"] != 0 {
		t.Fatalf("a policy change restarted members: %v -> %v", before, ids(b))
	}
	if b.Domains["db-1"].Spec.Record.Instance.Current.Disks[1].Preserved {
		t.Fatal("the policy's removal was not recorded")
	}
	s.Group.Template.Metadata = map[string]string{"role": "web"}
	apply(t, b, s)
	if equalIDs(before, ids(b)) {
		t.Fatal("a metadata change was not raised to the minimal action")
	}
}

// TestRolloutError_saysWhatBecameOfTheMember: a failed creation says the member is new (it has
// no previous state to keep); a change that failed before the stop says the member keeps its
// state; one that failed after it says the next apply brings it back.
func TestRolloutError_saysWhatBecameOfTheMember(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		failed    StepError
		want, not string
	}{
		{"a create", StepError{Op: engine.Operation{Kind: engine.OpCreate, Name: "db-4"}, Step: "define", Err: errors.New("boom")}, `Member db-4 was not created: step "define" failed: boom; the next apply creates it.`, "keeps its previous state"},
		{"a create that was down", StepError{Op: engine.Operation{Kind: engine.OpCreate, Name: "db-4"}, Step: "start", Down: true, Err: errors.New("boom")}, "the next apply creates it", "rollout"},
		{"a create's image gone", StepError{Op: engine.Operation{Kind: engine.OpCreate, Name: "db-4"}, Step: "prepare", Err: errors.New("no such file")}, "; the next apply creates it.", "finishes the rollout"},
		{"a replace before the stop", StepError{Op: engine.Operation{Kind: engine.OpReplace, Name: "db-1"}, Step: "prepare", Err: errors.New("boom")}, "keeps its previous state", "not created"},
		{"a replace after the stop", StepError{Op: engine.Operation{Kind: engine.OpReplace, Name: "db-1"}, Step: "define", Down: true, Err: errors.New("boom")}, "the next apply brings it back", "not created"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := (&RolloutError{Wave: 1, Waves: 1, Failed: []*StepError{&tt.failed}}).Error()
			if !strings.Contains(msg, tt.want) || strings.Contains(msg, tt.not) {
				t.Fatalf("the error says %q; want it to say %q and not %q", msg, tt.want, tt.not)
			}
		})
	}
}

// TestApply_newMemberWhoseImageVanished: a scale-out whose new member cannot be made (its image
// was removed between plan and apply) reports that member as not created and says the next
// apply creates it; it is not called a rollout that keeps a previous state.
func TestApply_newMemberWhoseImageVanished(t *testing.T) {
	t.Parallel()
	b := fake.New()
	apply(t, b, spec(2))
	b.Hook = func(op, obj string) error {
		if op == "ensure-volume" && obj == "db-3-boot.qcow2" {
			return errors.New("cannot open backing file /images/base.qcow2: no such file")
		}
		return nil
	}
	err := New(b).Apply(context.Background(), spec(3))
	if err == nil {
		t.Fatal("the apply succeeded")
	}
	msg := err.Error()
	for _, want := range []string{"the apply stopped", "Member db-3 was not created", "no such file", "; the next apply creates it."} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error does not say %q: %s", want, msg)
		}
	}
	for _, not := range []string{"keeps its previous state", "finishes the rollout", "rollout stopped"} {
		if strings.Contains(msg, not) {
			t.Errorf("the error says %q: %s", not, msg)
		}
	}
	if _, ok := b.Domains["db-3"]; ok {
		t.Error("db-3 was defined")
	}
}
