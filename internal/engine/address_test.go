package engine

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// withNIC is base() with one interface on "default" holding address ("" for none).
func withNIC(address string) Template {
	t := base()
	t.NICs = []NIC{{Network: "default", Type: "network", Address: address}}
	return t
}

func TestInstanceDiff_addresses(t *testing.T) {
	t.Parallel()
	pin := func(ip string) InstanceConfig {
		return InstanceConfig{NetworkIPs: []NetworkIP{{Interface: "nic0", Address: ip}}}
	}
	cases := []struct {
		name            string
		current         Template
		currentConfig   InstanceConfig
		desired         Template
		desiredConfig   InstanceConfig
		observedEntry   *string // the network's entry for the member's MAC, when read
		want            Action
		wantReasons     []string
		wantNoReasonFor bool
	}{
		{name: "reservation added: the address it holds, live", current: withNIC(""), desired: withNIC("reserved"),
			want: ActionRefresh, wantReasons: []string{"network_interface[0].address reserved"}},
		{name: "reservation removed: released, live", current: withNIC("reserved"), desired: withNIC(""),
			want: ActionRefresh, wantReasons: []string{"network_interface[0].address reservation released"}},
		{name: "pin on a dynamic interface restarts", current: withNIC(""), desired: withNIC(""), desiredConfig: pin("192.168.122.50"),
			want: ActionRestart, wantReasons: []string{"preserved_state.network_ip nic0 pinned at 192.168.122.50"}},
		{name: "pin over a reservation elsewhere restarts", current: withNIC("reserved"), desired: withNIC("reserved"), desiredConfig: pin("192.168.122.50"),
			observedEntry: ptr("192.168.122.7"), want: ActionRestart, wantReasons: []string{"preserved_state.network_ip nic0 pinned at 192.168.122.50"}},
		{name: "pin at the address it holds changes nothing on the host", current: withNIC("reserved"), desired: withNIC("reserved"), desiredConfig: pin("192.168.122.50"),
			observedEntry: ptr("192.168.122.50"), want: ActionNone},
		{name: "pin changed restarts", current: withNIC(""), currentConfig: pin("192.168.122.50"), desired: withNIC(""), desiredConfig: pin("192.168.122.51"),
			want: ActionRestart, wantReasons: []string{"preserved_state.network_ip nic0 pinned at 192.168.122.51"}},
		{name: "pin removed, template reserves: the entry stays", current: withNIC("reserved"), currentConfig: pin("192.168.122.50"), desired: withNIC("reserved"),
			want: ActionNone},
		{name: "pin removed, template dynamic: released", current: withNIC(""), currentConfig: pin("192.168.122.50"), desired: withNIC(""),
			want: ActionRefresh, wantReasons: []string{"network_interface[0].address reservation released"}},
		{name: "entry deleted behind Terraform's back is put back live", current: withNIC("reserved"), desired: withNIC("reserved"),
			observedEntry: ptr(""), want: ActionRefresh, wantReasons: []string{"drift: network_interface[0].address reserved"}},
		{name: "an entry for its MAC it should not have is released", current: withNIC(""), desired: withNIC(""),
			observedEntry: ptr("192.168.122.9"), want: ActionRefresh, wantReasons: []string{"drift: network_interface[0].address reservation released"}},
		{name: "a held reservation needs nothing", current: withNIC("reserved"), desired: withNIC("reserved"),
			observedEntry: ptr("192.168.122.9"), want: ActionNone},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			o := Observed{Name: "db-1", Index: 1, Status: StatusRunning, Instance: built("db-1", c.current, Policy{}, c.currentConfig)}
			if c.observedEntry != nil {
				o.Reserved = map[int]string{}
				if *c.observedEntry != "" {
					o.Reserved[0] = *c.observedEntry
				}
			}
			mi, missing := Drift(o)
			plan := PlanInstance(mi, c.desired, Policy{}, c.desiredConfig, ActionNone, ActionReplace).withDrift(o.Instance, missing)
			var got []string
			for _, r := range plan.Reasons {
				got = append(got, r.What)
			}
			if plan.Needed != c.want {
				t.Errorf("action %s, want %s (reasons %q)", plan.Needed, c.want, got)
			}
			if diff := cmp.Diff(c.wantReasons, got); diff != "" {
				t.Errorf("reasons (-want +got):\n%s", diff)
			}
		})
	}
}

