package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// These hashes were computed by the engine before it had its own canonical encoder, when its
// types were JSON-encoded by encoding/json through struct tags. They are on users' hosts (every
// member's template revision and last-applied hash): the encoder must keep giving them.
var (
	goldenRevisions = map[string]string{
		"zero":                           "338208015de972fa",
		"minimal":                        "4eeec4938abdb240",
		"full":                           "2cbdaea01fe72cd8",
		"empty maps and slices":          "01f9cf5bd1331131",
		"empty cloud init":               "eeb1874aed73b275",
		"cloud init user data only":      "b82155d7d24b3a14",
		"cloud init network config only": "3d2fb31dfdf2dce3",
		"adopted":                        "f7ddce2b31b068d0",
		"awkward text":                   "b77aa975c221f0bf",
		"extreme numbers":                "81814666f0e841cd",
		"nic without network":            "abe63e5c19405abb",
		"disks out of order":             "485e3eae1db202c0",
		"base":                           "10561c04cdb956ae",
	}
	goldenHashes = map[string]string{
		"zero":                         "39970e1a29fdfbab",
		"empty disks":                  "bc35cac6a75970a5",
		"empty maps and slices":        "ffed3c81df6542e4",
		"empty cloud init":             "3c6f203c0bcc8120",
		"desired from full template":   "9447ecf6713aca8a",
		"desired with preserved state": "17a431c6b4edad58",
		"desired adopted":              "f3587cb954587232",
		"desired minimal":              "cd4b170d3c131804",
		"every disk field":             "eb797ad29bcc1a74",
		"awkward text":                 "01e702bfb7dca8bc",
	}
)

func TestRevision_isTheHashOfEveryEarlierRelease(t *testing.T) {
	t.Parallel()
	for _, c := range canonTemplates() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			want, ok := goldenRevisions[c.name]
			if !ok {
				t.Fatalf("no golden revision for %q", c.name)
			}
			if got := c.t.Revision(); got != want {
				t.Fatalf("Revision() = %s, want %s (the revision earlier releases wrote for this template)\n%s", got, want, templateJSON(c.t.Canonical()))
			}
		})
	}
}

func TestHash_isTheHashOfEveryEarlierRelease(t *testing.T) {
	t.Parallel()
	for _, c := range canonDesired() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			want, ok := goldenHashes[c.name]
			if !ok {
				t.Fatalf("no golden hash for %q", c.name)
			}
			if got := c.d.Hash(); got != want {
				t.Fatalf("Hash() = %s, want %s (the hash earlier releases wrote for this instance)\n%s", got, want, desiredJSON(c.d))
			}
		})
	}
}

// sameInstance reports whether two members are the same, empty lists and maps being equal to none.
func sameInstance(a, b ManagedInstance) bool { return cmp.Equal(a, b, cmpopts.EquateEmpty()) }
