package provider

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/libvirt"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/protocol"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
)

// Acceptance tests name every object they create with this prefix, and sweep leftovers with it.
const testPrefix = "tfacc-"

// testVirtProvider is the one provider instance every acceptance test of the package runs: its
// connections (virtProvider.conns) outlive each terraform command, where a real plugin process
// ends with its command (see forgetHostConnection).
var testVirtProvider = New("test")().(*virtProvider)

var testAccProviders = map[string]func() (tfprotov6.ProviderServer, error){
	"virt": protocol.NewProtocol6(testVirtProvider),
}

// testPool is the storage pool the acceptance tests use; tools/libvirt-up.sh creates it.
func testPool() string {
	if p := os.Getenv("VIRT_TEST_POOL"); p != "" {
		return p
	}
	return "virt"
}

var (
	testConnOnce sync.Once
	testConn     *libvirt.Backend
	testConnErr  error
)

// testLibvirt is a connection of the tests' own, to look at the host behind the provider's back.
func testLibvirt(t *testing.T) *libvirt.Backend {
	t.Helper()
	if os.Getenv("TF_ACC") == "" {
		// A cleanup registered before an acceptance test skips still runs in a unit run; it has
		// nothing of ours to clean up there, and no daemon need be running (CI runs the unit tests
		// before the harness starts one).
		t.Skip("no libvirt connection outside an acceptance run (TF_ACC unset)")
	}
	testConnOnce.Do(func() { testConn, testConnErr = libvirt.Connect(connectionURI(providerdata.NullString())) })
	if testConnErr != nil {
		// Under TF_ACC an unreachable libvirt is a failure, never a skip: CI must not go green
		// on tests that did not run.
		t.Fatalf("acceptance tests need a libvirt daemon: %v", testConnErr)
	}
	return testConn
}

func testAccPreCheck(t *testing.T) {
	t.Helper()
	b := testLibvirt(t)
	if _, err := b.ListVolumes(context.Background(), testPool(), ""); err != nil {
		t.Fatalf("acceptance tests need the storage pool %q (run tools/libvirt-up.sh): %v", testPool(), err)
	}
}

