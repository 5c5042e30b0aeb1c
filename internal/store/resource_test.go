package store

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestGolden_resourceSpecsReadAndWriteBack: the group resource's configuration that every golden
// group record keeps as text (GroupRecord.Resource) reads into ResourceSpec and writes back to the
// same text, so that a group imported from a record written by an earlier release gets the
// configuration its user wrote.
func TestGolden_resourceSpecsReadAndWriteBack(t *testing.T) {
	t.Parallel()
	seen := 0
	for _, path := range append(goldenFiles(t, "group-*.secret.xml"), goldenFiles(t, "group-*.json")...) {
		if strings.Contains(path, "/v1/generated/") {
			continue // their resource is a placeholder, not a configuration
		}
		body, _ := goldenGroupBody(t, path)
		rec, err := DecodeGroup(body)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if rec.Resource == "" {
			continue
		}
		seen++
		var spec ResourceSpec
		if err := json.Unmarshal([]byte(rec.Resource), &spec); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		back, err := json.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(rec.Resource, string(back)); diff != "" {
			t.Errorf("%s: written back differently (-golden +written):\n%s", path, diff)
		}
	}
	if seen == 0 {
		t.Fatal("no golden record keeps a resource configuration")
	}
}

// TestResourceSpec_maxUnavailableAsNumber: records written before max_unavailable took
// percentages stored it as a number; it reads as the same text.
func TestResourceSpec_maxUnavailableAsNumber(t *testing.T) {
	t.Parallel()
	var u ResourceUpdatePolicy
	if err := json.Unmarshal([]byte(`{"type":"PROACTIVE","minimal_action":"NONE","most_disruptive_allowed_action":"REPLACE","max_unavailable":2}`), &u); err != nil {
		t.Fatal(err)
	}
	if u.MaxUnavailable != "2" {
		t.Fatalf("max_unavailable read as %q, want \"2\"", u.MaxUnavailable)
	}
}
