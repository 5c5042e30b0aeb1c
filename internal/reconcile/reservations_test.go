package reconcile

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// reservedSpec is spec(size) with one interface on "default" whose address is reserved.
func reservedSpec(size int) engine.GroupState {
	s := spec(size)
	s.Group.Template.NICs = []engine.NIC{{Network: "default", Type: "network", Address: engine.AddressReserved}}
	return s
}

// hosts renders the fake network's host entries as "mac ip".
func hosts(b *fake.Backend) []string {
	var out []string
	if n := b.Networks["default"]; n != nil {
		for _, h := range n.Hosts {
			out = append(out, h.MAC+" "+h.IP)
		}
	}
	return out
}

func mac(name string) string { return engine.MACAddress("db", name, 0) }

const foreign = "52:54:00:12:34:56 192.168.122.2"

// withForeign gives the fake's "default" network a host entry nobody in the group owns.
func withForeign(b *fake.Backend) {
	n := fake.DefaultDHCPNetwork("default")
	n.Hosts = []engine.DHCPHost{{MAC: "52:54:00:12:34:56", IP: "192.168.122.2"}}
	b.Networks = map[string]*engine.DHCPNetwork{"default": &n}
}

func TestApply_reservations(t *testing.T) {
	t.Parallel()
	pinned := func(s engine.GroupState, name, ip string) engine.GroupState {
		e := engine.DefaultConfigEntry()
		e.Config.NetworkIPs = []engine.NetworkIP{{Interface: "nic0", Address: ip}}
		s.Configs = map[string]engine.ConfigEntry{name: e}
		return s
	}
	plain := func(size int) engine.GroupState {
		s := reservedSpec(size)
		s.Group.Template.NICs[0].Address = ""
		return s
	}
	// Members are created together, so which takes which free address is not fixed: a want
	// entry "db-2 held" says db-2 keeps the address the first step gave it.
	cases := []struct {
		name  string
		steps []engine.GroupState
		// leases are the DHCP leases the fake reports before the last step.
		leases map[string][]string
		want   map[string]string // member -> address, "held" for the one the first step gave
	}{
		{name: "three members get free addresses, the foreign entry stays", steps: []engine.GroupState{reservedSpec(3)},
			want: map[string]string{"db-1": "held", "db-2": "held", "db-3": "held"}},
		{name: "a replacement of all keeps every address", steps: []engine.GroupState{reservedSpec(2), func() engine.GroupState {
			s := reservedSpec(2)
			s.Group.Template.BootDisk.SourceImage = "/images/new.qcow2"
			return s
		}()}, want: map[string]string{"db-1": "held", "db-2": "held"}},
		{name: "a restart keeps the address", steps: []engine.GroupState{reservedSpec(2), func() engine.GroupState {
			s := reservedSpec(2)
			s.Group.Template.VCPU = 2
			return s
		}()}, want: map[string]string{"db-1": "held", "db-2": "held"}},
		{name: "scale-in releases the member's entry only", steps: []engine.GroupState{reservedSpec(2), reservedSpec(1)},
			want: map[string]string{"db-1": "held"}},
		{name: "a running member gets the address it has leased", steps: []engine.GroupState{plain(1), reservedSpec(1)},
			leases: map[string][]string{mac("db-1"): {"192.168.122.99"}},
			want:   map[string]string{"db-1": "192.168.122.99"}},
		{name: "a pin moves the member's own entry", steps: []engine.GroupState{reservedSpec(1), pinned(reservedSpec(1), "db-1", "192.168.122.50")},
			want: map[string]string{"db-1": "192.168.122.50"}},
		{name: "a pin on a dynamic interface", steps: []engine.GroupState{plain(2), pinned(plain(2), "db-2", "192.168.122.50")},
			want: map[string]string{"db-2": "192.168.122.50"}},
		{name: "reservation removed releases", steps: []engine.GroupState{reservedSpec(1), plain(1)}, want: map[string]string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := fake.New()
			withForeign(b)
			var first map[string]string
			for i, s := range c.steps {
				if i == len(c.steps)-1 && c.leases != nil {
					b.DHCPLeases = map[string]map[string][]string{"default": c.leases}
				}
				apply(t, b, s)
				if i == 0 {
					first = entries(b)
				}
			}
			want := map[string]string{"52:54:00:12:34:56": "192.168.122.2"}
			for name, ip := range c.want {
				if ip == "held" {
					ip = first[mac(name)]
					if ip == "" {
						t.Fatalf("the first step gave %s no address", name)
					}
				}
				want[mac(name)] = ip
			}
			if diff := cmp.Diff(want, entries(b)); diff != "" {
				t.Errorf("host entries by MAC (-want +got):\n%s", diff)
			}
			seen := map[string]bool{}
			for _, ip := range entries(b) {
				if seen[ip] {
					t.Errorf("address %s reserved twice", ip)
				}
				seen[ip] = true
			}
		})
	}
}

