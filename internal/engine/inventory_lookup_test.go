package engine

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Lookups by key, as Has, Domain and reclaimed were before they compared fields (is): the
// reference the field comparisons are held to.
func hasByKey(inv Inventory, host, volume string) bool {
	k := objectKey(false, host, volume)
	return slices.ContainsFunc(inv.Items, func(m Made) bool { return m.key() == k })
}

func domainByKey(inv Inventory, host, name string) (Made, bool) {
	k := objectKey(true, host, name)
	for _, m := range inv.Items {
		if m.key() == k {
			return m, true
		}
	}
	return Made{}, false
}

func reclaimedByKey(inv Inventory, host, volume string) bool {
	k := objectKey(false, host, volume)
	return slices.ContainsFunc(inv.Items, func(m Made) bool { return m.Reclaimed && m.key() == k })
}

// TestInventory_lookups: Has, Domain and reclaimed answer as the lookups by key do, for every kind
// of object, the default host written either way, another host, and names shared across kinds.
func TestInventory_lookups(t *testing.T) {
	t.Parallel()
	inv := Inventory{Kept: true, Items: []Made{
		{Kind: MadeDomain, Host: "", Name: "g-1", UUID: "u1", Confirmed: true},
		{Kind: MadeDomain, Host: "h2", Name: "g-2", UUID: "u2"},
		{Kind: MadeVolume, Host: DefaultHost, Name: "g-1-boot", Confirmed: true},
		{Kind: MadeVolume, Host: "h2", Name: "g-2-boot", Confirmed: true, Reclaimed: true},
		{Kind: MadeNVRAM, Host: "", Name: "g-1-nvram", Confirmed: true, Reclaimed: true},
		{Kind: MadeSeed, Host: "h2", Name: "g-2-seed"},
		{Kind: MadeReservation, Host: "", Name: "g-3-data", Confirmed: true},
		{Kind: MadeSnapshot, Host: "", Name: "g-1-data", Tag: "t1", Confirmed: true, Reclaimed: true},
		// A volume named as a domain: each lookup finds only its own kind.
		{Kind: MadeVolume, Host: "", Name: "g-1", Confirmed: true},
	}}
	hosts := []string{"", DefaultHost, "h2", "h3"}
	names := []string{"g-1", "g-2", "g-1-boot", "g-2-boot", "g-1-nvram", "g-2-seed", "g-3-data", "g-1-data", "nope"}
	type answer struct {
		Has, Reclaimed, DomainFound bool
		Domain                      Made
	}
	want, got := map[string]answer{}, map[string]answer{}
	for _, h := range hosts {
		for _, n := range names {
			k := fmt.Sprintf("%q/%s", h, n)
			d, ok := domainByKey(inv, h, n)
			want[k] = answer{Has: hasByKey(inv, h, n), Reclaimed: reclaimedByKey(inv, h, n), DomainFound: ok, Domain: d}
			d, ok = inv.Domain(h, n)
			got[k] = answer{Has: inv.Has(h, n), Reclaimed: inv.reclaimed(h, n), DomainFound: ok, Domain: d}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lookups (-by key +by field):\n%s", diff)
	}
	// The cases that matter, spelled out, so that the reference cannot be wrong alike.
	for _, c := range []struct {
		host, name string
		has, dom   bool
	}{
		{"", "g-1-boot", true, false}, {"h2", "g-1-boot", false, false}, {DefaultHost, "g-1", true, true},
		{"h2", "g-2", false, true}, {"", "g-1-data", false, false}, {"h2", "g-2-seed", true, false},
	} {
		if _, ok := inv.Domain(c.host, c.name); inv.Has(c.host, c.name) != c.has || ok != c.dom {
			t.Errorf("%q/%s: Has %t, Domain found %t; want %t, %t", c.host, c.name, inv.Has(c.host, c.name), ok, c.has, c.dom)
		}
	}
}

// BenchmarkInventoryHas: one Has per volume of a 5,000-member inventory (a domain and two volumes
// each), by field and by key, in one run (issue 47).
func BenchmarkInventoryHas(b *testing.B) {
	var inv Inventory
	for i := 1; i <= 5000; i++ {
		inv.Items = append(inv.Items, Made{Kind: MadeDomain, Name: fmt.Sprintf("g-%d", i)},
			Made{Kind: MadeVolume, Name: fmt.Sprintf("g-%d-boot", i)}, Made{Kind: MadeNVRAM, Name: fmt.Sprintf("g-%d-nvram", i)})
	}
	probe := func(b *testing.B, has func(Inventory, string, string) bool) {
		for b.Loop() {
			for i := 1; i <= 5000; i += 50 {
				if !has(inv, "", fmt.Sprintf("g-%d-boot", i)) {
					b.Fatal("missing")
				}
			}
		}
	}
	b.Run("by-field", func(b *testing.B) { probe(b, Inventory.Has) })
	b.Run("by-key", func(b *testing.B) { probe(b, hasByKey) })
}
