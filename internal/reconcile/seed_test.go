package reconcile

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

func cloudSpec(size int) engine.GroupState {
	s := spec(size)
	s.Group.Template.CloudInit = &engine.CloudInit{UserData: "#cloud-config\n"}
	s.Group.Template.NICs = []engine.NIC{{Network: "default", Type: "network"}, {Type: "user"}}
	return s
}

// seedOf is the seed volume's bytes as the fake holds them.
func seedOf(t *testing.T, b *fake.Backend, member string) string {
	t.Helper()
	v := b.Volumes["p/"+engine.SeedVolumeName(member)]
	if v == nil {
		t.Fatalf("no seed volume for %s; volumes %v", member, b.VolumeNames("p"))
	}
	return v.Data
}

func TestSeed_writtenOnCreateSwappedLiveOnMetadataAndDeletedWithTheMember(t *testing.T) {
	t.Parallel()
	b := fake.New()
	s := cloudSpec(2)
	apply(t, b, s)
	for _, n := range []string{"db-1", "db-2"} {
		d := b.Domains[n]
		if d.Spec.Seed == nil || d.Spec.Seed.Volume != n+"-cidata.iso" {
			t.Fatalf("%s has no seed drive: %+v", n, d.Spec.Seed)
		}
		if data := seedOf(t, b, n); !strings.Contains(data, `local-hostname: "`+n+`"`) || !strings.Contains(data, `role: "db"`) {
			t.Fatalf("seed of %s lacks its name or metadata", n)
		}
	}
	before := ids(b)
	s.Group.Template.Metadata = map[string]string{"role": "web"}
	apply(t, b, s)
	if got := ids(b); !maps.Equal(got, before) {
		t.Fatalf("a metadata change restarted members: %v -> %v", before, got)
	}
	if b.Calls["replace-seed"] != 2 {
		t.Fatalf("replace-seed called %d times, want 2 (one live swap per member); log %v", b.Calls["replace-seed"], b.Log)
	}
	if data := seedOf(t, b, "db-1"); !strings.Contains(data, `role: "web"`) {
		t.Fatal("the swapped seed does not hold the new metadata")
	}
	s.Group.TargetSize = 1
	apply(t, b, s)
	if slices.Contains(b.VolumeNames("p"), "db-2-cidata.iso") {
		t.Fatalf("scale-in left the seed volume: %v", b.VolumeNames("p"))
	}
}

func TestSeed_userDataChangeReplacesKeepingMACs(t *testing.T) {
	t.Parallel()
	b := fake.New()
	s := cloudSpec(1)
	apply(t, b, s)
	macs := slices.Clone(b.Domains["db-1"].Spec.MACs)
	if len(macs) != 2 || macs[0] == macs[1] || macs[0] != engine.MACAddress("db", "db-1", 0) {
		t.Fatalf("MACs %v", macs)
	}
	uuid := b.Domains["db-1"].UUID
	s.Group.Template.CloudInit = &engine.CloudInit{UserData: "#cloud-config\nruncmd: [true]\n"}
	apply(t, b, s)
	d := b.Domains["db-1"]
	if d.UUID == uuid {
		t.Fatal("a user_data change did not replace the member")
	}
	if !slices.Equal(d.Spec.MACs, macs) {
		t.Fatalf("MACs changed across REPLACE: %v -> %v", macs, d.Spec.MACs)
	}
	if data := seedOf(t, b, "db-1"); !strings.Contains(data, "runcmd") {
		t.Fatal("the replaced member's seed lacks the new user-data")
	}
}

func TestSeed_interruptedSwapIsFinishedByTheNextApply(t *testing.T) {
	t.Parallel()
	b := fake.New()
	s := cloudSpec(1)
	apply(t, b, s)
	s.Group.Template.Metadata = map[string]string{"role": "web"}
	b.FailOn["replace-seed db-1"] = errors.New("connection lost")
	if err := New(b).Apply(context.Background(), s); err == nil {
		t.Fatal("the apply did not fail")
	}
	delete(b.FailOn, "replace-seed db-1")
	r := New(b)
	p, _, err := r.Preview(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Steps) != 1 || p.Steps[0].Action != engine.ActionRefresh {
		t.Fatalf("plan after the interruption: %+v", p.Steps)
	}
	apply(t, b, s)
	if data := seedOf(t, b, "db-1"); !strings.Contains(data, `role: "web"`) {
		t.Fatal("the next apply did not write the seed")
	}
}

func TestSeed_missingVolumeIsWrittenAgain(t *testing.T) {
	t.Parallel()
	b := fake.New()
	s := cloudSpec(1)
	apply(t, b, s)
	delete(b.Volumes, "p/db-1-cidata.iso")
	r := New(b)
	p, _, err := r.Preview(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Steps) != 1 || !strings.Contains(engine.JoinReasons(p.Steps[0].Plan.Reasons), "seed volume db-1-cidata.iso missing") {
		t.Fatalf("plan: %+v", p.Steps)
	}
	apply(t, b, s)
	seedOf(t, b, "db-1")
}

func TestSeed_destroyDeletesSeeds(t *testing.T) {
	t.Parallel()
	b := fake.New()
	s := cloudSpec(2)
	apply(t, b, s)
	if err := New(b).Destroy(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if got := b.VolumeNames("p"); len(got) != 0 {
		t.Fatalf("destroy left %v", got)
	}
}

func TestAddresses_fromTheAgentElseTheNetworksLeasesOfRunningMembers(t *testing.T) {
	t.Parallel()
	b := fake.New()
	s := cloudSpec(3)
	apply(t, b, s)
	b.DHCPLeases = map[string]map[string][]string{"default": {
		engine.MACAddress("db", "db-1", 0): {"192.168.122.11"},
		engine.MACAddress("db", "db-2", 1): {"192.168.122.99"}, // the user-mode NIC's MAC: not on the network
		engine.MACAddress("db", "db-3", 0): {"192.168.122.13"},
	}}
	b.AgentAddresses = map[string][]string{"db-3": {"10.0.0.3"}}
	b.Domains["db-2"].ID = -1 // stopped: not asked about
	r := New(b)
	o, err := r.Observe(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	for _, ob := range o.Observed {
		if len(ob.IPs) > 0 {
			t.Fatalf("an observation read addresses (%s: %v): only the data source asks for them", ob.Name, ob.IPs)
		}
	}
	calls := b.Calls["leases"]
	r.Addresses(context.Background(), &o)
	got := map[string][]string{}
	for _, ob := range o.Observed {
		got[ob.Name] = ob.IPs
		if want := engine.MACAddresses("db", ob.Name, 2); !slices.Equal(ob.MACs, want) {
			t.Fatalf("%s MACs %v, want %v", ob.Name, ob.MACs, want)
		}
	}
	if !slices.Equal(got["db-1"], []string{"192.168.122.11"}) || len(got["db-2"]) != 0 || !slices.Equal(got["db-3"], []string{"10.0.0.3"}) {
		t.Fatalf("addresses %v", got)
	}
	if n := b.Calls["leases"] - calls; n != 1 {
		t.Fatalf("leases read %d times, want once (one network)", n)
	}
}
