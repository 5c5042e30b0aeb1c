package engine

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestScaleOut_fillsLowestFreeIndicesFirst(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		existing []int
		n        int
		want     []int
	}{
		{"empty group starts at 1", nil, 3, []int{1, 2, 3}},
		{"appends after a full range", []int{1, 2, 3}, 2, []int{4, 5}},
		{"fills a gap before appending", []int{1, 3}, 2, []int{2, 4}},
		{"fills several gaps in order", []int{2, 5}, 3, []int{1, 3, 4}},
		{"zero adds nothing", []int{1}, 0, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ScaleOut(c.existing, c.n); !slices.Equal(got, c.want) {
				t.Fatalf("ScaleOut(%v, %d) = %v, want %v", c.existing, c.n, got, c.want)
			}
		})
	}
}

func TestScaleIn_removesHighestIndicesFirst(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		existing []int
		n        int
		want     []int
	}{
		{"highest first", []int{1, 2, 3, 4, 5}, 3, []int{5, 4, 3}},
		{"unsorted input", []int{3, 1, 7, 2}, 2, []int{7, 3}},
		{"more than exist removes all", []int{1, 2}, 5, []int{2, 1}},
		{"negative removes none", []int{1, 2}, -1, []int{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ScaleIn(c.existing, c.n); !slices.Equal(got, c.want) {
				t.Fatalf("ScaleIn(%v, %d) = %v, want %v", c.existing, c.n, got, c.want)
			}
		})
	}
}

func TestResize_scale3to5to2(t *testing.T) {
	t.Parallel()
	final, create, remove := Resize([]int{1, 2, 3}, 5)
	if !slices.Equal(final, []int{1, 2, 3, 4, 5}) || !slices.Equal(create, []int{4, 5}) || remove != nil {
		t.Fatalf("3 -> 5: final %v create %v remove %v", final, create, remove)
	}
	final, create, remove = Resize(final, 2)
	if !slices.Equal(final, []int{1, 2}) || create != nil || !slices.Equal(remove, []int{5, 4, 3}) {
		t.Fatalf("5 -> 2: final %v create %v remove %v", final, create, remove)
	}
}

func TestResize_repairsAMissingMemberUnderItsOwnIndex(t *testing.T) {
	t.Parallel()
	final, create, _ := Resize([]int{1, 3}, 3)
	if !slices.Equal(final, []int{1, 2, 3}) || !slices.Equal(create, []int{2}) {
		t.Fatalf("final %v create %v", final, create)
	}
}

func TestInstanceAndVolumeNames(t *testing.T) {
	t.Parallel()
	if got := InstanceName("db", 1); got != "db-1" {
		t.Fatalf("InstanceName = %q", got)
	}
	if got := VolumeName("db-1", "data"); got != "db-1-data.qcow2" {
		t.Fatalf("VolumeName = %q", got)
	}
	for _, c := range []struct {
		base, name string
		index      int
		ok         bool
	}{
		{"db", "db-1", 1, true},
		{"db", "db-12", 12, true},
		{"db", "db-0", 0, false},
		{"db", "db-01", 0, false},
		{"db", "db-x", 0, false},
		{"db", "db-", 0, false},
		{"db", "web-1", 0, false},
		{"db", "db-1-2", 0, false},
	} {
		i, ok := ParseInstanceIndex(c.base, c.name)
		if i != c.index || ok != c.ok {
			t.Errorf("ParseInstanceIndex(%q, %q) = %d, %v; want %d, %v", c.base, c.name, i, ok, c.index, c.ok)
		}
	}
}

// TestValidNames checks the name rules the engine holds and the schema validators read
// (NamePattern, DeviceNamePattern).
func TestValidNames(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		name              string
		wantName, wantDev bool
	}{
		"short":                {"db", true, true},
		"with an index":        {"db-1", true, true},
		"one letter":           {"a", true, true},
		"starts with a digit":  {"1db", false, false},
		"upper case":           {"Db", false, false},
		"ends with a hyphen":   {"db-", false, true},
		"underscore":           {"db_1", false, true},
		"empty":                {"", false, false},
		"the boot disk's name": {"boot", true, false},
		"63 characters":        {"a" + strings.Repeat("b", 62), true, false},
		"64 characters":        {"a" + strings.Repeat("b", 63), false, false},
		"32 characters":        {"a" + strings.Repeat("b", 31), true, true},
		"a dot":                {"db.1", false, false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := [2]bool{ValidName(c.name), ValidDeviceName(c.name)}
			if d := cmp.Diff([2]bool{c.wantName, c.wantDev}, got); d != "" {
				t.Errorf("[ValidName, ValidDeviceName](%q) (-want +got):\n%s", c.name, d)
			}
		})
	}
}

func TestMACAddress_stableLocalUnicastAndDistinct(t *testing.T) {
	t.Parallel()
	seen := map[string]string{}
	for _, group := range []string{"db", "web"} {
		for _, member := range []string{group + "-1", group + "-2", "named"} {
			for nic := range 3 {
				mac := MACAddress(group, member, nic)
				if mac != MACAddress(group, member, nic) {
					t.Fatalf("%s/%s/%d: not stable", group, member, nic)
				}
				var first byte
				if _, err := fmt.Sscanf(mac[:2], "%02x", &first); err != nil || len(mac) != 17 {
					t.Fatalf("%q is not a MAC address", mac)
				}
				if first&0x02 == 0 || first&0x01 != 0 {
					t.Fatalf("%s is not a locally administered unicast address", mac)
				}
				key := fmt.Sprintf("%s/%s/%d", group, member, nic)
				if other, dup := seen[mac]; dup {
					t.Fatalf("%s and %s have the same MAC %s", key, other, mac)
				}
				seen[mac] = key
			}
		}
	}
}

func TestCandidates_readOnlyWhatCanBeAMember(t *testing.T) {
	t.Parallel()
	cfg := map[string]ConfigEntry{"db-2": DefaultConfigEntry(), "legacy": DefaultConfigEntry()}
	cases := []struct {
		name       string
		base       string
		configs    map[string]ConfigEntry
		placement  map[string]string
		placed     bool
		wantPrefix string
		wantNames  []string
	}{
		{"no placement kept: every domain", "db", cfg, nil, false, "", nil},
		{"no base name (a group read without its record): every domain", "", nil, map[string]string{"db-1": DefaultHost}, false, "", nil},
		{"the scheme only", "db", nil, map[string]string{"db-1": DefaultHost, "db-2": "h2"}, false, "db-", nil},
		{"configs outside the scheme", "db", cfg, map[string]string{"db-1": DefaultHost}, false, "db-", []string{"legacy"}},
		{"a member kept after its config went", "db", nil, map[string]string{"db-1": DefaultHost, "web-7": DefaultHost}, false, "db-", []string{"web-7"}},
		{"named both ways, once", "db", cfg, map[string]string{"legacy": "h2", "db-3": DefaultHost}, false, "db-", []string{"legacy"}},
		{"placement kept, no members: the scheme only", "db", nil, nil, true, "db-", nil},
		{"placement kept, no members yet, configs waiting", "db", cfg, nil, true, "db-", []string{"legacy"}},
		{"placement kept, no base name: every domain", "", nil, nil, true, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := GroupState{Group: Group{Name: "db", Base: c.base}, Configs: c.configs, Placement: c.placement, Placed: c.placed}
			prefix, names := s.Candidates()
			if prefix != c.wantPrefix || !slices.Equal(names, c.wantNames) {
				t.Fatalf("Candidates() = %q, %v; want %q, %v", prefix, names, c.wantPrefix, c.wantNames)
			}
		})
	}
}
