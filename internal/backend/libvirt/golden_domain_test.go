package libvirt

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestGoldenDomains reads definitions of members that the release at
// internal/store/testdata/v1/captured/COMMIT wrote on a real host (`virsh dumpxml --inactive`: a
// member with a config, one with a restart in flight, an adopted domain, a member of a group on
// several hosts). Both readers find the same member record in them, and its hashes are the
// engine's.
func TestGoldenDomains(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/golden-domains/*.xml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden domains: %v", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want, err := parseDomain(string(raw))
			if err != nil {
				t.Fatal(err)
			}
			got, err := readDomainXML(string(raw))
			if err != nil {
				t.Fatal(err)
			}
			if got.record == nil || !reflect.DeepEqual(got.record, want.record) {
				t.Fatalf("readDomainXML record:\n%+v\nparseDomain record:\n%+v", got.record, want.record)
			}
			mi := got.record.Instance
			if mi.Template.Revision() != mi.TemplateRevision {
				t.Errorf("the recorded template's revision is %s, the record says %s", mi.Template.Revision(), mi.TemplateRevision)
			}
			if mi.InFlight == nil && mi.Current.Hash() != mi.LastAppliedHash {
				t.Errorf("the applied instance's hash is %s, the record says %s", mi.Current.Hash(), mi.LastAppliedHash)
			}
			if doc, err := marshalRecord(*got.record, true); err != nil {
				t.Fatal(err)
			} else if back, err := parseRecord(doc); err != nil || !reflect.DeepEqual(back, got.record) {
				t.Fatalf("written and read back as %+v (%v), not %+v", back, err, got.record)
			}
		})
	}
}
