package provider

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/backend/libvirt"
)

var (
	hostConnsMu sync.Mutex
	hostConns   = map[string]*libvirt.Backend{}
)

// hostConn is a connection of the tests' own to one of the harness's hosts, to look at it
// behind the provider's back.
func hostConn(t *testing.T, host string) *libvirt.Backend {
	t.Helper()
	if host == testHostDefault {
		return testLibvirt(t)
	}
	hostConnsMu.Lock()
	defer hostConnsMu.Unlock()
	if b, ok := hostConns[host]; ok {
		return b
	}
	b, err := libvirt.Lazy(testHostURI(host))
	if err != nil {
		t.Fatal(err)
	}
	hostConns[host] = b
	return b
}

// multiHostConfig is a group of size stopped members over h2, default and h3 (in that order: its
// record lives on h2), with a data disk its policy preserves, and the data source.
func multiHostConfig(name string, size int, metadata, extra string) string {
	return hostsProvider() + dataPolicyAndInstances + groupConfig(name, size, diskBlocks(8, "data")+fmt.Sprintf("\n    metadata = { role = %q }", metadata), `
  running = false
  distribution_policy {
    hosts = ["h2", "default", "h3"]
  }
`+extra)
}

// onHosts checks which members each host has, straight from libvirt.
func onHosts(t *testing.T, base string, want map[string][]string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for host, names := range want {
			doms, err := hostConn(t, host).ListDomains(context.Background(), base+"-")
			if err != nil {
				return fmt.Errorf("list domains of host %s: %w", host, err)
			}
			var got []string
			for _, d := range doms {
				got = append(got, d.Name)
			}
			if err := sameNames("members on host "+host, got, names); err != nil {
				return err
			}
		}
		return nil
	}
}

// hostsOf is the expected instances list: each member's name and host, and the status given.
func hostsOf(base string, status map[string]string, hosts ...string) knownvalue.Check {
	checks := make([]knownvalue.Check, len(hosts))
	for i, h := range hosts {
		name := fmt.Sprintf("%s-%d", base, i+1)
		c := map[string]knownvalue.Check{"name": knownvalue.StringExact(name), "host": knownvalue.StringExact(h)}
		if s, ok := status[h]; ok {
			c["status"] = knownvalue.StringExact(s)
		}
		checks[i] = knownvalue.ObjectPartial(c)
	}
	return inMemberOrder{knownvalue.ListExact(checks)}
}

// hostVolumePath is the path of a volume of the harness pool on one of the hosts.
func hostVolumePath(t *testing.T, host, name string) string {
	t.Helper()
	pool := testHostPool
	if host == testHostDefault {
		pool = testPool()
	}
	vols, err := hostConn(t, host).ListVolumes(context.Background(), pool, name)
	if err != nil {
		t.Fatalf("list volumes of host %s: %v", host, err)
	}
	for _, v := range vols {
		if v.Name == name {
			return v.Path
		}
	}
	t.Fatalf("volume %s does not exist on host %s", name, host)
	return ""
}

// hostSums remembers the bytes of volumes on the hosts, by "host/volume".
type hostSums map[string]string

func (c hostSums) write(t *testing.T, host, name string, pattern byte) {
	t.Helper()
	p := hostVolumePath(t, host, name)
	if out, err := exec.Command("qemu-io", "-f", "qcow2", "-c", fmt.Sprintf("write -P 0x%02x 0 1M", pattern), p).CombinedOutput(); err != nil {
		t.Fatalf("qemu-io write to %s on %s: %v: %s", name, host, err, out)
	}
	c[host+"/"+name] = c.sum(t, host, name)
}

func (c hostSums) sum(t *testing.T, host, name string) string {
	t.Helper()
	out, err := exec.Command("sh", "-c", `qemu-img convert -U -O raw "$1" /dev/stdout | sha256sum`, "sh", hostVolumePath(t, host, name)).CombinedOutput()
	if err != nil {
		t.Fatalf("read %s on %s: %v: %s", name, host, err, out)
	}
	return strings.Fields(string(out))[0]
}

func (c hostSums) same(t *testing.T) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for k, want := range c {
			host, name, _ := strings.Cut(k, "/")
			if got := c.sum(t, host, name); got != want {
				return fmt.Errorf("volume %s on host %s has checksum %s, had %s: its data was lost", name, host, got, want)
			}
		}
		return nil
	}
}

// uuidsOn remembers every member's UUID and host, to tell a replacement in place from a move.
type uuidsOn map[string]string

func (u uuidsOn) record(t *testing.T, base string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for _, h := range testHostNames() {
			doms, err := hostConn(t, h).ListDomains(context.Background(), base+"-")
			if err != nil {
				return err
			}
			for _, d := range doms {
				u[d.Name] = h + "/" + d.UUID
			}
		}
		return nil
	}
}

