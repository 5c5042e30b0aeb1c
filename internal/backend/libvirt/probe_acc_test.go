package libvirt

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// qemuLogDir is where the system daemon keeps its domains' logs, and where the tiny guest's
// console log goes (the daemon's QEMU may write there).
const qemuLogDir = "/var/log/libvirt/qemu"

// tinyGuestFile copies an image tools/tiny-guest.sh builds (args: none for the tiny guest,
// --broken for the one whose service never starts) into the pool as a volume of that name, and
// deletes it when the test ends.
func tinyGuestFile(t *testing.T, b *Backend, pool, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command("bash", append([]string{"../../../tools/tiny-guest.sh"}, args...)...).Output()
	if err != nil {
		t.Fatalf("tools/tiny-guest.sh %v: %v", args, err)
	}
	ctx := context.Background()
	p, err := b.LookupPool(ctx, pool)
	if err != nil || p.Path == "" {
		t.Fatalf("pool %s: %v (a directory pool is needed)", pool, err)
	}
	data, err := os.ReadFile(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(p.Path, name)
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.DeleteVolume(ctx, pool, name); _ = os.Remove(dst) })
	if _, err := b.LookupVolume(ctx, pool, name); err != nil { // refreshes the pool
		t.Fatal(err)
	}
	return dst
}

// startAcc defines and starts a domain of one vCPU and 128 MiB booting from disks (none: it
// sits in the BIOS with no guest agent), with those network cards, and powers it off and
// undefines it when the test ends.
func startAcc(t *testing.T, b *Backend, name string, disks []backend.Disk, nics []engine.NIC, consoleLog string) {
	t.Helper()
	ctx := context.Background()
	if err := b.DefineDomain(ctx, backend.DomainSpec{Name: name, Shape: engine.Shape{DomainType: "qemu", VCPU: 1, MemoryMiB: 128}, Disks: disks, NICs: nics, ConsoleLog: consoleLog}); err != nil {
		t.Fatalf("define %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := b.StopDomain(ctx, name); err != nil {
			t.Errorf("stop %s: %v", name, err)
		}
		if err := b.UndefineDomain(ctx, name); err != nil {
			t.Errorf("undefine %s: %v", name, err)
		}
		_ = os.Remove(filepath.Join(qemuLogDir, name+".log")) // the daemon's log of its QEMU
	})
	if err := b.StartDomain(ctx, name); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
}

// bootTinyGuest starts a tfacc- domain with those network cards on a copy-on-write overlay (pool
// virt) of the tiny guest image (args as tinyGuestFile's) and waits until its guest agent answers.
func bootTinyGuest(t *testing.T, b *Backend, name string, nics []engine.NIC, args ...string) {
	t.Helper()
	ctx := context.Background()
	const pool = "virt"
	base := tinyGuestFile(t, b, pool, name+"-image.qcow2", args...)
	overlay := name + "-boot.qcow2"
	if _, err := b.EnsureVolume(ctx, backend.VolumeSpec{Pool: pool, Name: overlay, SizeMiB: 64, BackingPath: base, Fresh: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.DeleteVolume(ctx, pool, overlay); err != nil {
			t.Errorf("delete %s: %v", overlay, err)
		}
	})
	consoleLog := filepath.Join(qemuLogDir, name+".console.log")
	t.Cleanup(func() { _ = os.Remove(consoleLog) })
	startAcc(t, b, name, []backend.Disk{{DeviceName: "boot", Pool: pool, Volume: overlay}}, nics, consoleLog)
	waitProbe(t, b, name, backend.ProbeSpec{Kind: string(engine.ProbeGuestAgent), Timeout: 2 * time.Second}, consoleLog)
}

