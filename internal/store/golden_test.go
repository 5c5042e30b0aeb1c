package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// Golden files of each format version, in testdata/v<N>: captured/ holds records that the release
// at captured/COMMIT wrote on a real host from real groups (captured/README.md says which);
// generated/ holds records that version's code wrote for values made in a test (v2's:
// TestGolden_v2Generated). Every one must read through the store into engine values and write
// back to the same bytes: version 2 only adds fields, left out at their zero values, so a version
// 1 record written again by this build is the bytes it was.

// goldenGroupBody is the compact body of a golden group record, and the checksum its envelope
// gives (empty for a bare body).
func goldenGroupBody(t *testing.T, path string) (body []byte, sum string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(path, ".secret.xml") {
		// `virsh secret-dumpxml`: the envelope is the secret's description.
		var secret struct {
			Description string `xml:"description"`
		}
		if err := xml.Unmarshal(raw, &secret); err != nil {
			t.Fatal(err)
		}
		var env struct {
			Format string          `json:"format"`
			SHA256 string          `json:"sha256"`
			Body   json.RawMessage `json:"body"`
		}
		if err := json.Unmarshal([]byte(secret.Description), &env); err != nil {
			t.Fatal(err)
		}
		if env.Format != "virt-group-record/1" {
			t.Fatalf("envelope format %q", env.Format)
		}
		raw, sum = env.Body, env.SHA256
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), sum
}

func goldenFiles(t *testing.T, pattern string) []string {
	t.Helper()
	var files []string
	for _, p := range []string{"testdata/v*/captured/*/" + pattern, "testdata/v*/generated/" + pattern} {
		m, err := filepath.Glob(p)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatalf("no golden files %s", pattern)
	}
	return files
}

func TestGolden_groupRecordsReadAndWriteBack(t *testing.T) {
	t.Parallel()
	files := append(goldenFiles(t, "group-*.secret.xml"), goldenFiles(t, "group-*.json")...)
	for _, path := range files {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			want, sum := goldenGroupBody(t, path)
			if got := sha256.Sum256(want); sum != "" && hex.EncodeToString(got[:]) != sum {
				t.Fatalf("the golden body does not match its envelope's checksum")
			}
			rec, err := DecodeGroup(want)
			if err != nil {
				t.Fatal(err)
			}
			enc, err := EncodeGroup(rec)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := json.Compact(&got, enc); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), got.String()); diff != "" {
				t.Fatalf("written back differently (-golden +written):\n%s", diff)
			}
		})
	}
}

// memberFields are the member record's elements in order, name and text, as a reader of the XML
// sees them (the indentation libvirt adds is not part of them).
func memberFields(t *testing.T, doc string) [][2]string {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(doc))
	var out [][2]string
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch x := tok.(type) {
		case xml.StartElement:
			depth++
			if depth == 2 {
				var text string
				if err := dec.DecodeElement(&text, &x); err != nil {
					t.Fatal(err)
				}
				out = append(out, [2]string{x.Name.Local, text})
				depth--
			}
		case xml.EndElement:
			depth--
		}
	}
	return out
}

func TestGolden_memberRecordsReadAndWriteBack(t *testing.T) {
	t.Parallel()
	for _, path := range goldenFiles(t, "member-*.xml") {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			// virsh metadata shows the element without its namespace; in a definition it has it.
			doc := string(raw)
			declared := strings.HasPrefix(doc, "<"+MemberPrefix+":")
			if !declared {
				doc = strings.Replace(doc, "<instance>", `<instance xmlns="`+MemberNamespace+`">`, 1)
			}
			m, err := ParseMember(doc)
			if err != nil || m == nil {
				t.Fatalf("ParseMember: %v, %v", m, err)
			}
			got, err := EncodeMember(*m, declared)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(path, "/generated/") {
				// Written by the earlier release's own encoder: the same bytes exactly.
				if diff := cmp.Diff(string(raw), got); diff != "" {
					t.Fatalf("written back differently (-golden +written):\n%s", diff)
				}
				return
			}
			if diff := cmp.Diff(memberFields(t, doc), memberFields(t, got)); diff != "" {
				t.Fatalf("written back differently (-golden +written):\n%s", diff)
			}
		})
	}
}

// TestGolden_hashesOnHostsAreTheEngines checks the engine's hashes against those the earlier
// release wrote on the host: every member's template revision is its recorded template's, and a
// member with no change in flight is at the hash of what it was last applied.
func TestGolden_hashesOnHostsAreTheEngines(t *testing.T) {
	t.Parallel()
	for _, path := range goldenFiles(t, "member-*.xml") {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			m := readMember(t, path)
			mi := m.Instance
			if got := mi.Template.Revision(); got != mi.TemplateRevision {
				t.Errorf("the recorded template's revision is %s, the record says %s", got, mi.TemplateRevision)
			}
			if got := mi.Current.Hash(); mi.InFlight == nil && got != mi.LastAppliedHash {
				t.Errorf("the applied instance's hash is %s, the record says %s", got, mi.LastAppliedHash)
			}
		})
	}
}

func readMember(t *testing.T, path string) Member {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(string(raw), "<instance>", `<instance xmlns="`+MemberNamespace+`">`, 1)
	m, err := ParseMember(doc)
	if err != nil || m == nil {
		t.Fatalf("ParseMember: %v, %v", m, err)
	}
	return *m
}

func readGroup(t *testing.T, path string) engine.GroupRecord {
	t.Helper()
	body, _ := goldenGroupBody(t, path)
	rec, err := DecodeGroup(body)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}
