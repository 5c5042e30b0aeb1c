package reconcile

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// networkLocks serialise the reservations made on one network of one host by this process:
// members created together each read the free addresses and add one, and two that read the same
// listing would pick the same address.
var networkLocks sync.Map // networkKey -> *sync.Mutex

// networkKey is one network of one connection; it holds the backend, not its address, which a
// later backend could be given.
type networkKey struct {
	b       backend.Networks
	network string
}

func lockNetwork(b backend.Networks, network string) func() {
	m, _ := networkLocks.LoadOrStore(networkKey{b: b, network: network}, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// reserve makes the reservation's host entry as engine.PlanReservation decides from the network
// as it is now: run again after an interruption, it finds its entry and leaves it. An address
// picked from the free ones that another process took in the meantime (libvirt refuses the
// second entry) is picked again from a fresh read, a few times.
func (x *opRun) reserve(ctx context.Context, r engine.Reservation) error {
	step := fmt.Sprintf("reserve address of %s on network %s", engine.InterfaceName(r.NIC), r.Network)
	defer lockNetwork(x.networks(), r.Network)()
	var err error
	for range 3 {
		var picked bool
		if picked, err = x.reserveOnce(ctx, r); err == nil || !picked {
			break
		}
	}
	return x.do(step, err)
}

// reserveOnce is one read and update; picked tells that the address was chosen from the free
// ones (so that a conflict may be retried).
func (x *opRun) reserveOnce(ctx context.Context, r engine.Reservation) (picked bool, err error) {
	n, err := x.networks().DHCPNetwork(ctx, r.Network)
	if err != nil {
		return false, err
	}
	var leases map[string][]string
	if _, held := n.HostOf(r.MAC); !held && r.Address == "" {
		// The address the member holds now, and those others hold, are in the leases.
		if leases, err = x.networks().Leases(ctx, r.Network); err != nil {
			return false, err
		}
	}
	change, err := engine.PlanReservation(n, r, leases)
	if err != nil {
		return false, err
	}
	fields := map[string]any{"instance": x.op.Name, "network": r.Network, "mac": r.MAC, "ip": change.Host.IP, "change": change.Command.String()}
	if change.Command == engine.HostKeep {
		tflog.Debug(ctx, "address reservation kept", fields)
		return false, nil
	}
	if err := x.networks().SetDHCPHost(ctx, r.Network, change.Host, change.Command == engine.HostModify); err != nil {
		return r.Address == "", err
	}
	tflog.Info(ctx, "address reserved", fields)
	return false, nil
}

// release deletes the host entries of the reservation's MAC, the member's own, and no other:
// each as it was read, since libvirt deletes the entry that matches every attribute given.
func (x *opRun) release(ctx context.Context, r engine.Reservation) error {
	step := fmt.Sprintf("release address of %s on network %s", engine.InterfaceName(r.NIC), r.Network)
	defer lockNetwork(x.networks(), r.Network)()
	n, err := x.networks().DHCPNetwork(ctx, r.Network)
	if errors.Is(err, backend.ErrNotFound) {
		return nil // the network is gone, and its entries with it
	}
	if err != nil {
		return x.do(step, err)
	}
	for _, h := range n.Hosts {
		if !strings.EqualFold(h.MAC, r.MAC) {
			continue
		}
		if err := x.networks().DeleteDHCPHost(ctx, r.Network, h); err != nil {
			return x.do(step, err)
		}
		tflog.Info(ctx, "address released", map[string]any{"instance": x.op.Name, "network": r.Network, "mac": h.MAC, "ip": h.IP})
	}
	return nil
}

// reservations reads what the networks' host entries give the observed members' interfaces,
// when the group or the member's record holds addresses (engine's HoldsAddresses): one read per
// host and network. A network that cannot be read leaves the member's Reserved unset, so that
// nothing is planned from what is not known.
func (r *Reconciler) reservations(ctx context.Context, s engine.GroupState, o *Observation) {
	read := map[string]*engine.DHCPNetwork{} // host + network; nil when it cannot be read
	group := s.HoldsAddresses()
	for i := range o.Observed {
		ob := &o.Observed[i]
		d, ok := o.Domains[ob.Name]
		if !ok || ob.Unknown || ob.Unmanaged || (!group && !ob.Instance.HoldsAddresses()) {
			continue
		}
		b, err := r.host(ob.Host)
		if err != nil {
			continue
		}
		reserved, complete := map[int]string{}, true
		for nic, network := range d.Networks {
			if network == "" {
				continue
			}
			key := ob.Host + "\x00" + network
			n, seen := read[key]
			if !seen {
				var got engine.DHCPNetwork
				err := readHost(ctx, ob.Host, func(ctx context.Context) error {
					var err error
					got, err = b.DHCPNetwork(ctx, network)
					return err
				})
				if err != nil {
					tflog.Warn(ctx, "network cannot be read: its address reservations are not checked", map[string]any{"host": ob.Host, "network": network, "error": err.Error()})
				} else {
					n = &got
				}
				read[key] = n
			}
			if n == nil {
				complete = false
				continue
			}
			if h, ok := n.HostOf(engine.MACAddress(s.Group.Name, ob.Name, nic)); ok {
				reserved[nic] = h.IP
			}
		}
		if complete {
			ob.Reserved = reserved
		}
	}
}
