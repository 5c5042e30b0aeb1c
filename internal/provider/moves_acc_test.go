package provider

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/backend/libvirt"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"

	"github.com/virtfleet/terraform-provider-virt/internal/diskdigest"
)

// The acceptance tests of moves between hosts (issue 34): a drained host's members move to the
// group's other hosts, and rebalance spreads them over a host added later, each member keeping
// its name, UUID, MACs and every byte of its preserved disk. The harness's three daemons run on
// one machine with their own host UUIDs, and libvirt migrates between them where the source's
// daemon can open the target's URI: the system daemon reaches the session daemons' sockets (a
// live move), a session daemon cannot open qemu:///system (libvirt refuses: the move goes on
// cold). Both paths run here end to end, and the pure cold one with live = false; a migration of
// unknown outcome is only reachable with the fake backend (reconcile's move tests). The kills during a drain are cmd/chaos's "moves" scenario: a test driven by
// terraform-plugin-testing runs the provider inside the test process, which a SIGKILL of the
// provider would take down with it.

// moveMembers is the size of the groups the move tests make.
const moveMembers = 4

// moveConfig is a group of moveMembers tiny members (TCG, no OS, a user-mode NIC so that they have
// MACs to keep, an 8 MiB data disk its policy preserves) with the distribution policy's body
// given, members stopped or running.
func moveConfig(name string, running bool, policy string) string {
	return hostsProvider() + dataPolicyAndInstances + groupConfig(name, moveMembers,
		diskBlocks(8, "data")+"\n    network_interface {\n      type = \"user\"\n    }", fmt.Sprintf(`
  running = %t
  update_policy {
    max_unavailable = "1"
  }
  distribution_policy {
%s
  }
`, running, policy))
}

// harnessPool is the harness pool of a host.
func harnessPool(host string) string {
	if host == testHostDefault {
		return testPool()
	}
	return testHostPool
}

// memberNames are the names of a group's moveMembers members.
func memberNames(base string) []string {
	out := make([]string, moveMembers)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", base, i+1)
	}
	return out
}

// memberOf is the member a domain or volume of the group belongs to, by the index after the
// group's name ("tfacc-g-3-data.qcow2" is tfacc-g-3's); "" when the name has none.
func memberOf(base, name string) string {
	rest, ok := strings.CutPrefix(name, base+"-")
	if !ok {
		return ""
	}
	end := 0
	for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
		end++
	}
	if _, err := strconv.Atoi(rest[:end]); err != nil {
		return ""
	}
	return base + "-" + rest[:end]
}

// spread is what the hosts hold of a group at one moment, read with the tests' own connections.
type spread struct {
	doms map[string][]backend.Domain // by host
	vols map[string][]backend.Volume // by host
}

func readSpread(ctx context.Context, conns map[string]*libvirt.Backend, base string) (spread, error) {
	s := spread{doms: map[string][]backend.Domain{}, vols: map[string][]backend.Volume{}}
	for h, b := range conns {
		doms, err := b.ListDomains(ctx, base+"-")
		if err != nil {
			return s, fmt.Errorf("list domains of host %s: %w", h, err)
		}
		vols, err := b.ListVolumes(ctx, harnessPool(h), base+"-")
		if err != nil {
			return s, fmt.Errorf("list volumes of host %s: %w", h, err)
		}
		s.doms[h], s.vols[h] = doms, vols
	}
	return s, nil
}

// hostsOfMember are the hosts where a member is defined.
func (s spread) hostsOfMember(member string) []string {
	var out []string
	for h, doms := range s.doms {
		for _, d := range doms {
			if d.Name == member {
				out = append(out, h)
			}
		}
	}
	slices.Sort(out)
	return out
}

// problems are the moves' invariants that this moment breaks: a member defined on two hosts, a
// volume of the group on a host where its member is not defined (an orphan, or a half-copied
// leftover).
func (s spread) problems(base string) []string {
	var out []string
	for _, m := range memberNames(base) {
		if hs := s.hostsOfMember(m); len(hs) > 1 {
			out = append(out, fmt.Sprintf("%s is defined on hosts %s", m, strings.Join(hs, " and ")))
		}
	}
	for h, vols := range s.vols {
		for _, v := range vols {
			if m := memberOf(base, v.Name); m == "" || !slices.Contains(s.hostsOfMember(m), h) {
				out = append(out, fmt.Sprintf("volume %s on host %s, where its member is not defined", v.Name, h))
			}
		}
	}
	slices.Sort(out)
	return out
}

