package reconcile

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// diskOf turns a desired disk into the backend's disk: a volume of the group's pool, or a path.
func diskOf(pool string, d engine.DesiredDisk) backend.Disk {
	if strings.HasPrefix(d.Source, "/") {
		return backend.Disk{DeviceName: d.DeviceName, Path: d.Source, ReadOnly: d.ReadOnly}
	}
	return backend.Disk{DeviceName: d.DeviceName, Pool: pool, Volume: d.Source, ReadOnly: d.ReadOnly}
}

// sameSource reports whether an attached disk is the desired one.
func sameSource(pool string, a backend.Disk, d engine.DesiredDisk) bool {
	return SourceOf(a, pool) == d.Source && a.ReadOnly == d.ReadOnly
}

// ownVolume reports whether the disk is the instance's own volume, named after it, which the
// group created from its template.
func ownVolume(instance string, d engine.DesiredDisk) bool {
	return d.Source == engine.VolumeName(instance, d.DeviceName)
}

func record(s engine.GroupState, index int, mi engine.ManagedInstance) backend.Record {
	return backend.Record{Group: s.Group.Name, Index: index, Instance: mi}
}

func domainSpec(s engine.GroupState, desired engine.DesiredInstance, rec backend.Record) backend.DomainSpec {
	ds := backend.DomainSpec{
		Name: desired.Name, Type: desired.DomainType, VCPU: desired.VCPU, MemoryMiB: desired.MemoryMiB,
		NICs: desired.NICs, Description: desired.Description, Record: rec,
	}
	for _, d := range desired.Disks {
		ds.Disks = append(ds.Disks, diskOf(s.Pool, d))
	}
	return ds
}

