package store

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// GroupRecordOf is r as stored.
func GroupRecordOf(r engine.GroupRecord) GroupRecord {
	s := r.GroupState
	g := s.Group
	return GroupRecord{
		Group: Group{
			Name: g.Name, Base: g.Base, TargetSize: g.TargetSize, Running: g.Running, Template: TemplateOf(g.Template),
			Policy: UpdatePolicy{
				Type: g.Policy.Type, MinimalAction: ActionOf(g.Policy.MinimalAction), MostDisruptiveAllowed: ActionOf(g.Policy.MostDisruptiveAllowed),
				MaxUnavailable: g.Policy.MaxUnavailable, MaxUnavailablePercent: g.Policy.MaxUnavailablePercent,
				MinReady: durationText(g.Policy.MinReady), ReadyTimeout: durationText(g.Policy.ReadyTimeout), OnFailure: g.Policy.OnFailure,
				Snapshot: ptr(g.Policy.Snapshot, func(p engine.SnapshotPolicy) SnapshotPolicy {
					return SnapshotPolicy{Disks: p.Disks, Retention: durationText(p.Retention)}
				}),
				Canary: ptr(g.Policy.Canary, func(c engine.Canary) Canary { return Canary(c) }),
			},
			ShutdownTimeout: g.ShutdownTimeout, ScaleInOrder: g.ScaleInOrder,
			HealthCheck: ptr(g.HealthCheck, healthCheckOf),
			AutoHealing: ptr(g.AutoHealing, func(a engine.AutoHealing) AutoHealing {
				return AutoHealing{InitialDelay: a.InitialDelay, Backoff: a.Backoff, MaxConsecutiveFailures: a.MaxConsecutiveFailures}
			}),
			FailedPreservation: ptr(g.FailedPreservation, func(f engine.FailedPreservation) FailedPreservation {
				return FailedPreservation{AutoPreserveFailedMax: f.AutoPreserveFailedMax, PreserveTimeout: f.PreserveTimeout}
			}),
			Hosts:         slices.Clone(g.Hosts),
			AdoptExisting: g.AdoptExisting, Abandon: slices.Clone(g.Abandon),
			Drain: slices.Clone(g.Drain), Rebalance: g.Rebalance, ColdMoves: g.ColdMoves,
		},
		Pool: s.Pool, Policy: ptr(s.Policy, policyOf), Configs: eachValue(s.Configs, configEntryOf), Resource: s.Resource,
		Released: ptr(s.Released, releasedOf), UnfinishedReleases: each(s.UnfinishedReleases, releasedOf),
		Placement: maps.Clone(s.Placement), Placed: s.Placed, Creating: slices.Clone(s.Creating),
		TemplateRevisions: slices.Clone(s.TemplateRevisions), Retained: slices.Clone(s.Retained), Images: imagesOf(s.Images),
		Inventory: inventoryOf(s.Inventory),
		Owner:     ptr(r.Owner, func(o engine.Owner) Owner { return Owner{ID: o.ID, Since: o.Since, Creating: o.Creating} }),
		Lease: ptr(r.Lease, func(l engine.Lease) Lease {
			return Lease{Holder: l.Holder, Host: l.Host, PID: l.PID, Since: l.Since, Expires: l.Expires}
		}),
		Writes: each(r.Writes, func(w engine.Write) Write { return Write{Generation: w.Generation, Run: w.Run} }),
	}
}