// testConns are the tests' own connections to the hosts named, taken on the test's goroutine.
func testConns(t *testing.T, hosts ...string) map[string]*libvirt.Backend {
	t.Helper()
	out := map[string]*libvirt.Backend{}
	for _, h := range hosts {
		out[h] = hostConn(t, h)
	}
	return out
}

// checkSpread checks that each host has exactly the number of the group's members given, and
// that no invariant of the moves is broken on the hosts.
func checkSpread(t *testing.T, base string, want map[string]int) resource.TestCheckFunc {
	return func(*terraform.State) error {
		s, err := readSpread(context.Background(), testConns(t, testHostNames()...), base)
		if err != nil {
			return err
		}
		for _, h := range testHostNames() {
			var names []string
			for _, d := range s.doms[h] {
				names = append(names, d.Name)
			}
			if len(names) != want[h] {
				return fmt.Errorf("host %s has members %v, want %d of them", h, names, want[h])
			}
		}
		if p := s.problems(base); len(p) > 0 {
			return errors.New(strings.Join(p, "; "))
		}
		return nil
	}
}

// identities remembers each member's UUID and MACs, wherever it is, to tell a move (same
// identity on another host) from a re-creation.
type identities map[string]string

func memberIdentity(d backend.Domain) string {
	return "uuid " + d.UUID + ", MACs " + strings.Join(d.MACs, ",")
}

func (ids identities) read(t *testing.T, base string) (identities, error) {
	s, err := readSpread(context.Background(), testConns(t, testHostNames()...), base)
	if err != nil {
		return nil, err
	}
	now := identities{}
	for _, doms := range s.doms {
		for _, d := range doms {
			now[d.Name] = memberIdentity(d)
		}
	}
	return now, nil
}

func (ids identities) record(t *testing.T, base string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		now, err := ids.read(t, base)
		if err != nil {
			return err
		}
		for _, m := range memberNames(base) {
			if now[m] == "" {
				return fmt.Errorf("member %s is on no host", m)
			}
			if !strings.Contains(now[m], ":") {
				return fmt.Errorf("member %s has no MAC (%s): the test's NIC did not reach it", m, now[m])
			}
			ids[m] = now[m]
		}
		return nil
	}
}

func (ids identities) same(t *testing.T, base string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		now, err := ids.read(t, base)
		if err != nil {
			return err
		}
		var diffs []string
		for _, m := range memberNames(base) {
			if now[m] != ids[m] {
				diffs = append(diffs, fmt.Sprintf("%s had %s, has %q", m, ids[m], now[m]))
			}
		}
		if len(diffs) > 0 {
			return fmt.Errorf("members lost their identity: %s", strings.Join(diffs, "; "))
		}
		return nil
	}
}

// dataSums remembers the guest-visible bytes of each member's data volume, wherever the member
// is: the test writes random bytes into them while the members are stopped.
type dataSums map[string]string

func dataVolumeOf(member string) string { return member + "-data.qcow2" }

// volumeOn finds a volume on whichever host has it; it is an error that two hosts have it.
func volumeOn(ctx context.Context, conns map[string]*libvirt.Backend, name string) (string, backend.Volume, error) {
	var host string
	var vol backend.Volume
	for h, b := range conns {
		vols, err := b.ListVolumes(ctx, harnessPool(h), name)
		if err != nil {
			return "", vol, fmt.Errorf("list volumes of host %s: %w", h, err)
		}
		for _, v := range vols {
			if v.Name != name {
				continue
			}
			if host != "" {
				return "", vol, fmt.Errorf("volume %s is on hosts %s and %s", name, host, h)
			}
			host, vol = h, v
		}
	}
	if host == "" {
		return "", vol, fmt.Errorf("volume %s is on no host", name)
	}
	return host, vol, nil
}

