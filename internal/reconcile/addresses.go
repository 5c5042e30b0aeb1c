package reconcile

import (
	"context"
	"slices"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// Addresses fills in the addresses of the observation's running members: from the guest agent
// where one is connected, else from the DHCP leases of the libvirt networks their interfaces are
// on, one call per network and host. Only the data source shows addresses, so only it asks: a
// plan or an apply never pays for them. An address that cannot be read is left out rather than
// failing the read. The members are copied first: an observation a plan shares is left as it was.
func (r *Reconciler) Addresses(ctx context.Context, o *Observation) {
	o.Observed = slices.Clone(o.Observed)
	leases := map[string]map[string][]string{} // host + network -> MAC -> addresses
	for i := range o.Observed {
		ob := &o.Observed[i]
		d, ok := o.Domains[ob.Name]
		if !ok || ob.Unknown || ob.Status != engine.StatusRunning {
			continue
		}
		b, err := r.host(ob.Host)
		if err != nil {
			continue
		}
		if d.Agent {
			if ips, err := b.GuestAddresses(ctx, ob.Name); err == nil {
				ob.IPs = ips
				continue
			}
		}
		for n, network := range d.Networks {
			if network == "" || n >= len(d.MACs) {
				continue
			}
			key := ob.Host + "\x00" + network
			l, read := leases[key]
			if !read {
				if l, err = b.Leases(ctx, network); err != nil {
					tflog.Debug(ctx, "DHCP leases cannot be read", map[string]any{"host": ob.Host, "network": network, "error": err.Error()})
				}
				leases[key] = l
			}
			ob.IPs = append(ob.IPs, l[d.MACs[n]]...)
		}
	}
}
