package provider

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/virtfleet/terraform-provider-virt/internal/faultproxy"
)

// TestAccStatefulGroup_applyAfterPlanWithStalledHost is the wire chaos's bug of trials 31 and 51
// (issue 43): a plan made while h2's connection stalls, applied once h2 answers. One stopped
// member on the default host of a group over the default host and h2 (h2 is the group's already,
// so that the plan's checks of the configuration skip it when it does not answer); the change
// drains the default host. Planned (`terraform plan -out`) with every connection to h2 stalled by a fault
// proxy, the member has nowhere to go (h2 did not answer: no move); the saved plan is applied with
// the proxy forwarding again. The apply's final plan, in a new provider process that reaches h2,
// planned the move: Terraform stopped with "Provider produced inconsistent final plan". Now the
// final plan sees the hosts as the plan's refresh saw them: the apply succeeds and moves nothing,
// and the next apply, its refresh reaching h2, moves the member there.
//
// It drives the terraform CLI (the provider built from this tree), since the test framework
// cannot apply a saved plan.
func TestAccStatefulGroup_applyAfterPlanWithStalledHost(t *testing.T) {
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	testAccPreCheck(t)
	name := testPrefix + "hplan-stall"
	member := name + "-1"
	// The proxy's socket path must fit a unix socket's 107 bytes: not under t.TempDir's long path.
	sockDir, err := os.MkdirTemp("", "hplan") //nolint:usetesting // t.TempDir's path is too long for a socket
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(sockDir) })
	proxy, err := faultproxy.New("unix:"+filepath.Join(sockDir, "h2.sock"), "unix:"+strings.TrimPrefix(testHostH2URI, "qemu+unix:///session?socket="))
	if err != nil {
		t.Fatalf("fault proxy in front of h2: %v", err)
	}
	t.Cleanup(func() { _ = proxy.Close() })

	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	cli := devOverrides(t, buildProvider(t, root))
	tf := terraformBinary(t)
	work := t.TempDir()
	terraform := func(args ...string) (string, error) {
		cmd := exec.Command(tf, append(args, "-no-color")...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+cli, "TF_IN_AUTOMATION=1", "TF_INPUT=0", "CHECKPOINT_DISABLE=1")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	configure := func(drain string) {
		t.Helper()
		cfg := fmt.Sprintf(`terraform {
  required_providers {
    virt = { source = "virtfleet/virt" }
  }
}
provider "virt" {
  host_timeout = "3s"
  host {
    name = "h2"
    uri  = %q
  }
}
`, "qemu+unix:///session?socket="+proxy.Addr()) + groupConfig(name, 1, "", fmt.Sprintf(`
  running = false
  distribution_policy {
    hosts = ["default", "h2"]
%s
  }
`, drain))
		if err := os.WriteFile(filepath.Join(work, "main.tf"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	on := func(host string) bool {
		t.Helper()
		doms, err := hostConn(t, host).ListDomains(context.Background(), name+"-")
		if err != nil {
			t.Fatalf("list domains of host %s: %v", host, err)
		}
		return len(doms) == 1 && doms[0].Name == member
	}
	t.Cleanup(func() {
		proxy.Clear()
		if out, err := terraform("destroy", "-auto-approve"); err != nil {
			t.Errorf("cleanup: destroy: %v\n%s", err, out)
		}
		if err := checkNothingLeftOn(t, name, testHostDefault, testHostH2)(nil); err != nil {
			t.Error(err)
		}
	})

	// One member: placed on the default host, the first of two with none.
	configure("")
	if out, err := terraform("apply", "-auto-approve"); err != nil {
		t.Fatalf("create: %v\n%s", err, out)
	}
	if !on(testHostDefault) {
		t.Fatalf("member %s is not on the default host after the create", member)
	}

	// The plan, with every connection to h2 stalled from its first byte.
	configure(`    drain = ["default"]`)
	proxy.SetFault(faultproxy.Fault{Kind: faultproxy.Stall, Conn: faultproxy.EveryConn})
	out, err := terraform("plan", "-out=tfplan")
	if err != nil {
		t.Fatalf("plan with h2 stalled: %v\n%s", err, out)
	}
	if !strings.Contains(out, "Hosts of group "+name+" did not answer: h2") {
		t.Fatalf("the plan does not say that h2 did not answer; output:\n%s", out)
	}
	if strings.Contains(out, "MOVE: default -> h2") {
		t.Fatalf("the plan moves the member to h2, which did not answer; output:\n%s", out)
	}

	// The apply of that plan, h2 answering.
	proxy.Clear()
	if out, err := terraform("apply", "tfplan"); err != nil {
		t.Fatalf("apply of the plan made with h2 stalled, h2 answering: %v\n%s", err, out)
	}
	if !on(testHostDefault) {
		t.Fatalf("member %s left the default host in an apply whose plan did not move it", member)
	}

	// The next apply reads h2 and moves the member.
	if out, err := terraform("apply", "-auto-approve"); err != nil {
		t.Fatalf("apply with h2 answering: %v\n%s", err, out)
	}
	if !on(testHostH2) || on(testHostDefault) {
		t.Fatalf("member %s is not on h2 alone after the apply that drains the default host", member)
	}
	if out, err := terraform("plan", "-detailed-exitcode"); err != nil {
		t.Fatalf("the plan after the move is not empty: %v\n%s", err, out)
	}
}