// ensureVolumes creates the instance's own template volumes that do not exist yet. An existing
// volume is reused as it is: a volume under an instance's deterministic name belongs to that
// identity, and a preserved one holds its data.
func (r *Reconciler) ensureVolumes(ctx context.Context, s engine.GroupState, desired engine.DesiredInstance, t engine.Template) error {
	for _, d := range desired.Disks {
		if d.SizeMiB == 0 || !ownVolume(desired.Name, d) {
			continue
		}
		spec := backend.VolumeSpec{Pool: s.Pool, Name: d.Source, SizeMiB: d.SizeMiB}
		if d.DeviceName == engine.BootDeviceName {
			spec.BackingPath = t.BootDisk.SourceImage
		}
		if _, err := r.Backend.EnsureVolume(ctx, spec); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reconciler) createInstance(ctx context.Context, s engine.GroupState, name string, index int, plan engine.InstancePlan, t engine.Template, running bool) error {
	if err := r.ensureVolumes(ctx, s, plan.Desired, t); err != nil {
		return err
	}
	if err := r.Backend.DefineDomain(ctx, domainSpec(s, plan.Desired, record(s, index, plan.Applied(t)))); err != nil {
		return err
	}
	if running {
		return r.Backend.StartDomain(ctx, name)
	}
	return nil
}

// knownDisks is every disk the instance's bookkeeping knows: as applied, and as an interrupted
// change may have left it.
func knownDisks(mi engine.ManagedInstance) []engine.DesiredDisk {
	out := append([]engine.DesiredDisk(nil), mi.Current.Disks...)
	if mi.InFlight != nil {
		out = append(out, mi.InFlight.Disks...)
	}
	return out
}

// preservedAnywhere reports whether any state the instance had or is getting preserves the
// device. A disk is only ever recreated or deleted when none does.
func preservedAnywhere(device string, states ...engine.DesiredInstance) bool {
	for _, st := range states {
		if d, ok := st.DiskByName(device); ok && d.Preserved {
			return true
		}
	}
	return false
}

// deleteInstance deletes a member for good: the domain, its stateless volumes, and its
// preserved volumes whose delete rule is ON_PERMANENT_INSTANCE_DELETION.
func (r *Reconciler) deleteInstance(ctx context.Context, s engine.GroupState, d backend.Domain) error {
	if err := r.Backend.UndefineDomain(ctx, d.Name); err != nil {
		return err
	}
	if d.Record == nil {
		return nil
	}
	mi := d.Record.Instance
	done := map[string]bool{}
	for _, disk := range knownDisks(mi) {
		if done[disk.Source] || !ownVolume(d.Name, disk) {
			continue
		}
		done[disk.Source] = true
		keep := false
		for _, st := range []engine.DesiredInstance{mi.Current, deref(mi.InFlight)} {
			if x, ok := st.DiskByName(disk.DeviceName); ok && x.Preserved && x.DeleteRule != engine.DeleteOnPermanentDeletion {
				keep = true
			}
		}
		if keep {
			tflog.Info(ctx, "preserved volume kept", map[string]any{"instance": d.Name, "volume": disk.Source})
			continue
		}
		if err := r.Backend.DeleteVolume(ctx, s.Pool, disk.Source); err != nil {
			return err
		}
	}
	return nil
}

// createdByGroup reports whether the bookkeeping knows the device as a template disk, which the
// group created, in the applied state or in an interrupted change.
func createdByGroup(mi engine.ManagedInstance, device string) bool {
	for _, st := range []engine.DesiredInstance{mi.Current, deref(mi.InFlight)} {
		if x, ok := st.DiskByName(device); ok && x.SizeMiB > 0 {
			return true
		}
	}
	return false
}

func deref(d *engine.DesiredInstance) engine.DesiredInstance {
	if d == nil {
		return engine.DesiredInstance{}
	}
	return *d
}

// update applies one step of the plan to an existing member.
func (r *Reconciler) update(ctx context.Context, s engine.GroupState, d backend.Domain, st engine.Step) error {
	fields := map[string]any{"instance": st.Name, "action": st.Action.String(), "reasons": engine.JoinReasons(st.Plan.Reasons)}
	if st.Changed() {
		verb := strings.ToLower(st.Action.String())
		if st.Adopt {
			verb = "adopt"
		}
		tflog.Info(ctx, verb+" "+st.Name, fields)
		var err error
		switch st.Action {
		case engine.ActionReplace:
			err = r.replace(ctx, s, d, st)
		case engine.ActionRestart:
			err = r.restart(ctx, s, d, st)
		default:
			err = r.refresh(ctx, s, d, st)
		}
		if err != nil {
			return fmt.Errorf("%s of %s: %w", verb, st.Name, err)
		}
		if st.Action >= engine.ActionRestart {
			// A restart or replacement leaves the member in the desired power state already.
			return nil
		}
	}
	switch st.Power {
	case engine.StatusRunning:
		if d.Status != engine.StatusStopped {
			// A paused or failed domain is power-cycled into a clean run.
			if err := r.Backend.StopDomain(ctx, d.Name); err != nil {
				return err
			}
		}
		return r.Backend.StartDomain(ctx, d.Name)
	case engine.StatusStopped:
		return r.Backend.StopDomain(ctx, d.Name)
	}
	return nil
}

// current is the member's bookkeeping, or for a domain being adopted its shape.
func current(d backend.Domain, pool string) engine.ManagedInstance {
	if d.Record == nil {
		shape := Shape(d, pool)
		return engine.ManagedInstance{Current: shape, Template: engine.AdoptedTemplate(shape)}
	}
	return d.Record.Instance
}

// markInFlight records, before anything changes, where the member is going, so that an
// interruption is seen and settled by the next apply whatever the configuration says then.
func (r *Reconciler) markInFlight(ctx context.Context, s engine.GroupState, d backend.Domain, st engine.Step) (engine.ManagedInstance, error) {
	mi := current(d, s.Pool)
	marked := mi
	target := st.Plan.Desired
	marked.InFlight, marked.InFlightAction = &target, st.Action
	return mi, r.Backend.SetRecord(ctx, d.Name, mi.Current.Description, record(s, st.Index, marked))
}

// finish records the applied state and clears the in-flight marker in one write.
func (r *Reconciler) finish(ctx context.Context, s engine.GroupState, st engine.Step) error {
	return r.Backend.SetRecord(ctx, st.Name, st.Plan.Desired.Description, record(s, st.Index, st.Plan.Applied(st.Template)))
}

// disksUnchanged reports whether the member's disks stay as they are: then a refresh is one
// atomic metadata write and needs no marker.
func disksUnchanged(mi engine.ManagedInstance, desired engine.DesiredInstance) bool {
	if mi.InFlight != nil || len(mi.Current.Disks) != len(desired.Disks) {
		return false
	}
	for i, c := range mi.Current.Disks {
		w := desired.Disks[i]
		if c.DeviceName != w.DeviceName || c.Source != w.Source || c.ReadOnly != w.ReadOnly || w.SizeMiB > c.SizeMiB {
			return false
		}
	}
	return true
}

// refresh applies live changes: disks attached, detached, swapped and grown, then metadata,
// labels and description. The domain keeps running throughout. Disks are converged from what
// is attached now, not from the bookkeeping, so a refresh interrupted half-way is finished by
// running it again.
func (r *Reconciler) refresh(ctx context.Context, s engine.GroupState, d backend.Domain, st engine.Step) error {
	mi := current(d, s.Pool)
	desired := st.Plan.Desired
	if d.Record != nil && disksUnchanged(mi, desired) {
		return r.finish(ctx, s, st)
	}
	mi, err := r.markInFlight(ctx, s, d, st)
	if err != nil {
		return err
	}
	attached := map[string]backend.Disk{}
	for _, a := range d.Disks {
		attached[a.DeviceName] = a
	}
	for _, want := range desired.Disks {
		a, ok := attached[want.DeviceName]
		if ok && sameSource(s.Pool, a, want) {
			if have, ok := mi.Current.DiskByName(want.DeviceName); ok && have.SizeMiB > 0 && want.SizeMiB > have.SizeMiB {
				if err := r.Backend.GrowDisk(ctx, d.Name, want.DeviceName, diskOf(s.Pool, want), want.SizeMiB); err != nil {
					return err
				}
			}
			continue
		}
		if ok {
			if err := r.release(ctx, s, d.Name, a, mi, desired); err != nil {
				return err
			}
		}
		if want.SizeMiB > 0 && ownVolume(d.Name, want) {
			if err := r.ensureVolumes(ctx, s, engine.DesiredInstance{Name: d.Name, Disks: []engine.DesiredDisk{want}}, st.Template); err != nil {
				return err
			}
		}
		if err := r.Backend.AttachDisk(ctx, d.Name, diskOf(s.Pool, want)); err != nil {
			return err
		}
	}
	for _, a := range d.Disks {
		if _, ok := desired.DiskByName(a.DeviceName); !ok {
			if err := r.release(ctx, s, d.Name, a, mi, desired); err != nil {
				return err
			}
		}
	}
	return r.finish(ctx, s, st)
}

// release detaches a disk and decides its volume's fate: an own template volume that no state
// preserves is deleted (the template no longer wants it, or a config replaced it); every other
// volume is left in place.
func (r *Reconciler) release(ctx context.Context, s engine.GroupState, name string, a backend.Disk, mi engine.ManagedInstance, desired engine.DesiredInstance) error {
	if err := r.Backend.DetachDisk(ctx, name, a.DeviceName); err != nil {
		return err
	}
	return r.dropIfStateless(ctx, s, name, a, mi, desired)
}

func (r *Reconciler) dropIfStateless(ctx context.Context, s engine.GroupState, name string, a backend.Disk, mi engine.ManagedInstance, desired engine.DesiredInstance) error {
	dd := engine.DesiredDisk{DeviceName: a.DeviceName, Source: SourceOf(a, s.Pool)}
	if !ownVolume(name, dd) || a.Pool != s.Pool || preservedAnywhere(a.DeviceName, mi.Current, deref(mi.InFlight), desired) {
		return nil
	}
	if _, fromTemplate := mi.Template.DiskByName(a.DeviceName); !fromTemplate && a.DeviceName != engine.BootDeviceName && !createdByGroup(mi, a.DeviceName) {
		// Not a volume the group created: it is not the group's to delete.
		return nil
	}
	return r.Backend.DeleteVolume(ctx, s.Pool, dd.Source)
}

// restart redefines the domain from the desired state and power-cycles it. Volumes of new
// disks are created before the domain goes down, and grown while it is down.
func (r *Reconciler) restart(ctx context.Context, s engine.GroupState, d backend.Domain, st engine.Step) error {
	desired := st.Plan.Desired
	mi, err := r.markInFlight(ctx, s, d, st)
	if err != nil {
		return err
	}
	if err := r.ensureVolumes(ctx, s, desired, st.Template); err != nil {
		return err
	}
	if err := r.Backend.StopDomain(ctx, d.Name); err != nil {
		return err
	}
	marked := mi
	marked.InFlight, marked.InFlightAction = &desired, st.Action
	ds := domainSpec(s, desired, record(s, st.Index, marked))
	ds.UUID = d.UUID
	if err := r.Backend.DefineDomain(ctx, ds); err != nil {
		return err
	}
	for _, want := range desired.Disks {
		if have, ok := mi.Current.DiskByName(want.DeviceName); ok && have.SizeMiB > 0 && want.SizeMiB > have.SizeMiB && have.Source == want.Source {
			if err := r.Backend.GrowDisk(ctx, d.Name, want.DeviceName, diskOf(s.Pool, want), want.SizeMiB); err != nil {
				return err
			}
		}
	}
	for _, a := range d.Disks {
		if w, ok := desired.DiskByName(a.DeviceName); !ok || !sameSource(s.Pool, a, w) {
			if err := r.dropIfStateless(ctx, s, d.Name, a, mi, desired); err != nil {
				return err
			}
		}
	}
	if err := r.finish(ctx, s, st); err != nil {
		return err
	}
	if s.Group.Running {
		return r.Backend.StartDomain(ctx, d.Name)
	}
	return nil
}

// replace recreates the member under the same name. Its stateless volumes are recreated blank;
// every preserved volume is kept byte for byte and attached to the new domain under the same
// device name.
func (r *Reconciler) replace(ctx context.Context, s engine.GroupState, d backend.Domain, st engine.Step) error {
	mi, err := r.markInFlight(ctx, s, d, st)
	if err != nil {
		return err
	}
	if err := r.Backend.UndefineDomain(ctx, d.Name); err != nil {
		return err
	}
	for _, a := range d.Disks {
		if err := r.dropIfStateless(ctx, s, d.Name, a, mi, st.Plan.Desired); err != nil {
			return err
		}
	}
	return r.createInstance(ctx, s, d.Name, st.Index, st.Plan, st.Template, s.Group.Running)
}
