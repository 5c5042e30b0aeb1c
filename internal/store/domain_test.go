package store

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDomainFingerprint fails when the adoption record changes without a new version: a change
// is a new namespace and DomainVersion, with this version's file kept and still read. Run with
// STORE_FINGERPRINT=write to add a new version's file.
func TestDomainFingerprint(t *testing.T) {
	t.Parallel()
	path := fmt.Sprintf("testdata/domain-v%d.fingerprint", DomainVersion)
	if diff := compareFingerprint(t, path, fingerprintOf(reflect.TypeFor[DomainElement]()), fmt.Sprintf("adoption record version %d", DomainVersion)); diff != "" {
		t.Fatalf("the adoption record changed, but its version is still %d: records on users' hosts would stop reading. Give it a new namespace and DomainVersion, keep reading version %d. (-%s +now):\n%s",
			DomainVersion, DomainVersion, path, diff)
	}
}

// TestAdoptionGolden holds the bytes written on a host, and reads them back as libvirt returns
// them and as a definition holds them.
func TestAdoptionGolden(t *testing.T) {
	t.Parallel()
	a := Adoption{Owner: "run-<&>", Since: 1795000000}
	tests := map[string]struct {
		declared bool
		want     string
	}{
		"for DomainSetMetadata": {false, `<adopted><owner>run-&lt;&amp;&gt;</owner><since>1795000000</since></adopted>`},
		"in a definition":       {true, `<virtdom:adopted xmlns:virtdom="https://virtfleet.dev/xmlns/virt-domain/1"><virtdom:owner>run-&lt;&amp;&gt;</virtdom:owner><virtdom:since>1795000000</virtdom:since></virtdom:adopted>`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := EncodeAdoption(a, tc.declared)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("bytes (-want +got):\n%s", diff)
			}
		})
	}
	declared, _ := EncodeAdoption(a, true)
	reads := map[string]struct {
		doc  string
		want *Adoption
	}{
		// What `virsh metadata NAME https://virtfleet.dev/xmlns/virt-domain/1` and
		// DomainGetMetadata return: the element without its namespace, indented.
		"as libvirt returns it":      {"<adopted>\n  <owner>run-&lt;&amp;&gt;</owner>\n  <since>1795000000</since>\n</adopted>\n", &a},
		"as written in a definition": {declared, &a},
		"empty":                      {"", nil},
	}
	for name, tc := range reads {
		t.Run("read "+name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseAdoption(tc.doc)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("read (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := ParseAdoption(`<adopted xmlns="https://virtfleet.dev/xmlns/virt-domain/1"><since>1</since></adopted>`); err == nil {
		t.Fatal("a record naming no owner was read without an error")
	}
}
