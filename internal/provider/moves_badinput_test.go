package provider

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
)

// snapshotOn is what a refused plan must leave as it found it on one of the harness's hosts:
// every domain with its state, every volume of the host's pool, every group record.
func snapshotOn(t *testing.T, host string) []string {
	t.Helper()
	ctx := context.Background()
	b := hostConn(t, host)
	pool := testHostPool
	if host == testHostDefault {
		pool = testPool()
	}
	var out []string
	doms, err := b.ListDomains(ctx, "")
	if err != nil {
		t.Fatalf("list domains of host %s: %v", host, err)
	}
	for _, d := range doms {
		out = append(out, fmt.Sprintf("domain %s %s %d", d.Name, d.Status, d.ID))
	}
	vols, err := b.ListVolumes(ctx, pool, "")
	if err != nil {
		t.Fatalf("list volumes of host %s: %v", host, err)
	}
	for _, v := range vols {
		out = append(out, fmt.Sprintf("volume %s %d", v.Name, v.CapacityBytes))
	}
	recs, err := b.GroupRecordNames("")
	if err != nil {
		t.Fatalf("list group records of host %s: %v", host, err)
	}
	for _, r := range recs {
		out = append(out, "group record "+r)
	}
	slices.Sort(out)
	return out
}

// TestAccMoves_badInput: a distribution_policy.drain that names a host the provider does not
// have, that drains every host of hosts, or that names a host twice is refused at plan (or
// validate), for a group that exists on two hosts and for one the same plan creates, with a
// diagnostic naming the attribute, the value and what is allowed; neither host changes.
func TestAccMoves_badInput(t *testing.T) {
	name := testPrefix + "mvbad"
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	hosts := []string{testHostDefault, testHostH2}
	provider := hostsProvider()
	policy := func(body string) string { return "  running = false\n  distribution_policy {\n" + body + "\n  }\n" }
	group := func(body string) string { return provider + groupConfig(name, 2, "", policy(body)) }
	good := group(`    hosts = ["default", "h2"]`)
	// A group this configuration would create, refused with nothing made.
	fresh := func(body string) string {
		return good + named(groupConfig(name+"new", 1, "", policy(body)), "fresh")
	}
	cases := []struct {
		name, config, err string
	}{
		{"a drain name the provider has no host of", group("    hosts = [\"default\", \"h2\"]\n    drain = [\"h9\"]"),
			`distribution_policy.drain\[0\] = "h9", but the provider has no host of that name. The provider's hosts: default, h2, h3 \(default is its own uri\). Add a host block named "h9" to the provider, or name one of these.`},
		{"every host of hosts drained", group("    hosts = [\"default\", \"h2\"]\n    drain = [\"h2\", \"default\"]"),
			`distribution_policy.drain = \["h2", "default"\] drains every host of distribution_policy.hosts \(\["default", "h2"\]\): its members would have no host to move to. At least one host of hosts must stay undrained`},
		{"the only host drained", group("    hosts = [\"h2\"]\n    drain = [\"h2\"]"),
			`distribution_policy.drain = \["h2"\] drains every host of distribution_policy.hosts \(\["h2"\]\)`},
		{"a drain name twice", group("    hosts = [\"default\", \"h2\"]\n    drain = [\"h2\", \"h2\"]"),
			`drain = \["h2", "h2"\][\s\S]*This attribute contains duplicate values of: "h2"`},
		{"a drain name that is no host name", group("    hosts = [\"default\", \"h2\"]\n    drain = [\"H_2\"]"),
			`drain = \["H_2"\][\s\S]*must be a DNS label[\s\S]*got: H_2`},
		{"a new group whose every host is drained", fresh("    hosts = [\"h3\"]\n    drain = [\"h3\"]"),
			`distribution_policy.drain = \["h3"\] drains every host of distribution_policy.hosts \(\["h3"\]\)`},
		{"a new group draining a host the provider has no host of", fresh("    hosts = [\"h3\"]\n    drain = [\"h4\"]"),
			`distribution_policy.drain\[0\] = "h4", but the provider has no host of that name`},
	}
	before := map[string][]string{}
	unchanged := func() error {
		var changed []string
		for _, h := range hosts {
			if now := snapshotOn(t, h); !slices.Equal(before[h], now) {
				changed = append(changed, fmt.Sprintf("host %s was %v, is %v", h, before[h], now))
			}
		}
		if len(changed) > 0 {
			return fmt.Errorf("the hosts changed: %s", strings.Join(changed, "; "))
		}
		return nil
	}
	steps := []resource.TestStep{{
		Config: good,
		Check: resource.ComposeTestCheckFunc(
			onHosts(t, name, map[string][]string{testHostDefault: {name + "-1"}, testHostH2: {name + "-2"}}),
			func(*terraform.State) error {
				for _, h := range hosts {
					before[h] = snapshotOn(t, h)
				}
				return nil
			},
		),
	}}
	for _, c := range cases {
		steps = append(steps, resource.TestStep{
			PreConfig: func() {
				if err := unchanged(); err != nil {
					t.Fatalf("before %q: %v", c.name, err)
				}
			},
			Config:      c.config,
			ExpectError: regexpMust(c.err),
		})
	}
	steps = append(steps, resource.TestStep{
		// After the last refused case: the hosts as they were, and nothing to do.
		PreConfig: func() {
			if err := unchanged(); err != nil {
				t.Fatalf("after the last case: %v", err)
			}
		},
		Config:   good,
		PlanOnly: true,
	})
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: resource.ComposeTestCheckFunc(
			checkNothingLeftOnHosts(t, name),
			checkNothingLeftOnHosts(t, name+"new"),
		),
		Steps: steps,
	})
}
