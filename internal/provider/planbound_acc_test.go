// This file holds the acceptance tests of issue 43's provider side: a plan with a host that
// accepts and never answers, and the plugin ending when the Terraform that started it is killed.

package provider

import (
	"fmt"
	"io"
	"net"
	"path/filepath"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

// stalledSocket is a unix socket that accepts every connection and reads what it is sent, and
// never answers: a libvirt daemon (or a proxy in front of one) that stopped forwarding. It is
// closed, with its connections, when the test ends.
func stalledSocket(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "stalled.sock")
	l, err := net.Listen("unix", p)
	if err != nil {
		t.Fatalf("listen on %s: %v", p, err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return // closed
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() { _, _ = io.Copy(io.Discard, c) }()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return p
}

// stalledH3Provider is the multi-host tests' provider block with h3 reached through a socket that
// never answers (stalledSocket), and a host_timeout of 2s.
func stalledH3Provider(socket string) string {
	return fmt.Sprintf(`
provider "virt" {
  host_timeout = "2s"
  host {
    name = "h2"
    uri  = %q
  }
  host {
    name = "h3"
    uri  = %q
  }
}
`, testHostH2URI, "qemu+unix:///session?socket="+socket)
}

// TestAccStatefulGroup_planWithStalledHost is issue 43's third report: with h3 behind a socket
// that accepts and never answers, a plan, a refresh and a data source read of a group over the
// three hosts return (before, they waited for ever: the stalled socket never answers, so a step
// that returns is one that gave up on h3), h3's member is UNKNOWN, and the other hosts' members
// are read and planned as usual: a scale-out places its new member on a host that answers.
func TestAccStatefulGroup_planWithStalledHost(t *testing.T) {
	name := testPrefix + "stalled"
	socket := stalledSocket(t)
	h3Unknown := map[string]string{"default": "STOPPED", "h2": "STOPPED", "h3": "UNKNOWN"}
	stalled := func(size int) string {
		return stalledH3Provider(socket) + dataPolicyAndInstances + groupConfig(name, size, diskBlocks(8, "data"), `
  running = false
  distribution_policy {
    hosts = ["default", "h2", "h3"]
  }
`)
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeftOnHosts(t, name),
		Steps: []resource.TestStep{
			{
				Config: spreadConfig(name, 3),
				Check:  onHosts(t, name, map[string][]string{"default": {name + "-1"}, "h2": {name + "-2"}, "h3": {name + "-3"}}),
			},
			{
				// h3 stalls: the refresh reads it UNKNOWN, and the plan changes nothing.
				Config: stalled(3),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionNoop),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(groupAddr, tfjsonpath.New("instances"), hostsOf(name, h3Unknown, "default", "h2", "h3")),
				},
			},
			{
				Config:   stalled(3),
				PlanOnly: true,
			},
			{
				// The other hosts plan as usual: a scale-out to 4 places member 4 on default.
				Config: stalled(4),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(groupAddr, tfjsonpath.New("instances"), hostsOf(name, h3Unknown, "default", "h2", "h3", "default")),
				},
				Check: onHosts(t, name, map[string][]string{"default": {name + "-1", name + "-4"}, "h2": {name + "-2"}}),
			},
			{
				// h3 answers again: its member is there as it was.
				Config: spreadConfig(name, 4),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(groupAddr, tfjsonpath.New("instances"), hostsOf(name, map[string]string{"default": "STOPPED", "h2": "STOPPED", "h3": "STOPPED"}, "default", "h2", "h3", "default")),
				},
				Check: onHosts(t, name, map[string][]string{"default": {name + "-1", name + "-4"}, "h2": {name + "-2"}, "h3": {name + "-3"}}),
			},
		},
	})
}

