package libvirt

import (
	"context"
	"slices"
	"testing"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

// TestAccListDomainsByPrefixAndName: a listing returns the domains whose name starts with the
// prefix or is one of the names, and no other.
func TestAccListDomainsByPrefixAndName(t *testing.T) {
	requireAcc(t)
	ctx := context.Background()
	b := connectAcc(t, DefaultURI)
	base := "tfacc-bk-list-" + testSuffix()
	names := []string{base + "-a-1", base + "-a-2", base + "-b", base + "-c"}
	for _, n := range names {
		if err := b.DefineDomain(ctx, backend.DomainSpec{Name: n, Type: "qemu", VCPU: 1, MemoryMiB: 64}); err != nil {
			t.Fatalf("define %s: %v", n, err)
		}
	}
	t.Cleanup(func() {
		for _, n := range names {
			if err := b.UndefineDomain(ctx, n); err != nil {
				t.Errorf("undefine %s: %v", n, err)
			}
		}
		if left, err := b.ListDomains(ctx, base); err != nil || len(left) > 0 {
			t.Errorf("left behind: %v %v", left, err)
		}
	})
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
