package store

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fingerprint describes what the stored types write, from the roots down: each struct's fields
// in order, with their tags and their types, this package's structs written out in place. Any
// change to what is written on a host (a field added, removed, reordered, retyped, renamed on the
// host or given another omission rule) changes it; a change of Go names alone does not.
func fingerprint() string {
	return fingerprintOf(
		reflect.TypeFor[GroupRecord](),
		reflect.TypeFor[MemberElement](),
		// The member record's JSON parts, which MemberElement holds as text.
		reflect.TypeFor[Template](), reflect.TypeFor[Desired](), reflect.TypeFor[Preserved](),
		// The group resource's configuration, which GroupRecord holds as text.
		reflect.TypeFor[ResourceSpec](),
	)
}

// fingerprintOf is the fingerprint of the types written from roots.
func fingerprintOf(roots ...reflect.Type) string {
	pkg := reflect.TypeFor[GroupRecord]().PkgPath()
	var b strings.Builder
	var walk func(t reflect.Type, indent string)
	// fields writes t's fields. A struct embedded without a tag (store.HardwareDevices) is
	// written by encoding/json as its fields in place, so its fields are written here in place
	// too: moving stored fields into an embedded struct changes no byte on a host, and so no
	// fingerprint.
	var fields func(t reflect.Type, indent string)
	fields = func(t reflect.Type, indent string) {
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous && f.Tag == "" && f.Type.Kind() == reflect.Struct {
				fields(f.Type, indent)
				continue
			}
			fmt.Fprintf(&b, "%s\t`%s` ", indent, f.Tag)
			walk(f.Type, indent+"\t")
			b.WriteString("\n")
		}
	}
	walk = func(t reflect.Type, indent string) {
		switch {
		case t.Kind() == reflect.Pointer:
			b.WriteString("*")
			walk(t.Elem(), indent)
		case t.Kind() == reflect.Slice:
			b.WriteString("[]")
			walk(t.Elem(), indent)
		case t.Kind() == reflect.Map:
			fmt.Fprintf(&b, "map[%s]", t.Key())
			walk(t.Elem(), indent)
		case t.PkgPath() == pkg && t.Kind() == reflect.Struct:
			b.WriteString("{\n")
			fields(t, indent)
			b.WriteString(indent + "}")
		case t.PkgPath() == pkg:
			// A named type of this package stored as its underlying kind (Action).
			b.WriteString(t.Kind().String())
		default:
			b.WriteString(t.String())
		}
	}
	for _, r := range roots {
		walk(r, "")
		b.WriteString("\n")
	}
	return b.String()
}

// TestFingerprint fails when a stored type changes without a new format version. To change a
// stored field: bump Version, run this test with STORE_FINGERPRINT=write to add the new
// version's file, add a reader of the previous version (its fingerprint and golden files stay,
// and its golden files must still read), and say so in the CHANGELOG.
func TestFingerprint(t *testing.T) {
	t.Parallel()
	path := fmt.Sprintf("testdata/v%d.fingerprint", Version)
	if diff := compareFingerprint(t, path, fingerprint(), fmt.Sprintf("format version %d", Version)); diff != "" {
		t.Fatalf("the stored types changed, but the format version is still %d: records on users' hosts would change or stop reading. Bump store.Version and keep a reader of version %d (see TestFingerprint). (-%s +now):\n%s",
			Version, Version, path, diff)
	}
	for v := 1; v < Version; v++ {
		if _, err := os.Stat(fmt.Sprintf("testdata/v%d.fingerprint", v)); err != nil {
			t.Errorf("format version %d's fingerprint is gone: every earlier version stays, with its golden files", v)
		}
	}
}

// compareFingerprint is the difference between the fingerprint file at path and got ("" when
// they are the same). A missing file is written from got when STORE_FINGERPRINT=write (a new
// version adds its file so), and fails the test otherwise, naming what (the version) lacks one.
func compareFingerprint(t *testing.T, path, got, what string) string {
	t.Helper()
	want, err := os.ReadFile(path)
	if os.IsNotExist(err) && os.Getenv("STORE_FINGERPRINT") == "write" {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return ""
	}
	if err != nil {
		t.Fatalf("no fingerprint of %s (%v): a new version adds its file with STORE_FINGERPRINT=write", what, err)
	}
	return cmp.Diff(string(want), got)
}