// write fills every member's data volume with random bytes, through qemu-img (the volume's
// guest-visible bytes, whatever its format), and remembers their checksum.
func (sums dataSums) write(t *testing.T, base string) {
	t.Helper()
	conns := testConns(t, testHostNames()...)
	for _, m := range memberNames(base) {
		host, vol, err := volumeOn(context.Background(), conns, dataVolumeOf(m))
		if err != nil {
			t.Fatal(err)
		}
		raw := filepath.Join(t.TempDir(), testPrefix+m+".raw")
		data := make([]byte, vol.CapacityBytes)
		if _, err := rand.Read(data); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(raw, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("qemu-img", "convert", "-n", "-f", "raw", "-O", "qcow2", raw, vol.Path).CombinedOutput(); err != nil {
			t.Fatalf("write random bytes into %s on host %s: %v: %s", vol.Name, host, err, out)
		}
		if sums[m], _, err = diskdigest.Raw(raw); err != nil {
			t.Fatal(err)
		}
		if got, err := guestSum(vol.Path); err != nil || got != sums[m] {
			t.Fatalf("%s on host %s reads back %s (%v), written %s", vol.Name, host, got, err, sums[m])
		}
	}
}

// guestSum is the digest of a volume's guest-visible bytes (diskdigest).
func guestSum(path string) (string, error) {
	sum, _, err := diskdigest.Image(path, "")
	return sum, err
}

func (sums dataSums) same(t *testing.T, base string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		conns := testConns(t, testHostNames()...)
		for _, m := range memberNames(base) {
			host, vol, err := volumeOn(context.Background(), conns, dataVolumeOf(m))
			if err != nil {
				return err
			}
			got, err := guestSum(vol.Path)
			if err != nil {
				return err
			}
			if got != sums[m] {
				return fmt.Errorf("%s on host %s has checksum %s, had %s: bytes were lost", vol.Name, host, got, sums[m])
			}
		}
		return nil
	}
}

// downSampler watches the group's members on the hosts while an apply runs: how many members at
// most were down at once (running on no host), and whether a member ever ran on two hosts.
type downSampler struct {
	once    sync.Once
	stop    chan struct{}
	done    chan struct{}
	maxDown int
	atMax   string
	samples int
	doubles []string
	errs    []string
	// shutOff are the members seen defined and shut off on a host: a cold move stops its
	// member; a live one never does.
	shutOff map[string]bool
}

