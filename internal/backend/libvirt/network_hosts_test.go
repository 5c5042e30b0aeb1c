package libvirt

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

func TestDHCPNetworkOf(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		doc  string
		want engine.DHCPNetwork
	}{
		{name: "default, netmask and hosts", doc: `<network><name>default</name>
  <ip address='192.168.122.1' netmask='255.255.255.0'><dhcp>
    <range start='192.168.122.2' end='192.168.122.254'/>
    <host mac='52:54:00:00:00:01' name='a' ip='192.168.122.10'/>
  </dhcp></ip></network>`,
			want: engine.DHCPNetwork{Name: "n", Address: "192.168.122.1", Prefix: 24, RangeStart: "192.168.122.2", RangeEnd: "192.168.122.254",
				Hosts: []engine.DHCPHost{{MAC: "52:54:00:00:00:01", IP: "192.168.122.10", Name: "a"}}}},
		{name: "IPv6 first, prefix", doc: `<network><name>x</name>
  <ip family='ipv6' address='fd00::1' prefix='64'><dhcp><range start='fd00::10' end='fd00::20'/></dhcp></ip>
  <ip address='10.9.0.1' prefix='16'><dhcp><range start='10.9.1.0' end='10.9.1.255'/></dhcp></ip></network>`,
			want: engine.DHCPNetwork{Name: "n", Address: "10.9.0.1", Prefix: 16, RangeStart: "10.9.1.0", RangeEnd: "10.9.1.255"}},
		{name: "no DHCP", doc: `<network><name>iso</name><ip address='10.0.0.1' netmask='255.255.255.0'/></network>`,
			want: engine.DHCPNetwork{Name: "n", Address: "10.0.0.1", Prefix: 24}},
		{name: "no IPv4 at all", doc: `<network><name>br</name><forward mode='bridge'/></network>`, want: engine.DHCPNetwork{Name: "n"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := dhcpNetworkOf("n", c.doc)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("network (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAccDHCPHosts adds, modifies and deletes a host entry of the harness's "default" network
// against the real daemon, and checks the network's XML (live and persistent) after each, as
// virsh shows it: the command and section of virNetworkUpdate travel in the order this daemon
// expects (libvirt 9.0's wire protocol has them swapped).
func TestAccDHCPHosts(t *testing.T) {
	requireAcc(t)
	b := connectAcc(t, "qemu:///system")
	ctx := context.Background()
	const mac = "02:7f:ac:c0:00:01" // locally administered: no guest of any test has it
	host := engine.DHCPHost{MAC: mac, IP: "192.168.122.251"}
	dump := func(args ...string) string {
		out, err := exec.Command("virsh", append([]string{"-c", "qemu:///system", "net-dumpxml", "default"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("virsh net-dumpxml: %v: %s", err, out)
		}
		return string(out)
	}
	t.Cleanup(func() {
		n, _ := b.DHCPNetwork(ctx, "default")
		if h, ok := n.HostOf(mac); ok {
			_ = b.DeleteDHCPHost(ctx, "default", h)
		}
	})
	if err := b.SetDHCPHost(ctx, "default", host, false); err != nil {
		t.Fatal(err)
	}
	want := "<host mac='" + mac + "' ip='192.168.122.251'/>"
	for _, doc := range []string{dump(), dump("--inactive")} {
		if !strings.Contains(doc, want) {
			t.Fatalf("after add, the network lacks %s:\n%s", want, doc)
		}
	}
	n, err := b.DHCPNetwork(ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	if h, ok := n.HostOf(mac); !ok || h.IP != host.IP {
		t.Fatalf("read back %+v, %v", h, ok)
	}
	if err := b.SetDHCPHost(ctx, "default", engine.DHCPHost{MAC: mac, IP: "192.168.122.252"}, true); err != nil {
		t.Fatal(err)
	}
	want = "<host mac='" + mac + "' ip='192.168.122.252'/>"
	for _, doc := range []string{dump(), dump("--inactive")} {
		if !strings.Contains(doc, want) || strings.Contains(doc, "192.168.122.251") {
			t.Fatalf("after modify, the network lacks %s:\n%s", want, doc)
		}
	}
	if err := b.SetDHCPHost(ctx, "default", engine.DHCPHost{MAC: "02:7f:ac:c0:00:02", IP: "192.168.122.252"}, false); err == nil {
		t.Fatal("a second entry at the same address was accepted")
	}
	if err := b.DeleteDHCPHost(ctx, "default", engine.DHCPHost{MAC: mac, IP: "192.168.122.252"}); err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{dump(), dump("--inactive")} {
		if strings.Contains(doc, mac) {
			t.Fatalf("after delete, the network still has %s:\n%s", mac, doc)
		}
	}
}
