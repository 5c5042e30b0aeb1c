package reconcile

import (
	"context"
	"strings"
	"testing"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/store"
)

func withConsole(s engine.GroupState, version int64) engine.GroupState {
	s.Group.Template.Graphics = &engine.Graphics{Type: engine.GraphicsVNC, Listen: "127.0.0.1", PasswordVersion: version}
	return s
}

func applyWith(t *testing.T, b *fake.Backend, s engine.GroupState, password string) {
	t.Helper()
	ctx := WithSecrets(context.Background(), Secrets{GraphicsPassword: password})
	if err := New(b).Apply(ctx, recorded(t, b, s)); err != nil {
		t.Fatalf("apply: %v", err)
	}
}

// The write-only password reaches the domain's definition and nothing the provider stores: the
// member record (template and applied instance) keeps only its version.
func TestApply_graphicsPasswordIsDefinedNotRecorded(t *testing.T) {
	t.Parallel()
	b := fake.New()
	applyWith(t, b, withConsole(spec(1), 1), "pw-one")
	d := b.Domains["db-1"]
	if d.Spec.Graphics == nil || d.Spec.Graphics.Password != "pw-one" || d.Spec.Graphics.Type != "vnc" || d.Spec.Graphics.Listen != "127.0.0.1" {
		t.Fatalf("console %+v, want vnc on 127.0.0.1 with the apply's password", d.Spec.Graphics)
	}
	el, err := store.EncodeMember(store.Member{Group: "db", Index: 1, Instance: d.Spec.Record.Instance}, true)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(el, "pw-one") {
		t.Fatalf("the member record holds the password:\n%s", el)
	}
	if g := d.Spec.Record.Instance.Current.Graphics; g == nil || g.PasswordVersion != 1 {
		t.Fatalf("recorded console %+v, want password version 1", g)
	}
}

// A new password version is set live: no restart, the record's version follows.
func TestApply_graphicsPasswordVersionIsLive(t *testing.T) {
	t.Parallel()
	b := fake.New()
	applyWith(t, b, withConsole(spec(2), 1), "pw-one")
	before := ids(b)
	applyWith(t, b, withConsole(spec(2), 2), "pw-two")
	if !equalIDs(before, ids(b)) || b.Calls["stop"]+b.Calls["shutdown"] != 0 {
		t.Fatalf("ids %v -> %v, stops %d: the new password restarted members", before, ids(b), b.Calls["stop"]+b.Calls["shutdown"])
	}
	for _, n := range []string{"db-1", "db-2"} {
		d := b.Domains[n]
		if d.Spec.Graphics.Password != "pw-two" || d.Spec.Record.Instance.Current.Graphics.PasswordVersion != 2 {
			t.Fatalf("%s: password %q, recorded version %d", n, d.Spec.Graphics.Password, d.Spec.Record.Instance.Current.Graphics.PasswordVersion)
		}
	}
	calls := b.Calls["set-graphics-password"]
	applyWith(t, b, withConsole(spec(2), 2), "pw-two")
	if b.Calls["set-graphics-password"] != calls {
		t.Fatal("the apply after the change set the password again")
	}
}

// A run without the apply's secrets (another resource's apply) that restarts or replaces a
// member keeps the password its domain has.
func TestApply_runWithoutSecretsKeepsTheDomainsPassword(t *testing.T) {
	t.Parallel()
	b := fake.New()
	applyWith(t, b, withConsole(spec(1), 1), "pw-one")
	s := withConsole(spec(1), 1)
	s.Group.Template.VCPU = 2
	apply(t, b, s) // a restart
	if d := b.Domains["db-1"]; d.Spec.VCPU != 2 || d.Spec.Graphics.Password != "pw-one" {
		t.Fatalf("after the restart: vcpu %d, password %q", d.Spec.VCPU, d.Spec.Graphics.Password)
	}
	s.Group.Template.BootDisk.SourceImage = "/images/new.qcow2"
	apply(t, b, s) // a replacement
	if d := b.Domains["db-1"]; d.Spec.Graphics.Password != "pw-one" {
		t.Fatalf("after the replacement: password %q", d.Spec.Graphics.Password)
	}
}

// The group's own apply of a configuration that leaves password_wo out (its version the
// group's, as generated configuration has it) keeps the password the member's domain has when it
// restarts the member, as a run without secrets does; a new member still needs the value.
func TestApply_groupApplyWithoutThePasswordKeepsTheDomains(t *testing.T) {
	t.Parallel()
	b := fake.New()
	applyWith(t, b, withConsole(spec(1), 1), "pw-one")
	s := withConsole(spec(1), 1)
	s.Group.Template.VCPU = 2
	applyWith(t, b, s, "") // a restart
	if d := b.Domains["db-1"]; d.Spec.VCPU != 2 || d.Spec.Graphics.Password != "pw-one" {
		t.Fatalf("after the restart: vcpu %d, password %q", d.Spec.VCPU, d.Spec.Graphics.Password)
	}
	s.Group.TargetSize = 2
	err := New(b).Apply(WithSecrets(context.Background(), Secrets{}), recorded(t, b, s))
	if err == nil || !strings.Contains(err.Error(), "password_wo") {
		t.Fatalf("scale-out without the password: %v, want a refusal naming password_wo", err)
	}
}

// A member that must get a password nobody in the run has is refused before anything is made.
func TestApply_createWithoutThePasswordIsRefused(t *testing.T) {
	t.Parallel()
	b := fake.New()
	err := New(b).Apply(context.Background(), withConsole(spec(1), 1))
	if err == nil || !strings.Contains(err.Error(), "password_wo") {
		t.Fatalf("apply: %v, want a refusal naming password_wo", err)
	}
	if len(b.Domains) != 0 || b.Calls["create-volume"]+b.Calls["ensure-volume"] != 0 {
		t.Fatalf("domains %d, volume calls %v: something was made", len(b.Domains), b.Calls)
	}
}

// rng and shares reach the definition, and a change of either restarts the member.
func TestApply_rngAndSharesRestart(t *testing.T) {
	t.Parallel()
	b := fake.New()
	apply(t, b, spec(1))
	s := spec(1)
	s.Group.Template.RNG = true
	s.Group.Template.Filesystems = []engine.Filesystem{{Source: "/srv/share", Target: "share"}}
	before := ids(b)
	apply(t, b, s)
	d := b.Domains["db-1"]
	if d.ID == before["db-1"] || !d.Spec.RNG || len(d.Spec.Filesystems) != 1 || d.Spec.Filesystems[0].Target != "share" {
		t.Fatalf("id %d -> %d, rng %t, shares %+v: want a restart onto rng and the share", before["db-1"], d.ID, d.Spec.RNG, d.Spec.Filesystems)
	}
}
