package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// rounds is how many random values each property is checked on.
const rounds = 1000

// storedHash is the engine's short hash taken over the storage encoding of v: the first 16 hex
// digits of the SHA-256 of its JSON.
func storedHash(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}

// TestHashes_areTheStorageEncodings ties the engine's hash encoding to the storage encoding: for
// random values, the engine's revision and hash are the hash of what the store writes. A stored
// field changed on one side only fails here.
func TestHashes_areTheStorageEncodings(t *testing.T) {
	t.Parallel()
	g := newGen(1, false)
	for i := range rounds {
		tpl := g.template()
		if got, want := tpl.Revision(), storedHash(t, TemplateOf(tpl.Canonical())); got != want {
			t.Fatalf("round %d: Revision() = %s, the stored template hashes to %s\n%#v", i, got, want, tpl)
		}
		d := g.desired()
		if got, want := d.Hash(), storedHash(t, DesiredOf(d)); got != want {
			t.Fatalf("round %d: Hash() = %s, the stored instance hashes to %s\n%#v", i, got, want, d)
		}
	}
}

// equateEmpty treats a list or map written empty and read back as none as the same: encoding/json
// leaves empty ones out (omitempty). Where empty and none differ on the host (a desired
// instance's disks) the hashes below tell them apart.
var equateEmpty = cmpopts.EquateEmpty()

func TestGroupRecord_roundTrips(t *testing.T) {
	t.Parallel()
	g := newGen(2, true)
	for i := range rounds {
		want := g.groupRecord()
		data, err := EncodeGroup(want)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeGroup(data)
		if err != nil {
			t.Fatalf("round %d: %v\n%s", i, err, data)
		}
		if diff := cmp.Diff(want, got, equateEmpty); diff != "" {
			t.Fatalf("round %d: read back differently (-written +read):\n%s", i, diff)
		}
		again, err := EncodeGroup(got)
		if err != nil || string(again) != string(data) {
			t.Fatalf("round %d: written again differently (%v):\n%s\n%s", i, err, data, again)
		}
	}
}

func TestMember_roundTrips(t *testing.T) {
	t.Parallel()
	g := newGen(3, true)
	for i := range rounds {
		want := g.member()
		for _, declared := range []bool{false, true} {
			doc, err := EncodeMember(want, declared)
			if err != nil {
				t.Fatal(err)
			}
			if !declared {
				doc = strings.Replace(doc, "<instance>", `<instance xmlns="`+MemberNamespace+`">`, 1)
			}
			got, err := ParseMember(doc)
			if err != nil || got == nil {
				t.Fatalf("round %d: %v, %v\n%s", i, got, err, doc)
			}
			w := want
			// The template is written in canonical form.
			w.Instance.Template = w.Instance.Template.Canonical()
			if diff := cmp.Diff(w, *got, equateEmpty); diff != "" {
				t.Fatalf("round %d: read back differently (-written +read):\n%s", i, diff)
			}
			if got.Instance.Current.Hash() != want.Instance.Current.Hash() || got.Instance.Template.Revision() != want.Instance.Template.Revision() {
				t.Fatalf("round %d: read back with other hashes", i)
			}
		}
	}
}

func TestAction_unknownIsRefused(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		stored  Action
		want    engine.Action
		wantErr bool
	}{
		"by name":            {stored: "RESTART", want: engine.ActionRestart},
		"missing reads NONE": {stored: "", want: engine.ActionNone},
		"unknown":            {stored: "REBOOT", wantErr: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.stored.Engine()
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("Engine() = %v, %v; want %v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
