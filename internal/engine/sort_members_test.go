package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// SortMembers orders members as a plan's Final does: indexed by index, then named by name.
func TestSortMembers(t *testing.T) {
	t.Parallel()
	cases := map[string]struct{ in, want []string }{
		"named first, as observed": {[]string{"g-a", "g-1", "g-3"}, []string{"g-1", "g-3", "g-a"}},
		"indices by number":        {[]string{"g-10", "g-2", "g-1"}, []string{"g-1", "g-2", "g-10"}},
		"named by name":            {[]string{"g-z", "g-3", "g-b"}, []string{"g-3", "g-b", "g-z"}},
		"empty":                    {nil, nil},
	}
	index := map[string]int{"g-1": 1, "g-2": 2, "g-3": 3, "g-10": 10}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var ms []Member
			for _, n := range c.in {
				ms = append(ms, Member{Name: n, Index: index[n]})
			}
			SortMembers(ms)
			var got []string
			for _, m := range ms {
				got = append(got, m.Name)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
		})
	}
}