// Engine is the stored group record as the engine's; an action it does not know is an error.
func (r GroupRecord) Engine() (engine.GroupRecord, error) {
	var errs []error
	action := func(a Action) engine.Action {
		v, err := a.Engine()
		errs = append(errs, err)
		return v
	}
	duration := func(text string) time.Duration {
		d, err := parseDuration(text)
		errs = append(errs, err)
		return d
	}
	g := r.Group
	out := engine.GroupRecord{
		GroupState: engine.GroupState{
			Group: engine.Group{
				Name: g.Name, Base: g.Base, TargetSize: g.TargetSize, Running: g.Running, Template: g.Template.Engine(),
				Policy: engine.UpdatePolicy{
					Type: g.Policy.Type, MinimalAction: action(g.Policy.MinimalAction), MostDisruptiveAllowed: action(g.Policy.MostDisruptiveAllowed),
					MaxUnavailable: g.Policy.MaxUnavailable, MaxUnavailablePercent: g.Policy.MaxUnavailablePercent,
					MinReady: duration(g.Policy.MinReady), ReadyTimeout: duration(g.Policy.ReadyTimeout), OnFailure: g.Policy.OnFailure,
					Snapshot: ptr(g.Policy.Snapshot, func(p SnapshotPolicy) engine.SnapshotPolicy {
						return engine.SnapshotPolicy{Disks: p.Disks, Retention: duration(p.Retention)}
					}),
					Canary: ptr(g.Policy.Canary, func(c Canary) engine.Canary { return engine.Canary(c) }),
				},
				ShutdownTimeout: g.ShutdownTimeout, ScaleInOrder: g.ScaleInOrder,
				HealthCheck: ptr(g.HealthCheck, func(h HealthCheck) engine.HealthCheck { return h.engine(duration) }),
				AutoHealing: ptr(g.AutoHealing, func(a AutoHealing) engine.AutoHealing {
					return engine.AutoHealing{InitialDelay: a.InitialDelay, Backoff: a.Backoff, MaxConsecutiveFailures: a.MaxConsecutiveFailures}
				}),
				FailedPreservation: ptr(g.FailedPreservation, func(f FailedPreservation) engine.FailedPreservation {
					return engine.FailedPreservation{AutoPreserveFailedMax: f.AutoPreserveFailedMax, PreserveTimeout: f.PreserveTimeout}
				}),
				Hosts:         slices.Clone(g.Hosts),
				AdoptExisting: g.AdoptExisting, Abandon: slices.Clone(g.Abandon),
				Drain: slices.Clone(g.Drain), Rebalance: g.Rebalance, ColdMoves: g.ColdMoves,
			},
			Pool: r.Pool, Policy: ptr(r.Policy, Policy.Engine), Configs: eachValue(r.Configs, func(c ConfigEntry) engine.ConfigEntry { return c.engine(action) }),
			Resource: r.Resource, Released: ptr(r.Released, func(x Released) engine.Released { return x.engine(action) }),
			UnfinishedReleases: each(r.UnfinishedReleases, func(x Released) engine.Released { return x.engine(action) }),
			Placement:          maps.Clone(r.Placement), Placed: r.Placed, Creating: slices.Clone(r.Creating),
			TemplateRevisions: slices.Clone(r.TemplateRevisions), Retained: slices.Clone(r.Retained), Images: r.engineImages(),
			Inventory: r.Inventory.engine(func(err error) { errs = append(errs, err) }),
		},
		Owner: ptr(r.Owner, func(o Owner) engine.Owner { return engine.Owner{ID: o.ID, Since: o.Since, Creating: o.Creating} }),
		Lease: ptr(r.Lease, func(l Lease) engine.Lease {
			return engine.Lease{Holder: l.Holder, Host: l.Host, PID: l.PID, Since: l.Since, Expires: l.Expires}
		}),
		Writes: each(r.Writes, func(w Write) engine.Write { return engine.Write{Generation: w.Generation, Run: w.Run} }),
	}
	return out, errors.Join(errs...)
}

func policyOf(p engine.Policy) Policy {
	return Policy{Disks: each(p.Disks, func(d engine.PolicyDisk) PolicyDisk {
		return PolicyDisk{DeviceName: d.DeviceName, DeleteRule: d.DeleteRule}
	})}
}

// Engine is the stored stateful policy as the engine's.
func (p Policy) Engine() engine.Policy {
	return engine.Policy{Disks: each(p.Disks, func(d PolicyDisk) engine.PolicyDisk {
		return engine.PolicyDisk{DeviceName: d.DeviceName, DeleteRule: d.DeleteRule}
	})}
}

func configEntryOf(c engine.ConfigEntry) ConfigEntry {
	return ConfigEntry{
		Config: InstanceConfig{
			Disks: each(c.Config.Disks, func(d engine.ConfigDisk) ConfigDisk {
				return ConfigDisk{DeviceName: d.DeviceName, Source: d.Source, Mode: d.Mode, DeleteRule: d.DeleteRule}
			}),
			Metadata: maps.Clone(c.Config.Metadata),
			NetworkIPs: each(c.Config.NetworkIPs, func(n engine.NetworkIP) NetworkIP {
				return NetworkIP{Interface: n.Interface, Address: n.Address}
			}),
		},
		MinimalAction: ActionOf(c.MinimalAction), MostDisruptiveAllowed: ActionOf(c.MostDisruptiveAllowed),
		RemoveInstanceOnDestroy: c.RemoveInstanceOnDestroy, RemoveStateOnDestroy: c.RemoveStateOnDestroy, Preserve: c.Preserve,
	}
}

func (c ConfigEntry) engine(action func(Action) engine.Action) engine.ConfigEntry {
	return engine.ConfigEntry{
		Config: engine.InstanceConfig{
			Disks: each(c.Config.Disks, func(d ConfigDisk) engine.ConfigDisk {
				return engine.ConfigDisk{DeviceName: d.DeviceName, Source: d.Source, Mode: d.Mode, DeleteRule: d.DeleteRule}
			}),
			Metadata: maps.Clone(c.Config.Metadata),
			NetworkIPs: each(c.Config.NetworkIPs, func(n NetworkIP) engine.NetworkIP {
				return engine.NetworkIP{Interface: n.Interface, Address: n.Address}
			}),
		},
		MinimalAction: action(c.MinimalAction), MostDisruptiveAllowed: action(c.MostDisruptiveAllowed),
		RemoveInstanceOnDestroy: c.RemoveInstanceOnDestroy, RemoveStateOnDestroy: c.RemoveStateOnDestroy, Preserve: c.Preserve,
	}
}