// TestMain sweeps what an earlier, interrupted run may have left behind before any test runs,
// unless another acceptance run is active on this machine (sweepAlone): then the tfacc- objects
// are that run's, not leftovers.
func TestMain(m *testing.M) {
	if os.Getenv("TF_ACC") != "" {
		swept, err := sweepAlone(func() error {
			if err := sweep(); err != nil {
				return fmt.Errorf("sweep of tfacc- leftovers failed: %w", err)
			}
			if err := sweepHosts(); err != nil {
				return fmt.Errorf("sweep of tfacc- leftovers on the other hosts failed: %w", err)
			}
			return nil
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if !swept {
			fmt.Fprintln(os.Stderr, "another acceptance run is active on this machine: no sweep of tfacc- leftovers")
		}
	}
	code := m.Run()
	removeProviderBuild()
	os.Exit(code)
}

func sweep() error {
	b, err := libvirt.Connect(connectionURI(providerdata.NullString()))
	if err != nil {
		return err
	}
	defer b.Close()
	n, err := sweepBackend(b, testPool())
	if err != nil {
		return err
	}
	if n != "" {
		fmt.Fprintf(os.Stderr, "swept %s left by an earlier run\n", n)
	}
	return nil
}

// sweepBackend removes the domains, the volumes of pool and the group records named testPrefix...
// from one host, and says how many of each it removed ("" when none).
func sweepBackend(b *libvirt.Backend, pool string) (string, error) {
	ctx := context.Background()
	doms, err := b.ListDomains(ctx, testPrefix)
	if err != nil {
		return "", err
	}
	for _, d := range doms {
		if err := b.UndefineDomain(ctx, d.Name); err != nil {
			return "", err
		}
	}
	// An EFI member's NVRAM is a file libvirt wrote at its start, which the pool lists only once
	// it has read its directory again.
	if err := b.RefreshPool(ctx, pool); err != nil {
		return "", err
	}
	vols, err := b.ListVolumes(ctx, pool, testPrefix)
	if err != nil {
		return "", err
	}
	for _, v := range vols {
		if err := b.DeleteVolume(ctx, pool, v.Name); err != nil {
			return "", err
		}
	}
	groups, err := b.GroupRecordNames(testPrefix)
	if err != nil {
		return "", err
	}
	for _, g := range groups {
		if err := b.DeleteGroupRecord(ctx, pool, g); err != nil {
			return "", err
		}
	}
	pools, err := sweepPools(b)
	if err != nil {
		return "", err
	}
	if len(doms)+len(vols)+len(groups)+pools == 0 {
		return "", nil
	}
	return fmt.Sprintf("%d domains, %d volumes, %d group records and %d pools", len(doms), len(vols), len(groups), pools), nil
}

// sweepPools stops and undefines the storage pools named testPrefix..., after deleting their
// volumes named so (a group's on a test's pool), and says how many pools it removed. The
// pools' directories and other files are left, as the pool resource leaves them: each test
// removes its own directory.
func sweepPools(b *libvirt.Backend) (int, error) {
	ctx := context.Background()
	pools, err := b.ListPools(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range pools {
		if !strings.HasPrefix(p.Name, testPrefix) {
			continue
		}
		if p.Active {
			vols, err := b.ListVolumes(ctx, p.Name, testPrefix)
			if err != nil {
				return n, err
			}
			for _, v := range vols {
				if err := b.DeleteVolume(ctx, p.Name, v.Name); err != nil {
					return n, err
				}
			}
		}
		if err := b.DeletePool(ctx, p.UUID); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// leftovers lists the domains, volumes and group records whose names start with prefix.
func leftovers(t *testing.T, prefix string) []string {
	t.Helper()
	b := testLibvirt(t)
	ctx := context.Background()
	var out []string
	doms, err := b.ListDomains(ctx, prefix)
	if err != nil {
		t.Fatalf("list domains: %v", err)
	}
	for _, d := range doms {
		out = append(out, "domain "+d.Name)
	}
	vols, err := b.ListVolumes(ctx, testPool(), prefix)
	if err != nil {
		t.Fatalf("list volumes: %v", err)
	}
	for _, v := range vols {
		out = append(out, "volume "+v.Name)
	}
	groups, err := b.GroupRecordNames(prefix)
	if err != nil {
		t.Fatalf("list group records: %v", err)
	}
	for _, g := range groups {
		out = append(out, "group record "+g)
	}
	return out
}

// checkNothingLeft is a CheckDestroy that fails when any domain, volume or the record of the group
// remains.
func checkNothingLeft(t *testing.T, group string) func(*terraform.State) error {
	return func(*terraform.State) error {
		left := leftovers(t, group+"-")
		if recs, _ := testLibvirt(t).GroupRecordNames(group); slices.Contains(recs, group) {
			left = append(left, "group record "+group)
		}
		if len(left) > 0 {
			return fmt.Errorf("left behind after destroy: %s", strings.Join(left, ", "))
		}
		return nil
	}
}

// TestAccProvider_unreachableLibvirt checks that a daemon that does not answer is reported with
// the URI, the socket tried and how to start it, before anything is planned.
func TestAccProvider_unreachableLibvirt(t *testing.T) {
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{{
			Config: `
provider "virt" {
  uri = "qemu:///system?socket=/nonexistent/tfacc-libvirt-sock"
}
` + groupConfig(testPrefix+"unreachable", 1, "", ""),
			ExpectError: regexp.MustCompile(`(?s)qemu:///system\?socket=/nonexistent/tfacc-libvirt-sock.*unix socket\s+/nonexistent/tfacc-libvirt-sock.*systemctl\s+start\s+libvirtd`),
		}},
	})
}

// checkKeptAfterDestroy is a CheckDestroy for a group whose disks a NEVER rule preserved: exactly
// the kept volumes remain (no domain, no other volume, no group record), with the bytes sums
// remembers for them; then it deletes them, so that the test leaves nothing behind.
func checkKeptAfterDestroy(t *testing.T, group string, sums checksums, kept ...string) func(*terraform.State) error {
	return func(s *terraform.State) error {
		left := leftovers(t, group+"-")
		if recs, _ := testLibvirt(t).GroupRecordNames(group); slices.Contains(recs, group) {
			left = append(left, "group record "+group)
		}
		want := make([]string, len(kept))
		for i, v := range kept {
			want[i] = "volume " + v
		}
		err := sameNames("left after destroy", left, want)
		for _, v := range kept {
			if _, ok := sums[v]; ok && err == nil {
				err = sums.same(t, v)(s)
			}
		}
		for _, v := range kept {
			if derr := testLibvirt(t).DeleteVolume(context.Background(), testPool(), v); derr != nil && err == nil {
				err = derr
			}
		}
		// The kept record of the volumes the group made goes with them.
		if recs, _ := testLibvirt(t).GroupRecordNames(group); slices.Contains(recs, engine.KeptRecordName(group)) {
			if derr := testLibvirt(t).DeleteGroupRecord(context.Background(), testPool(), engine.KeptRecordName(group)); derr != nil && err == nil {
				err = derr
			}
		}
		return err
	}
}