// waitProbe waits for the probe to pass, within a limit: the tiny guest starts its agent some
// seconds after it boots (10 to 20 under TCG here), so the test waits for the agent itself.
func waitProbe(t *testing.T, b *Backend, name string, spec backend.ProbeSpec, consoleLog string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		res, err := b.Probe(context.Background(), name, spec)
		if err != nil {
			t.Fatalf("probe %s: %v", name, err)
		}
		if res.OK {
			return
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(consoleLog)
			t.Fatalf("%s: %s probe still fails after 3 minutes (%s); console:\n%s", name, spec.Kind, res.Reason, log)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func probeOK(t *testing.T, b *Backend, name string, spec backend.ProbeSpec) {
	t.Helper()
	res, err := b.Probe(context.Background(), name, spec)
	if err != nil || !res.OK {
		t.Fatalf("%s %v on %s: %+v, %v; want OK", spec.Kind, spec.Command, name, res, err)
	}
}

// probeFails runs the probe, which must fail with a result (not an error) whose reason contains
// want, and returns the reason.
func probeFails(t *testing.T, b *Backend, name string, spec backend.ProbeSpec, want string) string {
	t.Helper()
	res, err := b.Probe(context.Background(), name, spec)
	if err != nil {
		t.Fatalf("%s %v on %s: error %v; want a failed result", spec.Kind, spec.Command, name, err)
	}
	if res.OK || !strings.Contains(res.Reason, want) {
		t.Fatalf("%s %v on %s: %+v; want a failure whose reason contains %q", spec.Kind, spec.Command, name, res, want)
	}
	return res.Reason
}

func execSpec(timeout time.Duration, command ...string) backend.ProbeSpec {
	return backend.ProbeSpec{Kind: string(engine.ProbeExec), Command: command, Timeout: timeout}
}

// TestAccProbe_tinyGuest runs the probes against the tiny guest through the system daemon: the
// guest agent answers; `/bin/tiny-service status` passes while the service runs, and after
// `/bin/tiny-service stop` (run through guest-exec too) it fails, quoting its output; a command
// that does not exist, and one that outlives the timeout, fail with a reason. A domain with no
// agent, and one that is not running, fail the guest_agent probe with libvirt's message; only a
// domain that is not there is an error.
func TestAccProbe_tinyGuest(t *testing.T) {
	requireAcc(t)
	// Parallel: each probe test copies its image file into the pool's directory and finds it by a
	// pool refresh, which libvirt refuses while another test's volume job runs; the lookup asks
	// again under its bound (volumeInPool, RefreshPool) rather than saying "not found", which once
	// failed TestAccProbe_network in a clean clone's run. Most of each test is the guest booting.
	t.Parallel()
	b := connectAcc(t, "qemu:///system")
	sfx := testSuffix()
	guest := "tfacc-probe-" + sfx
	bare := "tfacc-probe-noagent-" + sfx
	agent := backend.ProbeSpec{Kind: string(engine.ProbeGuestAgent), Timeout: 2 * time.Second}

	startAcc(t, b, bare, nil, nil, "")
	reason := probeFails(t, b, bare, agent, "agent")
	t.Logf("guest_agent, no agent: %s", reason)

	bootTinyGuest(t, b, guest, nil)
	probeOK(t, b, guest, agent)
	status := execSpec(10*time.Second, "/bin/tiny-service", "status")
	probeOK(t, b, guest, status)

	probeOK(t, b, guest, execSpec(10*time.Second, "/bin/tiny-service", "stop"))
	reason = probeFails(t, b, guest, status, "exit status 1: tiny-service: stopped (by tiny-service stop)")
	t.Logf("exec, service stopped: %s", reason)
	probeOK(t, b, guest, execSpec(10*time.Second, "/bin/tiny-service", "start"))
	probeOK(t, b, guest, status)

	reason = probeFails(t, b, guest, execSpec(10*time.Second, "/bin/no-such-command"), "no-such-command")
	t.Logf("exec, no such command: %s", reason)
	reason = probeFails(t, b, guest, execSpec(time.Second, "/bin/sleep", "30"), "/bin/sleep 30 did not exit within 1s")
	t.Logf("exec, too slow: %s", reason)
	reason = probeFails(t, b, guest, backend.ProbeSpec{Kind: string(engine.ProbeTCP), Port: 80, Timeout: time.Second}, "no IPv4 address")
	t.Logf("tcp, no network: %s", reason)

	if err := b.StopDomain(context.Background(), bare); err != nil {
		t.Fatal(err)
	}
	reason = probeFails(t, b, bare, agent, "not running")
	t.Logf("guest_agent, domain stopped: %s", reason)

	if _, err := b.Probe(context.Background(), "tfacc-probe-missing-"+sfx, agent); !errors.Is(err, backend.ErrNotFound) {
		t.Fatalf("probe of a domain that is not there: %v, want an error wrapping backend.ErrNotFound", err)
	}
}

// TestAccProbe_brokenTinyGuest boots tiny-guest-broken.qcow2: its agent answers, its service
// never started, and the exec probe says so.
func TestAccProbe_brokenTinyGuest(t *testing.T) {
	requireAcc(t)
	// Parallel: each probe test copies its image file into the pool's directory and finds it by a
	// pool refresh, which libvirt refuses while another test's volume job runs; the lookup asks
	// again under its bound (volumeInPool, RefreshPool) rather than saying "not found", which once
	// failed TestAccProbe_network in a clean clone's run. Most of each test is the guest booting.
	t.Parallel()
	b := connectAcc(t, "qemu:///system")
	guest := "tfacc-probe-broken-" + testSuffix()
	bootTinyGuest(t, b, guest, nil, "--broken")
	reason := probeFails(t, b, guest, execSpec(10*time.Second, "/bin/tiny-service", "status"), "exit status 1: tiny-service: not started")
	t.Logf("exec, broken image: %s", reason)
}

// TestAccProbe_network puts the tiny guest on the libvirt network "default" (NAT, DHCP; the
// harness starts it) and probes it from this machine at the address it leased: port 80 opens
// and /healthz answers 200 while the service runs; a closed port fails with the dial error, a
// page that is not there with its status, and after `tiny-service stop` /healthz fails with 503.
func TestAccProbe_network(t *testing.T) {
	requireAcc(t)
	// Parallel: each probe test copies its image file into the pool's directory and finds it by a
	// pool refresh, which libvirt refuses while another test's volume job runs; the lookup asks
	// again under its bound (volumeInPool, RefreshPool) rather than saying "not found", which once
	// failed TestAccProbe_network in a clean clone's run. Most of each test is the guest booting.
	t.Parallel()
	b := connectAcc(t, "qemu:///system")
	const network = "default"
	if active, err := b.LookupNetwork(context.Background(), network); err != nil || !active {
		// A failure, not a skip: CI must not go green without the probes from this machine.
		t.Fatalf("network %s is not active (%v): tools/libvirt-up.sh starts it", network, err)
	}
	guest := "tfacc-probe-net-" + testSuffix()
	bootTinyGuest(t, b, guest, []engine.NIC{{Network: network}})
	tcp := func(port int) backend.ProbeSpec {
		return backend.ProbeSpec{Kind: string(engine.ProbeTCP), Port: port, Timeout: 2 * time.Second}
	}
	httpSpec := func(path string) backend.ProbeSpec {
		return backend.ProbeSpec{Kind: string(engine.ProbeHTTP), Port: 80, Path: path, ExpectStatus: 200, Timeout: 2 * time.Second}
	}
	// The guest asks for its address in the background: wait for the port to open.
	waitProbe(t, b, guest, tcp(80), filepath.Join(qemuLogDir, guest+".console.log"))
	probeOK(t, b, guest, httpSpec("/healthz"))

	reason := probeFails(t, b, guest, tcp(81), "connection refused")
	t.Logf("tcp, closed port: %s", reason)
	reason = probeFails(t, b, guest, httpSpec("/nope"), "status 404 Not Found, want 200")
	t.Logf("http, no such page: %s", reason)

	probeOK(t, b, guest, execSpec(10*time.Second, "/bin/tiny-service", "stop"))
	reason = probeFails(t, b, guest, httpSpec("/healthz"), "status 503 Service Unavailable, want 200: tiny-service: stopped (by tiny-service stop)")
	t.Logf("http, service stopped: %s", reason)
	probeOK(t, b, guest, tcp(80))
}
