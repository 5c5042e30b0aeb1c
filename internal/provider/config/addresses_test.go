package config

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// TestCheckPins: a pin is refused at plan, naming the attribute, the value and what is allowed,
// when the template lacks the interface or it is user-mode, when the address is outside the
// network's subnet or is its own, when another MAC's host entry holds it, or another instance
// pins it.
func TestCheckPins(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	foreign := engine.DHCPHost{MAC: "52:54:00:12:34:56", IP: "192.168.122.60"}
	cases := map[string]struct {
		pins []engine.NetworkIP
		// otherPin is another instance's pin, when set.
		otherPin string
		want     string // "" accepts
	}{
		"a free address of the subnet":        {pins: pin("nic0", "192.168.122.50")},
		"outside the subnet":                  {pins: pin("nic0", "10.1.2.3"), want: `network_ip nic0 address = "10.1.2.3": outside the network's subnet 192.168.122.0/24`},
		"the network's own address":           {pins: pin("nic0", "192.168.122.1"), want: `the network's own address on host "default" (the provider's uri). Allowed: an address of 192.168.122.0/24 other than its own 192.168.122.1`},
		"another MAC's host entry":            {pins: pin("nic0", "192.168.122.60"), want: `network_ip nic0 address = "192.168.122.60" is reserved in network "default" on host "default" (the provider's uri) for MAC 52:54:00:12:34:56`},
		"pinned twice in the group":           {pins: pin("nic0", "192.168.122.50"), otherPin: "192.168.122.50", want: `network_ip nic0 address = "192.168.122.50" is pinned already for instance "db-2"`},
		"an interface the template lacks":     {pins: pin("nic2", "192.168.122.50"), want: `network_ip interface = "nic2", but the group's template has 2 network_interface blocks. Allowed: nic0 to nic1`},
		"a user-mode interface":               {pins: pin("nic1", "192.168.122.50"), want: `network_ip interface = "nic1" for address "192.168.122.50", but the template's nic1 is a type = "user" interface`},
		"the instance's own entry is its own": {pins: pin("nic0", "192.168.122.70")},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := fake.New()
			n := fake.DefaultDHCPNetwork("default")
			n.Hosts = []engine.DHCPHost{foreign, {MAC: engine.MACAddress("db", "db-1", 0), IP: "192.168.122.70"}}
			b.Networks = map[string]*engine.DHCPNetwork{"default": &n}
			r := &PerInstanceConfigResource{Data: &providerdata.ProviderData{Reconciler: reconcile.New(b)}}
			s := engine.GroupState{Group: engine.Group{Name: "db", Base: "db", Template: engine.Template{
				NICs: []engine.NIC{{Network: "default", Type: "network"}, {Type: "user"}}}}}
			s.Configs = map[string]engine.ConfigEntry{"db-1": {Config: engine.InstanceConfig{NetworkIPs: c.pins}}}
			if c.otherPin != "" {
				s.Configs["db-2"] = engine.ConfigEntry{Config: engine.InstanceConfig{NetworkIPs: pin("nic0", c.otherPin)}}
			}
			var diags diag.Diagnostics
			r.checkPins(ctx, &diags, s, "db-1", c.pins, []string{engine.DefaultHost})
			var got []string
			for _, d := range diags.Errors() {
				got = append(got, d.Detail())
				// On the pin's own block, at the attribute at fault.
				at := "address"
				if strings.HasPrefix(d.Detail(), "network_ip interface") {
					at = "interface"
				}
				block := types.ObjectValueMust(map[string]attr.Type{"interface": types.StringType, "address": types.StringType},
					map[string]attr.Value{"interface": types.StringValue(c.pins[0].Interface), "address": types.StringValue(c.pins[0].Address)})
				want := path.Root("preserved_state").AtName("network_ip").AtSetValue(block).AtName(at)
				if p, ok := d.(diag.DiagnosticWithPath); !ok || !p.Path().Equal(want) {
					t.Errorf("error not on %s: %v", want, d)
				}
			}
			all := strings.Join(got, "\n")
			switch {
			case c.want == "" && all != "":
				t.Fatalf("refused: %s", all)
			case c.want != "" && (len(got) != 1 || !strings.Contains(all, c.want)):
				t.Fatalf("errors:\n%s\nwant one saying %q", all, c.want)
			}
		})
	}
}

func pin(iface, address string) []engine.NetworkIP {
	return []engine.NetworkIP{{Interface: iface, Address: address}}
}

// TestCheckReservable: address = "reserved" needs a network with IPv4 DHCP.
func TestCheckReservable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := fake.New()
	b.Networks = map[string]*engine.DHCPNetwork{"isolated": {Name: "isolated", Address: "10.0.0.1", Prefix: 24}}
	var diags diag.Diagnostics
	providerdata.CheckReservable(ctx, &diags, b, engine.DefaultHost, path.Root("x"), 0, "default")
	if diags.HasError() {
		t.Fatalf("default refused: %v", diags)
	}
	providerdata.CheckReservable(ctx, &diags, b, engine.DefaultHost, path.Root("x"), 1, "isolated")
	if len(diags.Errors()) != 1 || !strings.Contains(diags.Errors()[0].Detail(), `network_interface[1].address = "reserved", but network "isolated" on host "default" (the provider's uri) has no IPv4 DHCP range`) {
		t.Fatalf("errors %v", diags.Errors())
	}
}
