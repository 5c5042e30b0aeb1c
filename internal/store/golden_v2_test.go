package store

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// v2Records are the values of version 2's generated golden records: groups with a health check
// of each probe kind and the update policy's new fields, and the resource configuration that
// import rebuilds the group from.
func v2Records(t *testing.T) map[string]engine.GroupRecord {
	t.Helper()
	spec := func(s ResourceSpec) string {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	str := func(s string) *string { return &s }
	base := func(name string, hc engine.HealthCheck, p engine.UpdatePolicy, resource ResourceSpec) engine.GroupRecord {
		return engine.GroupRecord{
			GroupState: engine.GroupState{
				Group: engine.Group{
					Name: name, Base: name, TargetSize: 4, Running: true,
					Template:    engine.Template{Shape: engine.Shape{DomainType: "qemu", VCPU: 1, MemoryMiB: 128}, BootDisk: engine.BootDisk{SourceImage: "/var/lib/virt/tiny-guest.qcow2", SizeMiB: 64}}.Canonical(),
					Policy:      p,
					AutoHealing: &engine.AutoHealing{InitialDelay: "60s", Backoff: "30s", MaxConsecutiveFailures: 3},
					HealthCheck: &hc,
				},
				Pool: "virt", Resource: spec(resource), Placed: true,
				Placement: map[string]string{name + "-1": "default", name + "-2": "default", name + "-3": "default", name + "-4": "default"},
			},
			Owner:  &engine.Owner{ID: "5eed0000c0ffee00", Since: time.Date(2026, 11, 26, 21, 0, 0, 0, time.UTC)},
			Writes: []engine.Write{{Generation: 3, Run: "0123456789abcdef"}},
		}
	}
	template := ResourceTemplate{DomainType: "qemu", VCPU: 1, MemoryMiB: 128, Disks: []Disk{}, NICs: []NIC{}}
	policy := func(minReady, readyTimeout, onFailure string) *ResourceUpdatePolicy {
		return &ResourceUpdatePolicy{Type: "PROACTIVE", MinimalAction: "NONE", MostDisruptive: "REPLACE", MaxUnavailable: "1",
			MinReady: str(minReady), ReadyTimeout: str(readyTimeout), OnFailure: str(onFailure)}
	}
	withHC := func(hc ResourceHealthCheck) ResourceTemplate { t := template; t.HealthCheck = &hc; return t }
	rollback := engine.DefaultUpdatePolicy()
	rollback.MinReady, rollback.ReadyTimeout, rollback.OnFailure = 30*time.Second, 10*time.Minute, engine.OnFailureRollback
	stop := engine.DefaultUpdatePolicy()
	stop.MinReady, stop.ReadyTimeout, stop.OnFailure = 0, 5*time.Minute, engine.OnFailureStop
	return map[string]engine.GroupRecord{
		"group-exec-rollback.json": base("gold-exec",
			engine.HealthCheck{Probe: engine.Probe{Kind: engine.ProbeExec, Command: []string{"/bin/tiny-service", "status"}},
				Interval: 10 * time.Second, Timeout: 5 * time.Second, HealthyThreshold: 1, UnhealthyThreshold: 3},
			rollback,
			ResourceSpec{Base: "gold-exec", Pool: "virt", TargetSize: 4, Running: true, Shutdown: str("60s"),
				Template:     withHC(ResourceHealthCheck{Exec: &ResourceExecProbe{Command: []string{"/bin/tiny-service", "status"}}, Interval: "10s", Timeout: "5s", HealthyThreshold: 1, UnhealthyThreshold: 3}),
				UpdatePolicy: policy("30s", "10m", "ROLLBACK"), AutoHealing: &AutoHealing{InitialDelay: "60s", Backoff: "30s", MaxConsecutiveFailures: 3}}),
		"group-guest-agent-stop.json": base("gold-agent",
			engine.HealthCheck{Probe: engine.Probe{Kind: engine.ProbeGuestAgent}, Interval: 90 * time.Second, Timeout: 2 * time.Second, HealthyThreshold: 2, UnhealthyThreshold: 10},
			stop,
			ResourceSpec{Base: "gold-agent", Pool: "virt", TargetSize: 4, Running: true,
				Template:     withHC(ResourceHealthCheck{GuestAgent: &ResourceGuestAgent{}, Interval: "1m30s", Timeout: "2s", HealthyThreshold: 2, UnhealthyThreshold: 10}),
				UpdatePolicy: policy("0s", "5m", "STOP"), AutoHealing: &AutoHealing{InitialDelay: "60s", Backoff: "30s", MaxConsecutiveFailures: 3}}),
		"group-http-tcp.json": base("gold-http",
			engine.HealthCheck{Probe: engine.Probe{Kind: engine.ProbeHTTP, Port: 8080, Path: "/healthz?x=<&>", ExpectStatus: 204},
				Interval: 10 * time.Second, Timeout: 10 * time.Second, HealthyThreshold: 1, UnhealthyThreshold: 3},
			engine.DefaultUpdatePolicy(),
			ResourceSpec{Base: "gold-http", Pool: "virt", TargetSize: 4, Running: true,
				Template:    withHC(ResourceHealthCheck{HTTP: &ResourceHTTPProbe{Port: 8080, Path: "/healthz?x=<&>", ExpectStatus: 204}, Interval: "10s", Timeout: "10s", HealthyThreshold: 1, UnhealthyThreshold: 3}),
				AutoHealing: &AutoHealing{InitialDelay: "60s", Backoff: "30s", MaxConsecutiveFailures: 3}}),
		"group-tcp.json": base("gold-tcp",
			engine.HealthCheck{Probe: engine.Probe{Kind: engine.ProbeTCP, Port: 5432}, Interval: time.Second, Timeout: time.Second, HealthyThreshold: 10, UnhealthyThreshold: 1},
			engine.DefaultUpdatePolicy(),
			ResourceSpec{Base: "gold-tcp", Pool: "virt", TargetSize: 4, Running: true,
				Template: withHC(ResourceHealthCheck{TCP: &ResourceTCPProbe{Port: 5432}, Interval: "1s", Timeout: "1s", HealthyThreshold: 10, UnhealthyThreshold: 1})}),
	}
}

// TestGolden_v2Generated: version 2's generated golden records are what this build writes for
// their values, and read back as those values. STORE_GOLDEN=write adds a file that is missing
// (never rewrites one: a golden file is what a release wrote).
func TestGolden_v2Generated(t *testing.T) {
	t.Parallel()
	checkGenerated(t, "v2", v2Records(t))
}

// checkGenerated checks the generated golden records of one format version, in
// testdata/<version>/generated.
func checkGenerated(t *testing.T, version string, records map[string]engine.GroupRecord) {
	t.Helper()
	for name, rec := range records {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join("testdata", version, "generated", name)
			enc, err := EncodeGroup(rec)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(path)
			if os.IsNotExist(err) && os.Getenv("STORE_GOLDEN") == "write" {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, append(enc, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(strings.TrimSuffix(string(want), "\n"), string(enc)); diff != "" {
				t.Fatalf("this build writes the record differently (-golden +written):\n%s", diff)
			}
			got, err := DecodeGroup(want)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(rec, got, equateEmpty); diff != "" {
				t.Fatalf("read back differently (-values +read):\n%s", diff)
			}
		})
	}
}

// TestGolden_v1RecordsReadWithoutV2Fields: a version 1 record has no health check and the
// default ready and failure settings (zero: the engine's defaults), and keeps every other field,
// which TestGolden_groupRecordsReadAndWriteBack checks byte for byte.
func TestGolden_v1RecordsReadWithoutV2Fields(t *testing.T) {
	t.Parallel()
	for _, path := range append(goldenFiles(t, "group-*.secret.xml"), goldenFiles(t, "group-*.json")...) {
		if !strings.Contains(path, "testdata/v1/") {
			continue
		}
		rec := readGroup(t, path)
		p := rec.Group.Policy
		if rec.Group.HealthCheck != nil || p.MinReady != 0 || p.ReadyTimeout != 0 || p.OnFailure != "" {
			t.Errorf("%s: read with version 2 values: health check %+v, min_ready %v, ready_timeout %v, on_failure %q", path, rec.Group.HealthCheck, p.MinReady, p.ReadyTimeout, p.OnFailure)
		}
	}
}

// TestGroupRecord_badStoredDurationIsRefused: a stored duration that does not parse is an error
// naming it, not a zero that would change what the group does.
func TestGroupRecord_badStoredDurationIsRefused(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"min_ready":             `{"group":{"name":"g","base_instance_name":"g","target_size":0,"running":true,"template":{},"update_policy":{"type":"PROACTIVE","minimal_action":"NONE","most_disruptive_allowed_action":"REPLACE","max_unavailable":1,"min_ready":"soon"}},"pool":"p"}`,
		"health check interval": `{"group":{"name":"g","base_instance_name":"g","target_size":0,"running":true,"template":{},"update_policy":{"type":"PROACTIVE","minimal_action":"NONE","most_disruptive_allowed_action":"REPLACE","max_unavailable":1},"health_check":{"probe":{"kind":"guest_agent"},"interval":"10 s","timeout":"5s","healthy_threshold":1,"unhealthy_threshold":3}},"pool":"p"}`,
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if _, err := DecodeGroup([]byte(body)); err == nil || !strings.Contains(err.Error(), "duration") {
				t.Fatalf("DecodeGroup = %v, want an error about the duration", err)
			}
		})
	}
}
