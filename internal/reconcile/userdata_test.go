package reconcile

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/seed"
	"github.com/virtfleet/terraform-provider-virt/internal/store"
)

// The write-only user data of these tests: a value no other part of a seed or record holds.
const (
	secretOne = "#cloud-config\npassword: s3cret-one\n"
	secretTwo = "#cloud-config\npassword: s3cret-two\n"
)

func woSpec(size int, version int64) engine.GroupState {
	s := cloudSpec(size)
	s.Group.Template.CloudInit = &engine.CloudInit{UserDataWOVersion: version}
	return s
}

// applyGroup is an apply of the group's own resource: it has the write-only user data of its
// configuration.
func applyGroup(t *testing.T, b *fake.Backend, s engine.GroupState, userData string) {
	t.Helper()
	ctx := WithSecrets(context.Background(), Secrets{UserData: userData, UserDataVersion: s.Group.Template.CloudInit.UserDataWOVersion})
	if err := New(b).Apply(ctx, recorded(t, b, s)); err != nil {
		t.Fatalf("apply: %v", err)
	}
}

// userDataOf is the user-data file of the member's seed on the fake host.
func userDataOf(t *testing.T, b *fake.Backend, member string) string {
	t.Helper()
	ud, err := seed.UserData([]byte(seedOf(t, b, member)))
	if err != nil {
		t.Fatalf("seed of %s: %v", member, err)
	}
	return ud
}

func uuidsOf(b *fake.Backend) map[string]string {
	out := map[string]string{}
	for n, d := range b.Domains {
		out[n] = d.UUID
	}
	return out
}

// The group's apply writes the write-only user data into the seeds and nowhere else: the member
// records (domain metadata) keep only its version. A new version replaces the members, each
// with a seed of the new user data.
func TestUserDataWO_writtenIntoTheSeedOnlyAndANewVersionReplaces(t *testing.T) {
	t.Parallel()
	b := fake.New()
	applyGroup(t, b, woSpec(2, 1), secretOne)
	for _, n := range []string{"db-1", "db-2"} {
		if got := userDataOf(t, b, n); got != secretOne {
			t.Fatalf("%s's seed user-data %q, want the apply's", n, got)
		}
		rec := b.Domains[n].Spec.Record.Instance
		el, err := store.EncodeMember(store.Member{Group: "db", Index: 1, Instance: rec}, true)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(el, "s3cret") {
			t.Fatalf("%s's record holds the user data:\n%s", n, el)
		}
		if v := rec.Current.CloudInit.UserDataWOVersion; v != 1 {
			t.Fatalf("%s's record has user_data_wo_version %d, want 1", n, v)
		}
	}
	before := uuidsOf(b)
	applyGroup(t, b, woSpec(2, 2), secretTwo)
	for n, uuid := range uuidsOf(b) {
		if uuid == before[n] {
			t.Errorf("%s kept its UUID: a new user_data_wo_version did not replace it", n)
		}
		if got := userDataOf(t, b, n); got != secretTwo {
			t.Errorf("%s's seed user-data %q after the new version, want the new one", n, got)
		}
	}
	// The same version again with another value: Terraform cannot see the change, and neither
	// does the plan.
	uuids := uuidsOf(b)
	applyGroup(t, b, woSpec(2, 2), secretOne)
	if got := uuidsOf(b); !maps.Equal(got, uuids) {
		t.Fatalf("the same version replaced members: %v -> %v", uuids, got)
	}
}

// A run without the apply's user data (a per-instance config's apply, or any seed writer but the
// group's apply) that writes a member's seed rebuilds it with the user data of the member's
// current seed, which holds the same version: the seed keeps the user data.
func TestUserDataWO_aRunWithoutItKeepsTheSeedsUserData(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		change      func(s *engine.GroupState)
		sameUUID    bool
		wantSwapped bool
	}{
		"config metadata (live swap)": {
			change: func(s *engine.GroupState) {
				s.Configs = map[string]engine.ConfigEntry{"db-1": {Config: engine.InstanceConfig{Metadata: map[string]string{"node": "a"}}, MostDisruptiveAllowed: engine.ActionReplace}}
			},
			sameUUID: true, wantSwapped: true,
		},
		"template metadata and memory (restart)": {
			change: func(s *engine.GroupState) {
				s.Group.Template.Metadata = map[string]string{"node": "a"}
				s.Group.Template.MemoryMiB = 128
			},
			sameUUID: true,
		},
		"boot image (replacement)": {
			change: func(s *engine.GroupState) {
				s.Group.Template.Metadata = map[string]string{"node": "a"}
				s.Group.Template.BootDisk.SourceImage = "/images/new.qcow2"
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := fake.New()
			s := woSpec(1, 1)
			applyGroup(t, b, s, secretOne)
			uuid := b.Domains["db-1"].UUID
			tc.change(&s)
			apply(t, b, s) // no secrets: not the group's apply
			if got := b.Domains["db-1"].UUID == uuid; got != tc.sameUUID {
				t.Fatalf("same UUID %t, want %t", got, tc.sameUUID)
			}
			if got := b.Calls["replace-seed"] > 0; got != tc.wantSwapped {
				t.Fatalf("seed swapped live %t, want %t; log %v", got, tc.wantSwapped, b.Log)
			}
			if b.Calls["read-seed"] != 1 {
				t.Fatalf("read-seed called %d times, want once", b.Calls["read-seed"])
			}
			if data := seedOf(t, b, "db-1"); !strings.Contains(data, `node: "a"`) {
				t.Fatal("the seed was not written again with the new metadata")
			}
			if got := userDataOf(t, b, "db-1"); got != secretOne {
				t.Fatalf("seed user-data %q after a run without the secret, want the member's own", got)
			}
		})
	}
}

