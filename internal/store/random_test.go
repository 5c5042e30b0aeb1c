package store

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// gen makes random engine values for the property tests: every field set or not, nil and empty
// lists and maps, and text that JSON escapes. A lossless gen makes only text that JSON and XML
// keep as it is (valid UTF-8, no control characters but tab and newline); the other makes any
// bytes, for the hashes.
type gen struct {
	r        *rand.Rand
	lossless bool
}

func newGen(seed uint64, lossless bool) gen {
	return gen{rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), lossless}
}

var losslessRunes = []rune("aZ09 -_.:/<>&'\"\\\t\né日本🙂\u2028\u2029\u007f")

var texts = []string{"", "a", "db", "<b>&amp;</b>", "é日本🙂", "\u2028\u2029", "q\"\\/", "\t\n", "NEVER", "READ_ONLY"}

// lossy is text that JSON or XML does not keep as it is.
var lossy = []string{"\x00\x1f\r", "\xff\xfe"}

func (g gen) str() string {
	if g.lossless {
		if g.r.IntN(4) == 0 {
			rs := make([]rune, g.r.IntN(8))
			for i := range rs {
				rs[i] = losslessRunes[g.r.IntN(len(losslessRunes))]
			}
			return string(rs)
		}
		return texts[g.r.IntN(len(texts))]
	}
	if g.r.IntN(8) == 0 {
		return lossy[g.r.IntN(len(lossy))]
	}
	if g.r.IntN(4) == 0 {
		// Any runes, invalid UTF-8 included.
		b := make([]byte, g.r.IntN(12))
		for i := range b {
			b[i] = byte(g.r.IntN(256))
		}
		return string(b)
	}
	return texts[g.r.IntN(len(texts))]
}

func (g gen) yes() bool { return g.r.IntN(2) == 0 }

func (g gen) int64() int64 {
	switch g.r.IntN(4) {
	case 0:
		return 0
	case 1:
		return g.r.Int64() - g.r.Int64()
	default:
		return g.r.Int64N(100000)
	}
}

// duration is zero, a usual one, or any at all (negative ones too).
func (g gen) duration() time.Duration {
	switch g.r.IntN(3) {
	case 0:
		return 0
	case 1:
		return time.Duration(g.r.IntN(600)) * time.Second
	}
	return time.Duration(g.r.Int64() - g.r.Int64())
}

func (g gen) strs() []string {
	switch g.r.IntN(3) {
	case 0:
		return nil
	case 1:
		return []string{}
	}
	out := make([]string, 1+g.r.IntN(3))
	for i := range out {
		out[i] = g.str()
	}
	return out
}

func (g gen) strMap() map[string]string {
	switch g.r.IntN(3) {
	case 0:
		return nil
	case 1:
		return map[string]string{}
	}
	m := map[string]string{}
	for range 1 + g.r.IntN(4) {
		m[g.str()] = g.str()
	}
	return m
}

// list is n random elements made by f, nil or empty some of the time.
func list[T any](g gen, f func() T) []T {
	switch g.r.IntN(3) {
	case 0:
		return nil
	case 1:
		return []T{}
	}
	out := make([]T, 1+g.r.IntN(3))
	for i := range out {
		out[i] = f()
	}
	return out
}

func (g gen) nic() engine.NIC { return engine.NIC{Network: g.str(), Type: g.str()} }

func (g gen) cloudInit() *engine.CloudInit {
	if g.yes() {
		return nil
	}
	return &engine.CloudInit{UserData: g.str(), NetworkConfig: g.str()}
}

func (g gen) template() engine.Template {
	return engine.Template{
		Shape:    engine.Shape{DomainType: g.str(), VCPU: g.int64(), MemoryMiB: g.int64(), Labels: g.strMap(), Description: g.str(), CloudInit: g.cloudInit(), ConsoleLogDir: g.str()},
		BootDisk: engine.BootDisk{SourceImage: g.str(), SizeMiB: g.int64()},
		Disks:    list(g, func() engine.Disk { return engine.Disk{DeviceName: g.str(), SizeMiB: g.int64()} }),
		NICs:     list(g, g.nic), Metadata: g.strMap(), Adopted: g.yes(),
	}
}

func (g gen) desired() engine.DesiredInstance {
	return engine.DesiredInstance{
		Name: g.str(), Shape: engine.Shape{DomainType: g.str(), VCPU: g.int64(), MemoryMiB: g.int64(), Labels: g.strMap(), Description: g.str(), CloudInit: g.cloudInit(), ConsoleLogDir: g.str()}, NICs: list(g, g.nic), BootImage: g.str(),
		Disks: list(g, func() engine.DesiredDisk {
			return engine.DesiredDisk{DeviceName: g.str(), Source: g.str(), ReadOnly: g.yes(), SizeMiB: g.int64(), Preserved: g.yes(), DeleteRule: g.str()}
		}),
		Metadata: g.strMap(),
	}
}

func (g gen) preserved() engine.PreservedState {
	s := engine.PreservedState{Metadata: g.strMap()}
	if g.yes() {
		s.Disks = map[string]engine.PreservedDisk{}
		for range g.r.IntN(3) {
			s.Disks[g.str()] = engine.PreservedDisk{DeviceName: g.str(), Source: g.str(), Mode: g.str(), DeleteRule: g.str()}
		}
	}
	return s
}