// entries are the fake network's host entries, MAC -> address.
func entries(b *fake.Backend) map[string]string {
	out := map[string]string{}
	if n := b.Networks["default"]; n != nil {
		for _, h := range n.Hosts {
			out[h.MAC] = h.IP
		}
	}
	return out
}

// TestApply_reservationInterrupted: a change killed between the network update and the record
// write is finished, or undone, by the next apply, whichever that apply wants.
func TestApply_reservationInterrupted(t *testing.T) {
	t.Parallel()
	for _, want := range []string{"finished", "undone"} {
		t.Run(want, func(t *testing.T) {
			t.Parallel()
			b := fake.New()
			withForeign(b)
			plain := reservedSpec(1)
			plain.Group.Template.NICs[0].Address = ""
			apply(t, b, plain)
			// The first record write is the in-flight marker; the second, after the network
			// update, is where the apply is killed.
			writes := 0
			b.Hook = func(op, obj string) error {
				if op == "set-record" {
					if writes++; writes == 2 {
						return errors.New("killed")
					}
				}
				return nil
			}
			if err := New(b).Apply(context.Background(), reservedSpec(1)); err == nil || !strings.Contains(err.Error(), "killed") {
				t.Fatalf("apply error = %v", err)
			}
			b.Hook = nil
			if got := hosts(b); len(got) != 2 {
				t.Fatalf("the reservation was not made before the record: %v", got)
			}
			next, entries := reservedSpec(1), []string{foreign, mac("db-1") + " 192.168.122.3"}
			if want == "undone" {
				next, entries = plain, []string{foreign}
			}
			apply(t, b, next)
			if diff := cmp.Diff(entries, hosts(b)); diff != "" {
				t.Errorf("host entries (-want +got):\n%s", diff)
			}
			if got := b.Domains["db-1"].Spec.Record.Instance.Current.NICs[0].Address; got != next.Group.Template.NICs[0].Address {
				t.Errorf("recorded address %q", got)
			}
			apply(t, b, next)
		})
	}
}

func TestDestroy_releasesReservations(t *testing.T) {
	t.Parallel()
	b := fake.New()
	withForeign(b)
	apply(t, b, reservedSpec(2))
	if err := New(b).Destroy(context.Background(), reservedSpec(2)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{foreign}, hosts(b)); diff != "" {
		t.Errorf("host entries (-want +got):\n%s", diff)
	}
}

// TestApply_pinTakenFailsBeforeTheMemberStops: a pin another MAC's entry holds (made after the
// plan's checks) fails the restart before anything stops.
func TestApply_pinTakenFailsBeforeTheMemberStops(t *testing.T) {
	t.Parallel()
	b := fake.New()
	withForeign(b)
	apply(t, b, reservedSpec(1))
	s := reservedSpec(1)
	e := engine.DefaultConfigEntry()
	e.Config.NetworkIPs = []engine.NetworkIP{{Interface: "nic0", Address: "192.168.122.2"}}
	s.Configs = map[string]engine.ConfigEntry{"db-1": e}
	err := New(b).Apply(context.Background(), s)
	if err == nil || !strings.Contains(err.Error(), "reserved for MAC 52:54:00:12:34:56") {
		t.Fatalf("apply error = %v", err)
	}
	if d := b.Domains["db-1"]; d.ID <= 0 {
		t.Error("the member was stopped")
	}
	if diff := cmp.Diff([]string{foreign, mac("db-1") + " 192.168.122.3"}, hosts(b)); diff != "" {
		t.Errorf("host entries (-want +got):\n%s", diff)
	}
}

func TestAddresses_showReservedFirst(t *testing.T) {
	t.Parallel()
	b := fake.New()
	apply(t, b, reservedSpec(1))
	b.DHCPLeases = map[string]map[string][]string{"default": {mac("db-1"): {"192.168.122.2", "192.168.122.77"}}}
	r := New(b)
	o, err := r.Observe(context.Background(), reservedSpec(1))
	if err != nil {
		t.Fatal(err)
	}
	r.Addresses(context.Background(), &o)
	if diff := cmp.Diff([]string{"192.168.122.2", "192.168.122.77"}, o.Observed[0].IPs); diff != "" {
		t.Errorf("addresses (-want +got):\n%s", diff)
	}
}
