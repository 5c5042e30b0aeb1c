package provider

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/libvirt"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
)

// The hosts of the multi-host acceptance tests, all on this machine (tools/libvirt-up.sh makes
// them; see CONTRIBUTING.md, "The local libvirt harness"): "default" is the system daemon, the
// provider's own uri; "h2" and "h3" are session daemons run by the users virt-session and
// virt-session3, which root reaches by their sockets. Each has a dir pool named testHostPool.
const (
	testHostDefault = "default"
	testHostH2      = "h2"
	testHostH3      = "h3"

	testHostH2URI = "qemu+unix:///session?socket=/run/virt-session/libvirt/libvirt-sock"
	testHostH3URI = "qemu+unix:///session?socket=/run/virt-session3/libvirt/libvirt-sock"

	// testHostPool is the storage pool of h2 and h3 (the default host's is testPool()).
	testHostPool = "virt"

	// harnessScript is tools/transports-up.sh, relative to this package's directory, where go
	// test runs its tests.
	harnessScript = "../../tools/transports-up.sh"
)

// testHostNames are the three hosts, the default first.
func testHostNames() []string { return []string{testHostDefault, testHostH2, testHostH3} }

// testSessionHosts are the hosts a test may stop and start, and that sweepHosts sweeps.
func testSessionHosts() []string { return []string{testHostH2, testHostH3} }

// testHostURI is the URI of one of the three hosts; the default host's is the provider's default
// URI (LIBVIRT_DEFAULT_URI or qemu:///system).
func testHostURI(name string) string {
	switch name {
	case testHostDefault:
		return connectionURI(providerdata.NullString())
	case testHostH2:
		return testHostH2URI
	case testHostH3:
		return testHostH3URI
	}
	panic(fmt.Sprintf("no test host named %q (the harness has %s)", name, strings.Join(testHostNames(), ", ")))
}

// harness runs `bash tools/transports-up.sh ARGS...` and returns its output. The script's
// host-stop and host-start do not take /tmp/virt-acc.lock: the acceptance run holds it.
func harness(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{harnessScript}, args...)...)
	// A daemon the script starts could keep the output pipe open; do not wait for it forever.
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("bash %s %s: %w", harnessScript, strings.Join(args, " "), err)
	}
	return string(out), nil
}

// hostsMu is held by the acceptance test of h2 and h3 that runs (hostsTest).
var hostsMu sync.Mutex

// hostsTest makes t one of the acceptance tests of the harness's hosts h2 and h3 (those that
// stop them, move members onto them or spread groups over them): parallel with the tests that use
// neither, and one at a time among themselves, in the order Go starts them. They were the serial
// tests' longest part (a test of h2 and h3 never needs the default host to itself); the default
// host's whole-listing and daemon tests, which do, stay serial, and Go runs them all before any
// parallel one. A test waiting here for its turn holds one of go test's -parallel slots meanwhile, so
// they never cost more than the serial run they replace. It takes its CPU slot (accSlots) once
// it has its turn, so that waiting for its turn it holds no slot another test could use, and
// before the tests queued: the next of the chain would otherwise queue behind every test not yet
// started, and the chain, one at a time, would end the run.
func hostsTest(t *testing.T) {
	t.Helper()
	t.Parallel()
	hostsMu.Lock()
	t.Cleanup(hostsMu.Unlock)
	takeSlot(t, true)
}

// stopHost stops the session daemon of host name (h2 or h3) and returns once its socket no longer
// answers. The test provider's connection to it is dropped with it (forgetHostConnection): the
// next terraform command finds the host down as a new plugin process does, with one attempt to
// connect.
func stopHost(t *testing.T, name string) {
	t.Helper()
	if out, err := harness("host-stop", name); err != nil {
		t.Fatalf("stop host %s: %v\n%s", name, err, out)
	}
	forgetHostConnection(testHostURI(name))
}

// forgetHostConnection closes and drops the test provider's connection to uri. The acceptance
// tests share one provider instance (testVirtProvider) over all their terraform commands, so
// without this every command after the host stopped would find the connection an earlier
// command opened and lost, and each reading of the host would dial it again for the backend's
// reconnect patience (10 s) before the host is UNKNOWN: about 10 s per plan, refresh and apply,
// 2.5 minutes of TestAccStatefulGroup_hostDownNoPhantom. In use, each terraform command runs a
// plugin process of its own, which connects to a host that is down once and finds it down at
// once; the reconnect itself (a daemon lost under a running command) is the backend's tests'
// (internal/backend/libvirt) and the libvirtd rounds of make chaos.
func forgetHostConnection(uri string) {
	p := testVirtProvider
	p.mu.Lock()
	c := p.conns[uri]
	delete(p.conns, uri)
	p.mu.Unlock()
	if c != nil {
		_ = c.Close()
	}
}

// startHost starts the session daemon of host name (h2 or h3) again and returns once it answers
// with its pool running.
func startHost(t *testing.T, name string) {
	t.Helper()
	if out, err := harness("host-start", name); err != nil {
		t.Fatalf("start host %s: %v\n%s", name, err, out)
	}
}

// sweepHosts removes what an earlier, interrupted run may have left on h2 and h3: domains,
// volumes of the pool and group records named testPrefix..., and secrets whose usage name starts
// with testPrefix. A host that an interrupted test left stopped is started again first.
func sweepHosts() error {
	for _, name := range testSessionHosts() {
		if err := sweepHost(name); err != nil {
			return fmt.Errorf("host %s (%s): %w", name, testHostURI(name), err)
		}
	}
	return nil
}

func sweepHost(name string) error {
	uri := testHostURI(name)
	b, err := libvirt.Connect(uri)
	if err != nil {
		if out, herr := harness("host-start", name); herr != nil {
			return fmt.Errorf("%v; starting it failed: %v\n%s", err, herr, out)
		}
		if b, err = libvirt.Connect(uri); err != nil {
			return err
		}
	}
	defer b.Close()
	swept, err := sweepBackend(b, testHostPool)
	if err != nil {
		return err
	}
	secrets, err := sweepSecrets(uri)
	if err != nil {
		return err
	}
	if swept != "" || secrets > 0 {
		if swept == "" {
			swept = "no domains, volumes or group records"
		}
		fmt.Fprintf(os.Stderr, "swept %s and %d secrets left on host %s by an earlier run\n", swept, secrets, name)
	}
	return nil
}

// sweepSecrets undefines the secrets on uri whose usage name starts with testPrefix (the backend
// lists only group records), with virsh, and says how many.
func sweepSecrets(uri string) (int, error) {
	out, err := exec.Command("virsh", "-c", uri, "secret-list").CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("virsh secret-list: %v: %s", err, out)
	}
	n := 0
	// " UUID                                   Usage\n-----...\n <uuid>   ceph tfacc-probe"
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || !strings.HasPrefix(f[2], testPrefix) {
			continue
		}
		if out, err := exec.Command("virsh", "-c", uri, "secret-undefine", f[0]).CombinedOutput(); err != nil {
			return n, fmt.Errorf("virsh secret-undefine %s (%s): %v: %s", f[0], f[2], err, out)
		}
		n++
	}
	return n, nil
}