// Where the member's seed cannot give the user data the seed needs (it is gone, or the member
// needs another version, or a new member has no seed yet), a run without the apply's user data
// refuses, naming the group's apply, and changes nothing of the member.
func TestUserDataWO_aRunWithoutItRefusesWhatOnlyTheGroupCanWrite(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		change func(b *fake.Backend, s *engine.GroupState)
	}{
		"seed volume gone": {
			change: func(b *fake.Backend, s *engine.GroupState) {
				delete(b.Volumes, "p/db-1-cidata.iso")
				s.Configs = map[string]engine.ConfigEntry{"db-1": {Config: engine.InstanceConfig{Metadata: map[string]string{"node": "a"}}, MostDisruptiveAllowed: engine.ActionReplace}}
			},
		},
		"seed not a seed": {
			change: func(b *fake.Backend, s *engine.GroupState) {
				b.Volumes["p/db-1-cidata.iso"].Data = "garbage"
				s.Configs = map[string]engine.ConfigEntry{"db-1": {Config: engine.InstanceConfig{Metadata: map[string]string{"node": "a"}}, MostDisruptiveAllowed: engine.ActionReplace}}
			},
		},
		"a new version": {
			change: func(_ *fake.Backend, s *engine.GroupState) {
				s.Group.Template.CloudInit.UserDataWOVersion = 2
			},
		},
		"a new member": {
			change: func(_ *fake.Backend, s *engine.GroupState) {
				s.Group.TargetSize = 2
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := fake.New()
			s := woSpec(1, 1)
			applyGroup(t, b, s, secretOne)
			uuid, id := b.Domains["db-1"].UUID, b.Domains["db-1"].ID
			tc.change(b, &s)
			seedBefore := b.Volumes["p/db-1-cidata.iso"]
			calls := maps.Clone(b.Calls)
			err := New(b).Apply(context.Background(), s)
			if err == nil || !strings.Contains(err.Error(), "user_data_wo") || !strings.Contains(err.Error(), "apply on the group") {
				t.Fatalf("apply: %v, want a refusal naming user_data_wo and the group's apply", err)
			}
			if d := b.Domains["db-1"]; d.UUID != uuid || d.ID != id {
				t.Fatalf("db-1 changed: UUID %s -> %s, id %d -> %d", uuid, d.UUID, id, d.ID)
			}
			if b.Volumes["p/db-1-cidata.iso"] != seedBefore {
				t.Fatal("db-1's seed volume was written")
			}
			if _, ok := b.Domains["db-2"]; ok {
				t.Fatal("a member was created without its user data")
			}
			for _, op := range []string{"write-seed", "replace-seed", "stop", "shutdown", "undefine", "define"} {
				if b.Calls[op] != calls[op] {
					t.Errorf("%s called during a refused run (%d -> %d)", op, calls[op], b.Calls[op])
				}
			}
		})
	}
}

// An apply whose user data is for another version than a member's seed needs (a rollback to the
// template before a new version) never writes the wrong user data under the recorded version.
func TestUserDataWO_theApplysValueOnlyForItsVersion(t *testing.T) {
	t.Parallel()
	b := fake.New()
	s := woSpec(1, 1)
	applyGroup(t, b, s, secretOne)
	s.Group.TargetSize = 2
	ctx := WithSecrets(context.Background(), Secrets{UserData: secretTwo, UserDataVersion: 2})
	err := New(b).Apply(ctx, s)
	if err == nil || !strings.Contains(err.Error(), "user_data_wo_version 1") {
		t.Fatalf("apply: %v, want a refusal naming version 1", err)
	}
	if _, ok := b.Domains["db-2"]; ok {
		t.Fatal("db-2 was created with the user data of another version")
	}
	var se *StepError
	if !errors.As(err, &se) || se.Down {
		t.Fatalf("error %v: want a step error of a member not taken down", err)
	}
}

// Autohealing in a run without the apply's user data (a per-instance config's apply heals too)
// replaces a failed member with a seed that keeps its user data.
func TestUserDataWO_autohealWithoutItKeepsTheSeedsUserData(t *testing.T) {
	t.Parallel()
	b := fake.New()
	s := woSpec(1, 1)
	s.Group.AutoHealing = &engine.AutoHealing{InitialDelay: "0s"}
	applyGroup(t, b, s, secretOne)
	uuid := b.Domains["db-1"].UUID
	// Shut off while it should run, its boot volume gone: FAILED, and only a replacement helps.
	b.Domains["db-1"].ID = -1
	delete(b.Volumes, "p/db-1-boot.qcow2")
	apply(t, b, s)
	d := b.Domains["db-1"]
	if d.UUID == uuid || d.ID < 0 || d.Spec.Record.Instance.Heals != 1 {
		t.Fatalf("db-1 after the heal: UUID %s (was %s), id %d, heals %d; want a running replacement", d.UUID, uuid, d.ID, d.Spec.Record.Instance.Heals)
	}
	if got := userDataOf(t, b, "db-1"); got != secretOne {
		t.Fatalf("the healed member's seed has user-data %q, want its own", got)
	}
}