// replacedInPlace checks that every member remembered has a new UUID on the same host.
func (u uuidsOn) replacedInPlace(t *testing.T, base string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		now := uuidsOn{}
		if err := now.record(t, base)(nil); err != nil {
			return err
		}
		for name, was := range u {
			host, uuid, _ := strings.Cut(was, "/")
			gotHost, gotUUID, _ := strings.Cut(now[name], "/")
			switch {
			case gotHost != host:
				return fmt.Errorf("%s moved from host %s to %q", name, host, gotHost)
			case gotUUID == uuid:
				return fmt.Errorf("%s on %s keeps UUID %s: it was not replaced", name, host, uuid)
			}
		}
		return nil
	}
}

// metadataOn checks members' role metadata as their own records on their hosts have it.
func metadataOn(t *testing.T, base, role string, hosts []string, names ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for _, h := range hosts {
			doms, err := hostConn(t, h).ListDomains(context.Background(), base+"-")
			if err != nil {
				return err
			}
			for _, d := range doms {
				if !slices.Contains(names, d.Name) {
					continue
				}
				if got := recordRole(d); got != role {
					return fmt.Errorf("%s on %s has role %q, want %q", d.Name, h, got, role)
				}
			}
		}
		return nil
	}
}

func recordRole(d backend.Domain) string {
	if d.Record == nil {
		return ""
	}
	return d.Record.Instance.Current.Metadata["role"]
}

// checkNothingLeftOnHosts is CheckDestroy for a group over the three hosts.
func checkNothingLeftOnHosts(t *testing.T, group string) func(*terraform.State) error {
	return checkNothingLeftOn(t, group, testHostNames()...)
}