func releasedOf(r engine.Released) Released {
	return Released{Run: r.Run, Policy: policyOf(r.Policy), Configs: eachValue(r.Configs, configEntryOf), Unfinished: r.Unfinished}
}

func (r Released) engine(action func(Action) engine.Action) engine.Released {
	return engine.Released{
		Run: r.Run, Policy: r.Policy.Engine(), Unfinished: r.Unfinished,
		Configs: eachValue(r.Configs, func(c ConfigEntry) engine.ConfigEntry { return c.engine(action) }),
	}
}

// durationText is a duration as stored: "" for zero, which every stored duration leaves out.
func durationText(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// parseDuration reads a stored duration; "" is zero.
func parseDuration(text string) (time.Duration, error) {
	if text == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(text)
	if err != nil {
		return 0, fmt.Errorf("duration %q: %w", text, err)
	}
	return d, nil
}

func healthCheckOf(h engine.HealthCheck) HealthCheck {
	p := h.Probe
	return HealthCheck{
		Probe:    Probe{Kind: string(p.Kind), Command: slices.Clone(p.Command), Port: p.Port, Path: p.Path, ExpectStatus: p.ExpectStatus},
		Interval: durationText(h.Interval), Timeout: durationText(h.Timeout),
		HealthyThreshold: h.HealthyThreshold, UnhealthyThreshold: h.UnhealthyThreshold,
	}
}

func (h HealthCheck) engine(duration func(string) time.Duration) engine.HealthCheck {
	p := h.Probe
	return engine.HealthCheck{
		Probe:    engine.Probe{Kind: engine.ProbeKind(p.Kind), Command: slices.Clone(p.Command), Port: p.Port, Path: p.Path, ExpectStatus: p.ExpectStatus},
		Interval: duration(h.Interval), Timeout: duration(h.Timeout),
		HealthyThreshold: h.HealthyThreshold, UnhealthyThreshold: h.UnhealthyThreshold,
	}
}

// imagesOf is the group's image volumes as stored; none is nil.
func imagesOf(in map[string][]engine.HostImage) map[string][]Image {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string][]Image, len(in))
	for h, imgs := range in {
		out[h] = each(imgs, func(i engine.HostImage) Image {
			return Image{Source: i.Source, Volume: i.Volume, Format: i.Format, SHA256: i.SHA256, Bytes: i.Bytes, VirtualBytes: i.VirtualBytes}
		})
	}
	return out
}

// engineImages is the record's image volumes as the engine's; none is nil.
func (r GroupRecord) engineImages() map[string][]engine.HostImage {
	if len(r.Images) == 0 {
		return nil
	}
	out := make(map[string][]engine.HostImage, len(r.Images))
	for h, imgs := range r.Images {
		out[h] = each(imgs, func(i Image) engine.HostImage {
			return engine.HostImage{Source: i.Source, Volume: i.Volume, Format: i.Format, SHA256: i.SHA256, Bytes: i.Bytes, VirtualBytes: i.VirtualBytes}
		})
	}
	return out
}

// madeKinds are the stored names of engine.MadeKind, written out here so that a change of the
// engine's names never changes a record's bytes.
var madeKinds = map[engine.MadeKind]string{
	engine.MadeDomain: "domain", engine.MadeVolume: "volume", engine.MadeNVRAM: "nvram",
	engine.MadeSeed: "seed", engine.MadeReservation: "reservation", engine.MadeSnapshot: "snapshot",
}

// inventoryOf is the inventory as stored: nil for a record that keeps none.
func inventoryOf(inv engine.Inventory) *Inventory {
	if !inv.Kept {
		return nil
	}
	return &Inventory{Objects: each(inv.Items, func(m engine.Made) Made {
		return Made{Kind: madeKinds[m.Kind], Host: m.Host, Name: m.Name, UUID: m.UUID, Intent: !m.Confirmed, Reclaimed: m.Reclaimed,
			Tag: m.Tag, Revision: m.Revision, TakenAt: m.TakenAt, ReadyAt: m.ReadyAt}
	})}
}

// engine is the stored inventory as the engine's; a kind it does not know is an error.
func (inv *Inventory) engine(fail func(error)) engine.Inventory {
	if inv == nil {
		return engine.Inventory{}
	}
	out := engine.Inventory{Kept: true}
	for _, m := range inv.Objects {
		kind, ok := engine.MadeKind(-1), false
		for k, name := range madeKinds {
			if name == m.Kind {
				kind, ok = k, true
			}
		}
		if !ok {
			fail(fmt.Errorf("inventory object %q of unknown kind %q", m.Name, m.Kind))
			continue
		}
		out.Items = append(out.Items, engine.Made{Kind: kind, Host: m.Host, Name: m.Name, UUID: m.UUID, Confirmed: !m.Intent, Reclaimed: m.Reclaimed,
			Tag: m.Tag, Revision: m.Revision, TakenAt: m.TakenAt, ReadyAt: m.ReadyAt})
	}
	return out
}