func ptr(s string) *string { return &s }

func TestTemplate_revisionWithoutAddressesUnchanged(t *testing.T) {
	t.Parallel()
	plain := withNIC("")
	// The revision of this template before addresses existed.
	if got, want := plain.Revision(), (Template{Shape: Shape{DomainType: plain.DomainType, VCPU: plain.VCPU, MemoryMiB: plain.MemoryMiB, Labels: plain.Labels}, BootDisk: plain.BootDisk, Disks: plain.Disks,
		NICs: []NIC{{Network: "default", Type: "network"}}, Metadata: plain.Metadata}).Revision(); got != want {
		t.Errorf("revision %s, want %s", got, want)
	}
	if withNIC("reserved").Revision() == plain.Revision() {
		t.Error("a reserved address does not change the revision")
	}
	if !strings.Contains(string(templateJSON(withNIC("reserved"))), `"address":"reserved"`) || strings.Contains(string(templateJSON(plain)), "address") {
		t.Errorf("canonical form: %s / %s", templateJSON(withNIC("reserved")), templateJSON(plain))
	}
}

func TestPlanReservation(t *testing.T) {
	t.Parallel()
	const mine, other = "02:00:00:00:00:01", "52:54:00:aa:bb:cc"
	net := func(hosts ...DHCPHost) DHCPNetwork {
		return DHCPNetwork{Name: "default", Address: "192.168.122.1", Prefix: 24, RangeStart: "192.168.122.2", RangeEnd: "192.168.122.254", Hosts: hosts}
	}
	cases := []struct {
		name    string
		n       DHCPNetwork
		pin     string
		leases  map[string][]string
		want    HostChange
		wantErr string
	}{
		{name: "reserved: its lease", n: net(), leases: map[string][]string{mine: {"192.168.122.77"}},
			want: HostChange{Command: HostAdd, Host: DHCPHost{MAC: mine, IP: "192.168.122.77"}}},
		{name: "reserved: no lease, the lowest free address", n: net(DHCPHost{MAC: other, IP: "192.168.122.2"}), leases: map[string][]string{"52:54:00:00:00:09": {"192.168.122.3"}},
			want: HostChange{Command: HostAdd, Host: DHCPHost{MAC: mine, IP: "192.168.122.4"}}},
		{name: "reserved: its entry is kept whatever its address", n: net(DHCPHost{MAC: "02:00:00:00:00:01", IP: "192.168.122.200"}),
			want: HostChange{Command: HostKeep, Host: DHCPHost{MAC: mine, IP: "192.168.122.200"}}},
		{name: "reserved: a lease at another MAC's entry is not taken", n: net(DHCPHost{MAC: other, IP: "192.168.122.77"}), leases: map[string][]string{mine: {"192.168.122.77"}},
			want: HostChange{Command: HostAdd, Host: DHCPHost{MAC: mine, IP: "192.168.122.2"}}},
		{name: "reserved: no DHCP", n: DHCPNetwork{Name: "isolated", Address: "10.0.0.1", Prefix: 24}, wantErr: "has no IPv4 DHCP"},
		{name: "pin: added", n: net(), pin: "192.168.122.50", want: HostChange{Command: HostAdd, Host: DHCPHost{MAC: mine, IP: "192.168.122.50"}}},
		{name: "pin: its own entry elsewhere is modified", n: net(DHCPHost{MAC: "02:00:00:00:00:01", IP: "192.168.122.9"}), pin: "192.168.122.50",
			want: HostChange{Command: HostModify, Host: DHCPHost{MAC: "02:00:00:00:00:01", IP: "192.168.122.50"}}},
		{name: "pin: already there", n: net(DHCPHost{MAC: mine, IP: "192.168.122.50"}), pin: "192.168.122.50",
			want: HostChange{Command: HostKeep, Host: DHCPHost{MAC: mine, IP: "192.168.122.50"}}},
		{name: "pin: another MAC's entry is a conflict", n: net(DHCPHost{MAC: other, IP: "192.168.122.50"}), pin: "192.168.122.50",
			wantErr: "reserved for MAC 52:54:00:aa:bb:cc"},
		{name: "pin: outside the subnet", n: net(), pin: "10.1.2.3", wantErr: "outside the network's subnet 192.168.122.0/24"},
		{name: "pin: the network's own address", n: net(), pin: "192.168.122.1", wantErr: "the network's own address"},
		{name: "pin: broadcast", n: net(), pin: "192.168.122.255", wantErr: "broadcast"},
		{name: "pin: outside the dynamic range, inside the subnet", n: DHCPNetwork{Name: "default", Address: "192.168.122.1", Prefix: 24, RangeStart: "192.168.122.100", RangeEnd: "192.168.122.200"}, pin: "192.168.122.50",
			want: HostChange{Command: HostAdd, Host: DHCPHost{MAC: mine, IP: "192.168.122.50"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := PlanReservation(c.n, Reservation{NIC: 0, Network: c.n.Name, MAC: mine, Address: c.pin}, c.leases)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one with %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("change (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTasks_addresses: reservations are made before the member's domain is defined or started
// (and, in a restart or replacement, before it stops), kept across replacement, and released
// before a deleted member's definition goes.
func TestTasks_addresses(t *testing.T) {
	t.Parallel()
	env := Env{Volumes: map[string]bool{"db-1-boot.qcow2": true, "db-1-data.qcow2": true}}
	reservedGroup := func(size int) Group {
		g := group(size)
		g.Template = withNIC("reserved")
		return g
	}
	member := func(tpl Template, change func(o *Observed)) []Observed {
		o := observed(tpl, StatusRunning, 1)[0]
		o.Attached = o.Instance.Current.Disks
		o.VCPU, o.MemoryMiB = o.Instance.Current.VCPU, o.Instance.Current.MemoryMiB
		desc := ""
		o.Description = &desc
		if change != nil {
			change(&o)
		}
		return []Observed{o}
	}
	held := func(o *Observed) { o.Reserved = map[int]string{0: "192.168.122.9"} }
	cases := []struct {
		name string
		plan func() GroupPlan
		want []string
	}{
		{
			name: "create",
			plan: func() GroupPlan { return PlanGroup(state(reservedGroup(1)), nil, Env{Volumes: map[string]bool{}}) },
			want: []string{"fresh-volume db-1-boot.qcow2", "  otherwise name-free ", "  otherwise refuse db-1-boot.qcow2", "  otherwise create-volume db-1-boot.qcow2",
				"create-volume db-1-data.qcow2", "reserve-address default nic0", "define", "start"},
		},
		{
			name: "replace keeps the reservation: only checked before anything stops",
			plan: func() GroupPlan {
				g := reservedGroup(1)
				g.Template.BootDisk.SourceImage = "/images/new.qcow2"
				return PlanGroup(state(g), member(withNIC("reserved"), held), env)
			},
			want: []string{"mark", "delete-volume db-1-boot.staging.qcow2", "stage db-1-boot.staging.qcow2", "reserve-address default nic0", "define-next",
				"shutdown", "  otherwise power-off ", "stop-wait", "undefine",
				"delete-volume db-1-boot.qcow2", "create-volume db-1-boot.qcow2", "delete-volume db-1-data.qcow2", "create-volume db-1-data.qcow2",
				"delete-volume db-1-boot.staging.qcow2", "define", "start"},
		},
		{
			name: "restart for a new pin: reserved at the pin before the stop",
			plan: func() GroupPlan {
				s := state(reservedGroup(1))
				s.Configs = map[string]ConfigEntry{"db-1": {Config: InstanceConfig{NetworkIPs: []NetworkIP{{Interface: "nic0", Address: "192.168.122.50"}}}, MinimalAction: ActionNone, MostDisruptiveAllowed: ActionReplace}}
				return PlanGroup(s, member(withNIC("reserved"), held), env)
			},
			want: []string{"mark", "reserve-address default nic0 192.168.122.50", "define-next", "shutdown", "  otherwise power-off ", "stop-wait", "record", "start"},
		},
		{
			name: "reservation added live",
			plan: func() GroupPlan { return PlanGroup(state(reservedGroup(1)), member(withNIC(""), nil), env) },
			want: []string{"mark", "reserve-address default nic0", "record"},
		},
		{
			name: "reservation removed live",
			plan: func() GroupPlan {
				g := reservedGroup(1)
				g.Template = withNIC("")
				return PlanGroup(state(g), member(withNIC("reserved"), held), env)
			},
			want: []string{"release-address default nic0", "record"},
		},
		{
			name: "scale-in releases before the definition goes",
			plan: func() GroupPlan {
				return PlanGroup(state(reservedGroup(0)), member(withNIC("reserved"), held), env)
			},
			want: []string{"early shutdown", "  otherwise power-off ", "stop-wait", "release-address default nic0", "undefine", "delete-volume db-1-boot.qcow2", "delete-volume db-1-data.qcow2"},
		},
		{
			name: "destroy releases",
			plan: func() GroupPlan {
				return PlanDestroy(state(reservedGroup(1)), member(withNIC("reserved"), held), nil, env)
			},
			want: []string{"early shutdown", "  otherwise power-off ", "stop-wait", "release-address default nic0", "undefine", "delete-volume db-1-boot.qcow2", "delete-volume db-1-data.qcow2"},
		},
		{
			name: "a create interrupted after its reservation, then not wanted: the entry for its MAC goes",
			plan: func() GroupPlan {
				g := group(1)
				g.Template = withNIC("")
				return PlanGroup(state(g), member(withNIC(""), held), env)
			},
			want: []string{"release-address default nic0", "record"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := c.plan()
			if len(p.Waves) == 0 || len(p.Waves[0].Ops) != 1 {
				t.Fatalf("want one operation first, got %d waves (%v)", len(p.Waves), p.Blocked)
			}
			got := append([]string(nil), tasksOf(p.Waves[0].Ops[0])...)
			for i, tk := range p.Waves[0].Ops[0].Tasks {
				if tk.Kind == TaskReserve || tk.Kind == TaskRelease {
					r := tk.Reservation
					line := strings.TrimSpace(tk.Kind.String() + " " + r.Network + " " + InterfaceName(r.NIC) + " " + r.Address)
					got[i+len(p.Waves[0].Ops[0].Early)+otherwiseBefore(p.Waves[0].Ops[0], i)] = line
					if r.MAC != MACAddress("db", "db-1", r.NIC) {
						t.Errorf("%s with MAC %s, not the member's own", tk.Kind, r.MAC)
					}
				}
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("tasks (-want +got):\n%s", diff)
			}
		})
	}
}

// otherwiseBefore counts the "otherwise" lines tasksOf renders before the i-th task, the early
// tasks' among them.
func otherwiseBefore(op Operation, i int) int {
	n := 0
	for _, t := range op.Early {
		n += len(t.Otherwise)
	}
	for _, t := range op.Tasks[:i] {
		n += len(t.Otherwise)
	}
	return n
}

func TestPinnedElsewhere(t *testing.T) {
	t.Parallel()
	s := state(group(2))
	s.Group.Template = withNIC("")
	pin := func(ip string) ConfigEntry {
		return ConfigEntry{Config: InstanceConfig{NetworkIPs: []NetworkIP{{Interface: "nic0", Address: ip}}}}
	}
	s.Configs = map[string]ConfigEntry{"db-1": pin("192.168.122.50"), "db-2": pin("192.168.122.50")}
	got := PinnedElsewhere(s, "db-2", s.Configs["db-2"].Config.NetworkIPs)
	if diff := cmp.Diff([]PinConflict{{Pin: NetworkIP{Interface: "nic0", Address: "192.168.122.50"}, Other: "db-1"}}, got); diff != "" {
		t.Errorf("conflicts (-want +got):\n%s", diff)
	}
	if got := PinnedElsewhere(s, "db-1", []NetworkIP{{Interface: "nic0", Address: "192.168.122.51"}}); len(got) != 0 {
		t.Errorf("a free address conflicts: %v", got)
	}
}
