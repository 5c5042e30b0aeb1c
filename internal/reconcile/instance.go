package reconcile

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

func (spec Spec) record(index int) backend.Record {
	return backend.Record{
		Group:     spec.Group.Name,
		Index:     index,
		Revision:  spec.Group.Template.Revision(),
		Template:  spec.Group.Template.Canonical(),
		GroupSpec: spec.GroupSpec,
	}
}

func (spec Spec) disk(instance, device string) backend.Disk {
	return backend.Disk{DeviceName: device, Pool: spec.Pool, Volume: engine.VolumeName(instance, device)}
}

func (spec Spec) domainSpec(index int) backend.DomainSpec {
	t := spec.Group.Template.Canonical()
	name := engine.InstanceName(spec.Group.Base, index)
	ds := backend.DomainSpec{
		Name:        name,
		Type:        t.DomainType,
		VCPU:        t.VCPU,
		MemoryMiB:   t.MemoryMiB,
		NICs:        t.NICs,
		Description: t.Description,
		Record:      spec.record(index),
	}
	ds.Disks = append(ds.Disks, spec.disk(name, engine.BootDeviceName))
	for _, d := range t.Disks {
		ds.Disks = append(ds.Disks, spec.disk(name, d.DeviceName))
	}
	return ds
}

// ensureVolumes creates the instance's volumes that do not exist yet. Existing volumes are reused
// as they are: a volume under an instance's deterministic name belongs to that identity.
func (r *Reconciler) ensureVolumes(ctx context.Context, spec Spec, name string) error {
	t := spec.Group.Template
	if _, err := r.Backend.EnsureVolume(ctx, backend.VolumeSpec{
		Pool: spec.Pool, Name: engine.VolumeName(name, engine.BootDeviceName),
		SizeMiB: t.BootDisk.SizeMiB, BackingPath: t.BootDisk.SourceImage,
	}); err != nil {
		return err
	}
	for _, d := range t.Disks {
		if _, err := r.Backend.EnsureVolume(ctx, backend.VolumeSpec{Pool: spec.Pool, Name: engine.VolumeName(name, d.DeviceName), SizeMiB: d.SizeMiB}); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reconciler) createInstance(ctx context.Context, spec Spec, index int) error {
	ds := spec.domainSpec(index)
	if err := r.ensureVolumes(ctx, spec, ds.Name); err != nil {
		return err
	}
	if err := r.Backend.DefineDomain(ctx, ds); err != nil {
		return err
	}
	if spec.Group.Running {
		return r.Backend.StartDomain(ctx, ds.Name)
	}
	return nil
}

// ownedVolumes are the volumes that belong to an instance: those its naming scheme gives it for
// the devices it was built with, and any attached volume of the pool named after it.
func ownedVolumes(spec Spec, name string, rec *backend.Record, disks []backend.Disk) []string {
	seen := map[string]bool{}
	var out []string
	add := func(v string) {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	add(engine.VolumeName(name, engine.BootDeviceName))
	if rec != nil {
		for _, d := range rec.Template.Disks {
			add(engine.VolumeName(name, d.DeviceName))
		}
	}
	for _, d := range spec.Group.Template.Disks {
		add(engine.VolumeName(name, d.DeviceName))
	}
	for _, d := range disks {
		if d.Volume != "" && d.Pool == spec.Pool && strings.HasPrefix(d.Volume, name+"-") && d.Volume == engine.VolumeName(name, d.DeviceName) {
			add(d.Volume)
		}
	}
	return out
}

// deleteInstance removes a member and its volumes. Nothing is preserved yet: every volume of a
// member is stateless until the stateful policy says otherwise.
func (r *Reconciler) deleteInstance(ctx context.Context, spec Spec, name string, rec *backend.Record) error {
	if err := r.Backend.UndefineDomain(ctx, name); err != nil {
		return err
	}
	for _, v := range ownedVolumes(spec, name, rec, nil) {
		if err := r.Backend.DeleteVolume(ctx, spec.Pool, v); err != nil {
			return err
		}
	}
	return nil
}

// update applies one step of the plan to an existing member.
func (r *Reconciler) update(ctx context.Context, spec Spec, d backend.Domain, s engine.Step) error {
	fields := map[string]any{"instance": s.Name, "action": s.Action.String(), "reasons": engine.JoinReasons(s.Reasons)}
	if s.Changed {
		tflog.Info(ctx, fmt.Sprintf("%s %s", strings.ToLower(s.Action.String()), s.Name), fields)
		var err error
		switch s.Action {
		case engine.ActionReplace:
			err = r.replace(ctx, spec, d)
		case engine.ActionRestart:
			err = r.restart(ctx, spec, d)
		default:
			err = r.refresh(ctx, spec, d)
		}
		if err != nil {
			return fmt.Errorf("%s of %s: %w", strings.ToLower(s.Action.String()), s.Name, err)
		}
		if s.Action >= engine.ActionRestart {
			// A restart or replacement leaves the member in the desired power state already.
			return nil
		}
	}
	switch s.Power {
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

// refresh applies live changes: disks attached, detached and grown, then metadata, labels and
// description with the new revision. The domain keeps running throughout.
func (r *Reconciler) refresh(ctx context.Context, spec Spec, d backend.Domain) error {
	from, to := d.Record.Template.Canonical(), spec.Group.Template.Canonical()
	if to.BootDisk.SizeMiB > from.BootDisk.SizeMiB {
		if err := r.Backend.GrowDisk(ctx, d.Name, engine.BootDeviceName, spec.disk(d.Name, engine.BootDeviceName), to.BootDisk.SizeMiB); err != nil {
			return err
		}
	}
	for _, nd := range to.Disks {
		od, ok := from.DiskByName(nd.DeviceName)
		disk := spec.disk(d.Name, nd.DeviceName)
		switch {
		case !ok:
			if _, err := r.Backend.EnsureVolume(ctx, backend.VolumeSpec{Pool: spec.Pool, Name: disk.Volume, SizeMiB: nd.SizeMiB}); err != nil {
				return err
			}
			if err := r.Backend.AttachDisk(ctx, d.Name, disk); err != nil {
				return err
			}
		case nd.SizeMiB > od.SizeMiB:
			if err := r.Backend.GrowDisk(ctx, d.Name, nd.DeviceName, disk, nd.SizeMiB); err != nil {
				return err
			}
		}
	}
	for _, od := range from.Disks {
		if _, ok := to.DiskByName(od.DeviceName); ok {
			continue
		}
		if err := r.Backend.DetachDisk(ctx, d.Name, od.DeviceName); err != nil {
			return err
		}
		if err := r.Backend.DeleteVolume(ctx, spec.Pool, engine.VolumeName(d.Name, od.DeviceName)); err != nil {
			return err
		}
	}
	return r.Backend.SetRecord(ctx, d.Name, to.Description, spec.record(d.Record.Index))
}

// restart redefines the domain from the new template and power-cycles it. Volumes of new disks
// are created before the domain goes down, and grown while it is down.
func (r *Reconciler) restart(ctx context.Context, spec Spec, d backend.Domain) error {
	from, to := d.Record.Template.Canonical(), spec.Group.Template.Canonical()
	if err := r.ensureVolumes(ctx, spec, d.Name); err != nil {
		return err
	}
	if err := r.Backend.StopDomain(ctx, d.Name); err != nil {
		return err
	}
	// The definition keeps the old record until every step has succeeded, so that a restart
	// interrupted half-way is seen as not done and is redone by the next apply.
	ds := spec.domainSpec(d.Record.Index)
	ds.Record = *d.Record
	ds.UUID = d.UUID
	if err := r.Backend.DefineDomain(ctx, ds); err != nil {
		return err
	}
	if to.BootDisk.SizeMiB > from.BootDisk.SizeMiB {
		if err := r.Backend.GrowDisk(ctx, d.Name, engine.BootDeviceName, spec.disk(d.Name, engine.BootDeviceName), to.BootDisk.SizeMiB); err != nil {
			return err
		}
	}
	for _, nd := range to.Disks {
		if od, ok := from.DiskByName(nd.DeviceName); ok && nd.SizeMiB > od.SizeMiB {
			if err := r.Backend.GrowDisk(ctx, d.Name, nd.DeviceName, spec.disk(d.Name, nd.DeviceName), nd.SizeMiB); err != nil {
				return err
			}
		}
	}
	for _, od := range from.Disks {
		if _, ok := to.DiskByName(od.DeviceName); !ok {
			if err := r.Backend.DeleteVolume(ctx, spec.Pool, engine.VolumeName(d.Name, od.DeviceName)); err != nil {
				return err
			}
		}
	}
	if err := r.Backend.SetRecord(ctx, d.Name, to.Description, spec.record(d.Record.Index)); err != nil {
		return err
	}
	if spec.Group.Running {
		return r.Backend.StartDomain(ctx, d.Name)
	}
	return nil
}

// replace recreates the member from the new template under the same name.
func (r *Reconciler) replace(ctx context.Context, spec Spec, d backend.Domain) error {
	if err := r.deleteInstance(ctx, spec, d.Name, d.Record); err != nil {
		return err
	}
	return r.createInstance(ctx, spec, d.Record.Index)
}