// startSampler starts sampling on the test's goroutine (it takes the connections there).
func startSampler(t *testing.T, base string, hosts ...string) *downSampler {
	t.Helper()
	conns := testConns(t, hosts...)
	s := &downSampler{stop: make(chan struct{}), done: make(chan struct{}), shutOff: map[string]bool{}}
	// An apply that fails never reaches the step's Check: the sampler stops with the test.
	t.Cleanup(s.halt)
	go func() {
		defer close(s.done)
		for {
			s.sample(conns, base)
			select {
			case <-s.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return s
}

// guestRuns reports whether the domain's guest runs: libvirt's own state, running. The provider
// counts a domain paused while it starts up as running (it is about to run), and a live
// migration's target is paused so until the handover: its guest does not run yet.
func guestRuns(b *libvirt.Backend, name string) bool {
	raw := b.Raw()
	d, err := raw.DomainLookupByName(name)
	if err != nil {
		return false
	}
	state, _, err := raw.DomainGetState(d, 0)
	return err == nil && golibvirt.DomainState(state) == golibvirt.DomainRunning
}

func (s *downSampler) halt() {
	s.once.Do(func() { close(s.stop) })
	<-s.done
}

func (s *downSampler) sample(conns map[string]*libvirt.Backend, base string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The hosts are read one after the other, not at one instant: a member that a live move
	// hands over between two readings shows on both. A copy counts twice only when the host read
	// first still runs it after the others were read: then both ran at once.
	hosts := slices.Sorted(maps.Keys(conns))
	// A member shut off on one host counts only when no host runs it in the same sample: a live
	// move leaves the source's definition shut off a moment after the target runs the member,
	// until the move undefines it (libvirt's migration resumes the guest on the target before it
	// stops the source).
	stopped := map[string]bool{}
	runningOn := func(h string) (map[string]bool, bool) {
		doms, err := conns[h].ListDomains(ctx, base+"-")
		if err != nil {
			s.errs = append(s.errs, fmt.Sprintf("list domains of host %s: %v", h, err))
			return nil, false
		}
		out := map[string]bool{}
		for _, d := range doms {
			if d.Status == engine.StatusStopped {
				stopped[d.Name] = true
			}
			if d.Status == engine.StatusRunning && guestRuns(conns[h], d.Name) {
				out[d.Name] = true
			}
		}
		return out, true
	}
	running := map[string][]string{}
	for _, h := range hosts {
		on, ok := runningOn(h)
		if !ok {
			return
		}
		for name := range on {
			running[name] = append(running[name], h)
		}
	}
	for name, on := range running {
		if len(on) < 2 {
			continue
		}
		again, ok := runningOn(on[0])
		if !ok {
			return
		}
		if !again[name] {
			running[name] = on[1:]
		}
	}
	s.samples++
	for name := range stopped {
		if len(running[name]) == 0 {
			s.shutOff[name] = true
		}
	}
	var down []string
	for _, m := range memberNames(base) {
		switch len(running[m]) {
		case 0:
			down = append(down, m)
		case 1:
		default:
			s.doubles = append(s.doubles, fmt.Sprintf("%s runs on %s", m, strings.Join(running[m], " and ")))
		}
	}
	if len(down) > s.maxDown {
		s.maxDown, s.atMax = len(down), strings.Join(down, ", ")
	}
}

// check stops the sampler and fails when more than maxUnavailable members were down at once or a
// member ran on two hosts; it logs the most seen down.
func (s *downSampler) check(t *testing.T, maxUnavailable int) resource.TestCheckFunc {
	return func(*terraform.State) error {
		s.halt()
		t.Logf("sampled the members %d times during the apply: at most %d down at once (%s)", s.samples, s.maxDown, s.atMax)
		switch {
		case len(s.errs) > 0:
			return fmt.Errorf("sampling failed: %s", strings.Join(s.errs, "; "))
		case s.samples < 2:
			return fmt.Errorf("the members were sampled %d times during the apply: nothing can be said", s.samples)
		case len(s.doubles) > 0:
			return fmt.Errorf("two running copies: %s", strings.Join(slices.Compact(s.doubles), "; "))
		case s.maxDown > maxUnavailable:
			return fmt.Errorf("%d members were down at once (%s), max_unavailable is %d", s.maxDown, s.atMax, maxUnavailable)
		}
		return nil
	}
}

// checkLive checks that the apply moved members live: no member was seen shut off on any host
// while it ran (a cold move stops its member for the copy).
func (s *downSampler) checkLive() resource.TestCheckFunc {
	return func(*terraform.State) error {
		s.halt()
		if len(s.shutOff) > 0 {
			return fmt.Errorf("members were shut off during the apply, as a cold move does: %v", slices.Sorted(maps.Keys(s.shutOff)))
		}
		return nil
	}
}

// memberActions checks the members' planned actions in the plan of the group: want maps a
// member to its action; count, when set, counts the members whose action has that exact text
// instead (the engine chooses which members rebalance moves).
type memberActions struct {
	want  map[string]string
	text  string
	count int
}

func (p memberActions) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	var got map[string]string
	for _, rc := range req.Plan.ResourceChanges {
		if rc.Address != groupAddr || rc.Change == nil {
			continue
		}
		after, _ := rc.Change.After.(map[string]any)
		list, err := membersOf(after["instances"])
		if err != nil {
			resp.Error = err
			return
		}
		got = map[string]string{}
		for _, i := range list {
			o, _ := i.(map[string]any)
			name, _ := o["name"].(string)
			action, _ := o["planned_action"].(string)
			got[name] = action
		}
	}
	if got == nil {
		resp.Error = fmt.Errorf("the plan has no instances of %s", groupAddr)
		return
	}
	for m, w := range p.want {
		if got[m] != w {
			resp.Error = fmt.Errorf("planned_action of %s is %q, want %q (all: %v)", m, got[m], w, got)
			return
		}
	}
	if p.text != "" {
		n := 0
		for _, a := range got {
			if a == p.text {
				n++
			}
		}
		if n != p.count {
			resp.Error = fmt.Errorf("%d members plan %q, want %d (all: %v)", n, p.text, p.count, got)
		}
	}
}

// TestAccMove_drain drains one of a group's two hosts: 4 running members, 2 on h2 and 2 on the
// default host, each with random bytes in its preserved data disk; drain = ["h2"] moves h2's
// members to the default host, cold (live = false), one at a time
// (max_unavailable = 1). Each member keeps its name, UUID, MACs and data bytes; h2 keeps no member
// domain or volume; the next plan is empty.
func TestAccMove_drain(t *testing.T) {
	testAccMoveDrain(t, "mvdrain", "\n    live  = false", "MOVE: h2 -> default (cold)")
}

// TestAccMove_drainLiveRefusedGoesCold is the same drain with live moves allowed: the hosts'
// UUIDs differ, so the plan moves h2's members live; h2's daemon (a session daemon) cannot open
// the default host's qemu:///system, libvirt refuses each migration ("unexpected qemu URI path
// '/system', try qemu:///session"), and each member moves cold in the same apply, with every check
// of the cold drain.
//
// Its name is short: a session daemon's guest agent socket path holds the domain's id and name,
// and a UNIX socket path has at most 107 bytes.
func TestAccMove_drainLiveRefusedGoesCold(t *testing.T) {
	testAccMoveDrain(t, "mvlv", "", "MOVE: h2 -> default (live)")
}

func testAccMoveDrain(t *testing.T, suffix, live, planned string) {
	hostsTest(t)
	name := testPrefix + suffix
	hosts := `    hosts = ["h2", "default"]`
	m := memberNames(name)
	sums := dataSums{}
	ids := identities{}
	var sampler *downSampler
	cold := planned
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeftOnHosts(t, name),
		Steps: []resource.TestStep{
			{
				Config: moveConfig(name, false, hosts),
				Check:  onHosts(t, name, map[string][]string{"h2": {m[0], m[2]}, "default": {m[1], m[3]}, "h3": nil}),
			},
			{
				PreConfig: func() { sums.write(t, name) },
				Config:    moveConfig(name, true, hosts),
				Check:     resource.ComposeTestCheckFunc(ids.record(t, name), checkSpread(t, name, map[string]int{"h2": 2, "default": 2})),
			},
			{
				PreConfig: func() { sampler = startSampler(t, name, testHostH2, testHostDefault) },
				Config:    moveConfig(name, true, hosts+"\n    drain = [\"h2\"]"+live),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
					memberActions{want: map[string]string{m[0]: cold, m[2]: cold, m[1]: "NONE", m[3]: "NONE"}},
				}},
				Check: resource.ComposeTestCheckFunc(
					// First, so that the sampler stops with the apply whatever else fails.
					func(s *terraform.State) error { return sampler.check(t, 1)(s) },
					onHosts(t, name, map[string][]string{"default": m, "h2": nil}),
					checkSpread(t, name, map[string]int{"default": 4}),
					ids.same(t, name),
					sums.same(t, name),
				),
			},
		},
	})
}