func (g gen) action() engine.Action { return engine.Action(g.r.IntN(4)) }

func (g gen) time() time.Time {
	return time.Unix(g.r.Int64N(4e9), g.r.Int64N(1e9)).UTC()
}

func (g gen) policy() engine.Policy {
	return engine.Policy{Disks: list(g, func() engine.PolicyDisk { return engine.PolicyDisk{DeviceName: g.str(), DeleteRule: g.str()} })}
}

func (g gen) configs() map[string]engine.ConfigEntry {
	if g.yes() {
		return nil
	}
	m := map[string]engine.ConfigEntry{}
	for i := range g.r.IntN(3) {
		m[fmt.Sprint("m-", i)] = engine.ConfigEntry{
			Config: engine.InstanceConfig{
				Disks: list(g, func() engine.ConfigDisk {
					return engine.ConfigDisk{DeviceName: g.str(), Source: g.str(), Mode: g.str(), DeleteRule: g.str()}
				}),
				Metadata: g.strMap(),
			},
			MinimalAction: g.action(), MostDisruptiveAllowed: g.action(),
			RemoveInstanceOnDestroy: g.yes(), RemoveStateOnDestroy: g.yes(), Preserve: g.str(),
		}
	}
	return m
}

func (g gen) released() engine.Released {
	return engine.Released{Run: g.str(), Policy: g.policy(), Configs: g.configs(), Unfinished: g.yes()}
}

func (g gen) groupRecord() engine.GroupRecord {
	r := engine.GroupRecord{GroupState: engine.GroupState{
		Group: engine.Group{
			Name: g.str(), Base: g.str(), TargetSize: g.r.IntN(10), Running: g.yes(), Template: g.template(),
			Policy: engine.UpdatePolicy{
				Type: g.str(), MinimalAction: g.action(), MostDisruptiveAllowed: g.action(),
				MaxUnavailable: g.r.IntN(5), MaxUnavailablePercent: g.r.IntN(101),
				MinReady: g.duration(), ReadyTimeout: g.duration(), OnFailure: g.str(),
			},
			ShutdownTimeout: g.str(), ScaleInOrder: g.str(), Hosts: g.strs(),
			Drain: g.strs(), Rebalance: g.yes(), ColdMoves: g.yes(),
		},
		Pool: g.str(), Configs: g.configs(), Resource: g.str(),
		UnfinishedReleases: list(g, g.released), Placement: g.strMap(), Placed: g.yes(),
		Creating: g.strs(), TemplateRevisions: g.strs(),
	}}
	if g.yes() {
		r.Group.Policy.Canary = &engine.Canary{Fixed: g.r.IntN(5), Percent: g.r.IntN(101)}
	}
	if g.yes() {
		r.Inventory = engine.Inventory{Kept: true, Items: list(g, func() engine.Made {
			return engine.Made{Kind: engine.MadeKind(g.r.IntN(5)), Host: g.str(), Name: g.str(), UUID: g.str(), Confirmed: g.yes()}
		})}
	}
	if g.yes() {
		r.Group.AutoHealing = &engine.AutoHealing{InitialDelay: g.str(), Backoff: g.str(), MaxConsecutiveFailures: g.r.IntN(5)}
	}
	if g.yes() {
		r.Group.FailedPreservation = &engine.FailedPreservation{AutoPreserveFailedMax: g.r.IntN(5), PreserveTimeout: g.str()}
	}
	if g.yes() {
		r.Group.HealthCheck = &engine.HealthCheck{
			Probe:    engine.Probe{Kind: engine.ProbeKind(g.str()), Command: g.strs(), Port: g.r.IntN(70000), Path: g.str(), ExpectStatus: g.r.IntN(600)},
			Interval: g.duration(), Timeout: g.duration(), HealthyThreshold: g.r.IntN(11), UnhealthyThreshold: g.r.IntN(11),
		}
	}
	if g.yes() {
		p := g.policy()
		r.Policy = &p
	}
	if g.yes() {
		rel := g.released()
		r.Released = &rel
	}
	if g.yes() {
		r.Owner = &engine.Owner{ID: g.str(), Since: g.time(), Creating: g.yes()}
	}
	if g.yes() {
		r.Lease = &engine.Lease{Holder: g.str(), Host: g.str(), PID: g.r.IntN(1 << 20), Since: g.time(), Expires: g.time()}
	}
	r.Writes = list(g, func() engine.Write { return engine.Write{Generation: g.r.Int64N(1000), Run: g.str()} })
	return r
}

func (g gen) member() Member {
	m := Member{Group: g.str(), Index: g.r.IntN(100), Instance: engine.ManagedInstance{
		Current: g.desired(), PreservedFromPolicy: g.preserved(), PreservedFromConfig: g.preserved(),
		Template: g.template(), TemplateRevision: g.str(), LastAppliedHash: g.str(),
	}}
	mi := &m.Instance
	if g.yes() {
		mi.Created = g.r.Int64N(1 << 42)
	}
	if g.yes() {
		mi.Heals, mi.LastHeal = 1+g.r.IntN(4), g.r.Int64N(1<<42)
	}
	if g.yes() {
		mi.Preserved, mi.PreservedSince = "NOW", g.r.Int64N(1<<42)
	}
	if g.yes() {
		d := g.desired()
		mi.InFlight, mi.InFlightAction = &d, g.action()
	}
	return m
}
