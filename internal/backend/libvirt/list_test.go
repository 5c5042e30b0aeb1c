package libvirt

import (
	"context"
	"slices"
	"testing"
)

// TestAccListDomainsByPrefixAndName: a listing returns the domains whose name starts with the
// prefix or is one of the names, and no other.
func TestAccListDomainsByPrefixAndName(t *testing.T) {
	requireAcc(t)
	ctx := context.Background()
	b := connectAcc(t, DefaultURI)
	base := "tfacc-bk-list-" + testSuffix()
	names := []string{base + "-a-1", base + "-a-2", base + "-b", base + "-c"}
	defineAcc(t, b, names...)
	cases := []struct {
		name   string
		prefix string
		named  []string
		want   []string
	}{
		{"prefix", base + "-a-", nil, names[:2]},
		{"prefix and a name", base + "-a-", []string{base + "-c"}, []string{names[0], names[1], names[3]}},
		{"a name also under the prefix, and one not there", base + "-a-", []string{base + "-a-1", base + "-gone"}, names[:2]},
		{"names only", base + "-none-", []string{base + "-b"}, []string{names[2]}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doms, err := b.ListDomains(ctx, c.prefix, c.named...)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range doms {
				got = append(got, d.Name)
			}
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Fatalf("listed %v, want %v", got, c.want)
			}
		})
	}
}