// TestAccMove_rebalance adds a host to a group whose 4 running members are all on the default
// host, with rebalance = true: 2 of them move to h3, live (the system daemon migrates them to h3's
// session daemon), one at a time, keeping their names,
// UUIDs, MACs and data bytes; the next plan is empty.
func TestAccMove_rebalance(t *testing.T) {
	hostsTest(t)
	name := testPrefix + "mvrebal"
	one := `    hosts = ["default"]`
	two := `    hosts     = ["default", "h3"]` + "\n    rebalance = true"
	m := memberNames(name)
	sums := dataSums{}
	ids := identities{}
	var sampler *downSampler
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeftOnHosts(t, name),
		Steps: []resource.TestStep{
			{
				Config: moveConfig(name, false, one),
				Check:  onHosts(t, name, map[string][]string{"default": m, "h2": nil, "h3": nil}),
			},
			{
				PreConfig: func() { sums.write(t, name) },
				Config:    moveConfig(name, true, one),
				Check:     resource.ComposeTestCheckFunc(ids.record(t, name), checkSpread(t, name, map[string]int{"default": 4})),
			},
			{
				PreConfig: func() { sampler = startSampler(t, name, testHostDefault, testHostH3) },
				Config:    moveConfig(name, true, two),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
					memberActions{text: "MOVE: default -> h3 (live)", count: 2},
				}},
				Check: resource.ComposeTestCheckFunc(
					func(s *terraform.State) error { return sampler.check(t, 1)(s) },
					func(s *terraform.State) error { return sampler.checkLive()(s) },
					checkSpread(t, name, map[string]int{"default": 2, "h3": 2}),
					ids.same(t, name),
					sums.same(t, name),
				),
			},
		},
	})
}
