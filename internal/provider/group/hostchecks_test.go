package group

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// TestCheckGroupHost_onTheMembersHosts: every plan-time check runs against the hosts the
// group's members are or will be on, and names the host it refuses on; a host of the group that
// does not answer is not checked (its members are left as they are).
func TestCheckGroupHost_onTheMembersHosts(t *testing.T) {
	ctx := context.Background()
	// Three fake hosts: the image is a volume of default's pool "p" and of h3's, not of h2's;
	// the network "lan" exists on default only.
	hosts := func() map[string]*fake.Backend {
		out := map[string]*fake.Backend{"default": fake.New(), "h2": fake.New(), "h3": fake.New()}
		out["default"].Volumes["p/img.qcow2"] = &fake.Volume{SizeMiB: 64}
		out["h3"].Volumes["p/img.qcow2"] = &fake.Volume{SizeMiB: 64}
		out["h2"].MissingNetworks = map[string]bool{"lan": true}
		out["h3"].MissingNetworks = map[string]bool{"lan": true}
		return out
	}
	group := func(image, network string, hostNames ...string) *StatefulGroupModel {
		var list []attr.Value
		for _, h := range hostNames {
			list = append(list, types.StringValue(h))
		}
		m := &StatefulGroupModel{Name: types.StringValue("db"), Pool: types.StringValue("p"),
			Template: &TemplateModel{DomainType: types.StringValue("qemu"), VCPU: types.Int64Value(1), MemoryMiB: types.Int64Value(64),
				BootDisk: &BootDiskModel{SourceImage: types.StringValue(image), SizeMiB: types.Int64Value(1024)}},
			Instances: types.StringNull()}
		if image == "" {
			m.Template.BootDisk = nil // a blank boot disk
		}
		if network != "" {
			m.Template.NetworkInterface = []nicModel{{Type: types.StringValue("network"), Network: types.StringValue(network)}}
		}
		if len(list) > 0 {
			m.Distribution = &DistributionModel{Hosts: types.ListValueMust(types.StringType, list)}
		}
		return m
	}
	withMembers := func(m *StatefulGroupModel, rows ...string) *StatefulGroupModel {
		var parts []string
		for _, r := range rows {
			name, host, _ := strings.Cut(r, "@")
			parts = append(parts, fmt.Sprintf(`{"name":%q,"host":%q,"status":"RUNNING"}`, name, host))
		}
		m.Instances = types.StringValue("[" + strings.Join(parts, ",") + "]")
		return m
	}
	drained := func(m *StatefulGroupModel, hostNames ...string) *StatefulGroupModel {
		var list []attr.Value
		for _, h := range hostNames {
			list = append(list, types.StringValue(h))
		}
		m.Distribution.Drain = types.ListValueMust(types.StringType, list)
		return m
	}
	cases := map[string]struct {
		plan, prior *StatefulGroupModel
		h3Down      bool
		// noPoolOnH2: h2 has no pool "p"; poolPlannedOnH2: a virt_pool plan of this process
		// makes it there (providerdata/pool_plans.go).
		noPoolOnH2, poolPlannedOnH2 bool
		want                        string // the errors, "; "-joined: "summary: detail" of each
	}{
		"a host without the group's pool is refused": {
			plan:       group("", "", "default", "h2"),
			noPoolOnH2: true,
			want:       `Storage pool not found on host: pool "p" does not exist on host "h2"`,
		},
		"a pool that a virt_pool of the same plan makes on the host is accepted": {
			plan:       group("", "", "default", "h2"),
			noPoolOnH2: true, poolPlannedOnH2: true,
		},
		"a pool volume of the default host only is no source for members on h2": {
			plan: group("/fake/p/img.qcow2", "", "default", "h2"),
			want: `Invalid source_image: source_image on host "h2": no storage pool on the libvirt host has a volume at "/fake/p/img.qcow2": it does not exist there`,
		},
		"a volume in h3's own pool is a source for members on h3": {
			plan: group("img.qcow2", "", "h3"),
		},
		"a volume name only h3's pool has is refused for h2": {
			plan: group("img.qcow2", "", "h3", "h2"),
			want: `Invalid source_image: source_image on host "h2": there is no volume "img.qcow2" in storage pool "p"`,
		},
		"a network of the default host only is refused for members on h2": {
			plan: group("img.qcow2", "lan", "default", "h3"),
			want: `Network not found: network "lan" does not exist on host "h3"`,
		},
		"an update checks a host new to the group for everything": {
			plan:  group("img.qcow2", "lan", "default", "h2"),
			prior: withMembers(group("img.qcow2", "lan", "default"), "db-1@default"),
			want: `Network not found: network "lan" does not exist on host "h2"; ` +
				`Invalid source_image: source_image on host "h2": there is no volume "img.qcow2" in storage pool "p"`,
		},
		"an update checks what changed where the members will be": {
			plan:  group("/fake/p/img.qcow2", "", "default", "h2"),
			prior: withMembers(group("img.qcow2", "", "default", "h2"), "db-1@default", "db-2@h2"),
			want:  `Invalid source_image: source_image on host "h2": no storage pool on the libvirt host has a volume at "/fake/p/img.qcow2": it does not exist there`,
		},
		// The members of a host left out of hosts, or drained, move to the others and get
		// nothing else of the plan where they are: that host is not checked.
		"a host left out is not checked: its members move away": {
			plan:  group("/fake/p/img.qcow2", "", "default"),
			prior: withMembers(group("img.qcow2", "", "default"), "db-1@default", "db-2@h2"),
		},
		"a drained host is not checked: its members move away": {
			plan:  drained(group("/fake/p/img.qcow2", "", "default", "h2"), "h2"),
			prior: withMembers(group("img.qcow2", "", "default", "h2"), "db-1@default", "db-2@h2"),
		},
		"a drain checks the hosts the members move to for everything new there": {
			plan:  drained(group("img.qcow2", "lan", "h2", "default"), "h2"),
			prior: withMembers(group("img.qcow2", "lan", "h2"), "db-1@h2", "db-2@h2"),
		},
		"a host new to the group that the members move to is checked for everything": {
			plan:  drained(group("img.qcow2", "lan", "default", "h3"), "default"),
			prior: withMembers(group("img.qcow2", "lan", "default"), "db-1@default"),
			want:  `Network not found: network "lan" does not exist on host "h3"`,
		},
		"a host the group drained and takes back is checked as a new one": {
			plan:  group("img.qcow2", "lan", "default", "h2"),
			prior: drained(withMembers(group("img.qcow2", "lan", "default", "h2"), "db-1@default"), "h2"),
			want: `Network not found: network "lan" does not exist on host "h2"; ` +
				`Invalid source_image: source_image on host "h2": there is no volume "img.qcow2" in storage pool "p"`,
		},
		"a drain name the provider does not know is refused, and nothing else is checked": {
			plan:  drained(group("img.qcow2", "lan", "default", "h3"), "h9"),
			prior: withMembers(group("img.qcow2", "lan", "default"), "db-1@default"),
			want:  `Unknown host: distribution_policy.drain[0] = "h9", but the provider has no host of that name. The provider's hosts: default, h2, h3`,
		},
		"an update that changes nothing checks nothing": {
			plan:  group("img.qcow2", "lan", "default", "h2"),
			prior: withMembers(group("img.qcow2", "lan", "default", "h2"), "db-1@default", "db-2@h2"),
		},
		"a host of the group that does not answer is not checked": {
			plan:   group("/fake/p/img.qcow2", "", "default", "h3"),
			prior:  withMembers(group("img.qcow2", "", "default", "h3"), "db-1@default", "db-2@h3"),
			h3Down: true,
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			fakes := hosts()
			if c.noPoolOnH2 {
				fakes["h2"].MissingPools = map[string]bool{"p": true}
			}
			if c.h3Down {
				fakes["h3"].Hook = func(string, string) error { return errors.New("connection refused") }
			}
			rec := reconcile.New(fakes["default"])
			rec.Hosts = map[string]backend.Backend{"h2": fakes["h2"], "h3": fakes["h3"]}
			r := &StatefulGroupResource{Data: &providerdata.ProviderData{Reconciler: rec}}
			if c.poolPlannedOnH2 {
				r.Data.PlanPoolCreate("h2", "p", "/var/lib/p")
			}
			var diags diag.Diagnostics
			r.CheckGroupHost(ctx, &diags, c.plan, c.prior)
			var got []string
			for _, d := range diags.Errors() {
				got = append(got, d.Summary()+": "+d.Detail())
			}
			all := strings.Join(got, "; ")
			if c.want == "" {
				if all != "" {
					t.Fatalf("refused: %s", all)
				}
				return
			}
			for _, w := range strings.Split(c.want, "; ") {
				if !strings.Contains(all, w) {
					t.Errorf("errors do not say %q:\n%s", w, strings.Join(got, "\n"))
				}
			}
			if len(got) != len(strings.Split(c.want, "; ")) {
				t.Errorf("%d errors, want %d:\n%s", len(got), len(strings.Split(c.want, "; ")), strings.Join(got, "\n"))
			}
		})
	}
}

// TestWarnHostsDown: a plan warns which of the group's hosts did not answer, with each one's
// error, and says nothing when all answered.
func TestWarnHostsDown(t *testing.T) {
	var diags diag.Diagnostics
	warnHostsDown(context.Background(), &diags, "db", nil)
	if len(diags) != 0 {
		t.Fatalf("all hosts answered, and the plan says %v", diags)
	}
	warnHostsDown(context.Background(), &diags, "db", map[string]error{"h3": errors.New("connection refused"), "h2": errors.New("network is unreachable")})
	w := diags.Warnings()
	if len(w) != 1 || w[0].Summary() != "Hosts of group db did not answer: h2, h3" ||
		!strings.HasPrefix(w[0].Detail(), "host \"h2\": network is unreachable\nhost \"h3\": connection refused\n\nTheir members are UNKNOWN") {
		t.Fatalf("warnings %v", w)
	}
}