// checkNothingLeftOn is CheckDestroy for a group over the hosts named.
func checkNothingLeftOn(t *testing.T, group string, hosts ...string) func(*terraform.State) error {
	return func(*terraform.State) error {
		var left []string
		for _, h := range hosts {
			b := hostConn(t, h)
			pool := testHostPool
			if h == testHostDefault {
				pool = testPool()
			}
			doms, err := b.ListDomains(context.Background(), group+"-")
			if err != nil {
				return err
			}
			for _, d := range doms {
				left = append(left, h+": domain "+d.Name)
			}
			vols, err := b.ListVolumes(context.Background(), pool, group+"-")
			if err != nil {
				return err
			}
			for _, v := range vols {
				left = append(left, h+": volume "+v.Name)
			}
			recs, err := b.GroupRecordNames(group)
			if err != nil {
				return err
			}
			if slices.Contains(recs, group) {
				left = append(left, h+": group record "+group)
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("left behind after destroy: %s", strings.Join(left, ", "))
		}
		return nil
	}
}

// replaceAll makes every change a replacement of every member at once.
const replaceAll = `
  update_policy {
    minimal_action  = "REPLACE"
    max_unavailable = "100%"
  }
`

// TestAccStatefulGroup_multiHost spreads a group over three libvirt daemons on this machine (the
// system daemon and two session daemons run by other users), scales it in and out, replaces
// every member where it is with its preserved disk, and stops one daemon in the middle: its
// members are UNKNOWN, nothing is done to make up for them, and once it is back the group
// converges.
func TestAccStatefulGroup_multiHost(t *testing.T) {
	hostsTest(t)
	name := testPrefix + "hosts"
	ds := "data.virt_managed_instances.test"
	unknown := map[string]string{"h3": "UNKNOWN", "h2": "STOPPED", "default": "STOPPED"}
	h3Unknown := knownvalue.ObjectPartial(map[string]knownvalue.Check{
		"status": knownvalue.StringExact("UNKNOWN"), "planned_action": knownvalue.StringExact(`NONE: host "h3" cannot be reached`),
	})
	sums := hostSums{}
	uuids := uuidsOn{}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeftOnHosts(t, name),
		Steps: []resource.TestStep{
			{
				Config: multiHostConfig(name, 6, "a", ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(groupAddr, tfjsonpath.New("instances"), hostsOf(name, map[string]string{"h2": "STOPPED", "default": "STOPPED", "h3": "STOPPED"}, "h2", "default", "h3", "h2", "default", "h3")),
					statecheck.ExpectKnownValue(ds, tfjsonpath.New("instances"), hostsOf(name, nil, "h2", "default", "h3", "h2", "default", "h3")),
				},
				Check: onHosts(t, name, map[string][]string{"h2": {name + "-1", name + "-4"}, "default": {name + "-2", name + "-5"}, "h3": {name + "-3", name + "-6"}}),
			},
			{
				// Scale-in takes from the hosts that keep the most: the spread stays even.
				Config: multiHostConfig(name, 4, "a", ""),
				Check:  onHosts(t, name, map[string][]string{"h2": {name + "-1", name + "-4"}, "default": {name + "-2"}, "h3": {name + "-3"}}),
			},
			{
				// Scale-out fills the hosts with the fewest first, under the lowest free indices.
				Config: multiHostConfig(name, 6, "a", ""),
				Check: resource.ComposeTestCheckFunc(
					onHosts(t, name, map[string][]string{"h2": {name + "-1", name + "-4"}, "default": {name + "-2", name + "-5"}, "h3": {name + "-3", name + "-6"}}),
					uuids.record(t, name),
				),
			},
			{
				// Every member is replaced on its own host, and its preserved disk with it.
				PreConfig: func() {
					sums.write(t, "h2", name+"-1-data.qcow2", 0x5a)
					sums.write(t, "h3", name+"-3-data.qcow2", 0xa5)
				},
				Config:           multiHostConfig(name, 6, "b", replaceAll),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate)}},
				Check:            resource.ComposeTestCheckFunc(uuids.replacedInPlace(t, name), sums.same(t), metadataOn(t, name, "b", testHostNames(), name+"-1", name+"-3", name+"-5")),
			},
			{
				// h3's daemon stops: its members are UNKNOWN, and nothing is planned for them.
				PreConfig: func() { stopHost(t, "h3") },
				Config:    multiHostConfig(name, 6, "b", replaceAll),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionNoop),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(groupAddr, tfjsonpath.New("instances"), hostsOf(name, unknown, "h2", "default", "h3", "h2", "default", "h3")),
					expectMemberState(groupAddr, 2, "", h3Unknown),
					statecheck.ExpectKnownValue(ds, tfjsonpath.New("instances"), hostsOf(name, unknown, "h2", "default", "h3", "h2", "default", "h3")),
				},
			},
			{
				// Back: a plan with no changes.
				PreConfig: func() { startHost(t, "h3") },
				Config:    multiHostConfig(name, 6, "b", replaceAll),
				PlanOnly:  true,
			},
			{
				// Down again, and the template changes: the change reaches the members that
				// can be reached, and only those.
				PreConfig: func() { stopHost(t, "h3") },
				Config:    multiHostConfig(name, 6, "c", replaceAll),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
					expectMemberPlan(groupAddr, 5, "", h3Unknown),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(groupAddr, tfjsonpath.New("instances"), hostsOf(name, unknown, "h2", "default", "h3", "h2", "default", "h3")),
				},
				Check: metadataOn(t, name, "c", []string{"h2", "default"}, name+"-1", name+"-2", name+"-4", name+"-5"),
			},
			{
				// Back: the apply brings h3's members up to date, where they are.
				PreConfig: func() { startHost(t, "h3") },
				Config:    multiHostConfig(name, 6, "c", replaceAll),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeTestCheckFunc(
					metadataOn(t, name, "c", []string{"h3"}, name+"-3", name+"-6"),
					onHosts(t, name, map[string][]string{"h2": {name + "-1", name + "-4"}, "default": {name + "-2", name + "-5"}, "h3": {name + "-3", name + "-6"}}),
					sums.same(t),
				),
			},
			{
				// The group record's own host stops: what can be read is shown, and a plan
				// that changes nothing goes on.
				PreConfig: func() { stopHost(t, "h2") },
				Config:    multiHostConfig(name, 6, "c", replaceAll),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionNoop),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(groupAddr, tfjsonpath.New("instances"),
						hostsOf(name, map[string]string{"h2": "UNKNOWN", "default": "STOPPED", "h3": "STOPPED"}, "h2", "default", "h3", "h2", "default", "h3")),
					statecheck.ExpectKnownValue(ds, tfjsonpath.New("instances"), knownvalue.ListExact([]knownvalue.Check{
						knownvalue.ObjectPartial(map[string]knownvalue.Check{"name": knownvalue.StringExact(name + "-2"), "host": knownvalue.StringExact("default")}),
						knownvalue.ObjectPartial(map[string]knownvalue.Check{"name": knownvalue.StringExact(name + "-3"), "host": knownvalue.StringExact("h3")}),
						knownvalue.ObjectPartial(map[string]knownvalue.Check{"name": knownvalue.StringExact(name + "-5"), "host": knownvalue.StringExact("default")}),
						knownvalue.ObjectPartial(map[string]knownvalue.Check{"name": knownvalue.StringExact(name + "-6"), "host": knownvalue.StringExact("h3")}),
					})),
				},
			},
			{
				// A change to the group is refused, naming the host, and changes nothing.
				Config:      multiHostConfig(name, 5, "c", replaceAll),
				ExpectError: regexp.MustCompile(`(?s)Cannot plan a change to group ` + name + `.*host\s+"h2".*cannot\s+be\s+reached`),
			},
			{
				// Back: a plan with no changes.
				PreConfig: func() {
					if err := onHosts(t, name, map[string][]string{"default": {name + "-2", name + "-5"}, "h3": {name + "-3", name + "-6"}})(nil); err != nil {
						t.Fatalf("after the refused change: %v", err)
					}
					startHost(t, "h2")
				},
				Config:   multiHostConfig(name, 6, "c", replaceAll),
				PlanOnly: true,
			},
		},
	})
}
