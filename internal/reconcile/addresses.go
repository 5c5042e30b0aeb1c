package reconcile

import (
	"context"
	"maps"
	"slices"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// Addresses fills in the addresses of the observation's running members: from the guest agent
// where one is connected, else from the DHCP leases of the libvirt networks their interfaces are
// on, one call per network and host. A member's reserved or pinned addresses (the networks' host
// entries for its MACs, read by the observation) come first, running or not: they are its
// addresses whatever the guest has taken so far. Only the data source shows addresses, so only it asks: a
// plan or an apply never pays for them. An address that cannot be read is left out rather than
// failing the read. The members are copied first: an observation a plan shares is left as it was.
func (r *Reconciler) Addresses(ctx context.Context, o *Observation) {
	o.Observed = slices.Clone(o.Observed)
	leases := map[string]map[string][]string{} // host + network -> MAC -> addresses
	for i := range o.Observed {
		ob := &o.Observed[i]
		r.observedAddresses(ctx, ob, o.Domains, leases)
		ob.IPs = withReserved(ob.Reserved, ob.IPs)
	}
}

// withReserved is ips with the reserved addresses first, in interface order, each once.
func withReserved(reserved map[int]string, ips []string) []string {
	if len(reserved) == 0 {
		return ips
	}
	var out []string
	for _, nic := range slices.Sorted(maps.Keys(reserved)) {
		if ip := reserved[nic]; !slices.Contains(out, ip) {
			out = append(out, ip)
		}
	}
	for _, ip := range ips {
		if !slices.Contains(out, ip) {
			out = append(out, ip)
		}
	}
	return out
}

// observedAddresses fills in one running member's addresses as the guest agent or the leases
// tell them.
func (r *Reconciler) observedAddresses(ctx context.Context, ob *engine.Observed, domains map[string]backend.Domain, leases map[string]map[string][]string) {
	d, ok := domains[ob.Name]
	if !ok || ob.Unknown || ob.Status != engine.StatusRunning {
		return
	}
	b, err := r.host(ob.Host)
	if err != nil {
		return
	}
	if d.Agent {
		var ips []string
		if err := readHost(ctx, ob.Host, func(ctx context.Context) error {
			var err error
			ips, err = b.GuestAddresses(ctx, ob.Name)
			return err
		}); err == nil {
			ob.IPs = ips
			return
		}
	}
	for n, network := range d.Networks {
		if network == "" || n >= len(d.MACs) {
			continue
		}
		key := ob.Host + "\x00" + network
		l, read := leases[key]
		if !read {
			var got map[string][]string
			err = readHost(ctx, ob.Host, func(ctx context.Context) error {
				var err error
				got, err = b.Leases(ctx, network)
				return err
			})
			l = got
			if err != nil {
				l = nil
				tflog.Debug(ctx, "DHCP leases cannot be read", map[string]any{"host": ob.Host, "network": network, "error": err.Error()})
			}
			leases[key] = l
		}
		ob.IPs = append(ob.IPs, l[d.MACs[n]]...)
	}
}
