package reconcile

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/seed"
)

// diskOf turns a desired disk into the backend's disk: a volume of the group's pool, or a path.
func diskOf(pool string, d engine.DesiredDisk) backend.Disk {
	if strings.HasPrefix(d.Source, "/") {
		return backend.Disk{DeviceName: d.DeviceName, Path: d.Source, ReadOnly: d.ReadOnly}
	}
	return backend.Disk{DeviceName: d.DeviceName, Pool: pool, Volume: d.Source, ReadOnly: d.ReadOnly}
}

func record(s engine.GroupState, index int, mi engine.ManagedInstance) backend.Record {
	return backend.Record{Group: s.Group.Name, Index: index, Instance: mi}
}

func domainSpec(s engine.GroupState, desired engine.DesiredInstance, rec backend.Record) backend.DomainSpec {
	ds := backend.DomainSpec{
		Name: desired.Name, Type: desired.DomainType, VCPU: desired.VCPU, MemoryMiB: desired.MemoryMiB,
		NICs: desired.NICs, Description: desired.Description, Record: rec, Autostart: s.Group.Running,
		MACs: engine.MACAddresses(s.Group.Name, desired.Name, len(desired.NICs)),
	}
	for _, d := range desired.Disks {
		ds.Disks = append(ds.Disks, diskOf(s.Pool, d))
	}
	if desired.CloudInit != nil {
		seed := seedDisk(s, desired.Name)
		ds.Seed = &seed
	}
	if desired.ConsoleLogDir != "" {
		ds.ConsoleLog = path.Join(desired.ConsoleLogDir, desired.Name+".console.log")
	}
	return ds
}

func seedDisk(s engine.GroupState, name string) backend.Disk {
	return backend.Disk{DeviceName: "cidata", Pool: s.Pool, Volume: engine.SeedVolumeName(name), ReadOnly: true}
}

// seedImage is the member's NoCloud seed: its name as instance-id and hostname, its effective
// metadata, and the template's cloud-init.
func seedImage(desired engine.DesiredInstance) ([]byte, error) {
	sd := seed.Seed{InstanceID: desired.Name, Hostname: desired.Name, Metadata: desired.Metadata}
	if ci := desired.CloudInit; ci != nil {
		sd.UserData, sd.NetworkConfig = ci.UserData, ci.NetworkConfig
	}
	return sd.ISO()
}

// seed carries out the operation's seed step: swap, when the member runs on with it (a live
// change), else write or delete the volume.
func (x *opRun) seed(ctx context.Context, desired engine.DesiredInstance, swap bool) error {
	name := engine.SeedVolumeName(x.op.Name)
	switch x.op.Seed {
	case engine.SeedWrite:
		data, err := seedImage(desired)
		if err != nil {
			return x.do("build cloud-init seed", err)
		}
		if swap {
			return x.do("replace cloud-init seed", x.b().ReplaceSeed(ctx, x.op.Name, seedDisk(x.s, x.op.Name), data))
		}
		return x.do("write cloud-init seed "+name, x.b().WriteSeed(ctx, x.s.Pool, name, data))
	case engine.SeedDelete:
		return x.do("delete volume "+name, x.b().DeleteVolume(ctx, x.s.Pool, name))
	case engine.SeedKeep:
	}
	return nil
}

// opRun carries out one operation of a plan, step by step; each failure names its step.
type opRun struct {
	r       *Reconciler
	s       engine.GroupState
	op      engine.Operation
	backend backend.Backend // the operation's host
	down    bool            // the member has been stopped or undefined
	// nameChecked is set once nameFree has looked.
	nameChecked bool
}

func (x *opRun) b() backend.Backend { return x.backend }

// do runs one step and names it in the error.
func (x *opRun) do(step string, err error) error {
	if err == nil {
		return nil
	}
	return &StepError{Op: x.op, Step: step, Down: x.down, Err: err}
}

// volumes carries out the volume operations whose fate is one of fates.
func (x *opRun) volumes(ctx context.Context, fates ...engine.Fate) error {
	for _, v := range x.op.Volumes {
		if !slices.Contains(fates, v.Fate) {
			continue
		}
		spec := backend.VolumeSpec{Pool: x.s.Pool, Name: v.Volume, SizeMiB: v.SizeMiB, BackingPath: v.BackingImage}
		switch v.Fate {
		case engine.Delete:
			if err := x.nameFree(ctx); err != nil {
				return err
			}
			if err := x.do("delete volume "+v.Volume, x.b().DeleteVolume(ctx, x.s.Pool, v.Volume)); err != nil {
				return err
			}
		case engine.Recreate:
			if v.Absent {
				// Not there when the plan was made: create it straight away. If it appeared since,
				// it is not this member's to reuse, so it goes the usual way below.
				fresh := spec
				fresh.Fresh = true
				created, err := x.b().EnsureVolume(ctx, fresh)
				if err != nil {
					return x.do("create volume "+v.Volume, err)
				}
				if created {
					continue
				}
			}
			if err := x.nameFree(ctx); err != nil {
				return err
			}
			if err := x.do("delete volume "+v.Volume, x.b().DeleteVolume(ctx, x.s.Pool, v.Volume)); err != nil {
				return err
			}
			if _, err := x.b().EnsureVolume(ctx, spec); err != nil {
				return x.do("create volume "+v.Volume, err)
			}
		case engine.Keep:
			if v.SizeMiB == 0 {
				continue
			}
			if _, err := x.b().EnsureVolume(ctx, spec); err != nil {
				return x.do("create volume "+v.Volume, err)
			}
		case engine.Release:
			tflog.Info(ctx, "volume kept", map[string]any{"instance": x.op.Name, "volume": v.Volume, "device": v.DeviceName})
		}
	}
	return nil
}

// nameFree checks, before a creation deletes a volume (a leftover of the member's own
// interrupted creation, as the plan judged it, or one that appeared after the plan), that no
// domain holds the member's name: a name is not proof of ownership, and a domain of that name
// means the volumes are its own. It looks once per operation, and only for a creation: any
// other operation's member is the group's, as observed under its lease. A creation of new
// volumes only needs no look: define refuses a name that is taken.
func (x *opRun) nameFree(ctx context.Context) error {
	if x.op.Kind != engine.OpCreate || x.nameChecked {
		return nil
	}
	x.nameChecked = true
	doms, err := x.b().ListDomains(ctx, x.op.Name, x.op.Name)
	if err != nil {
		return x.do("check that the name is free", err)
	}
	for _, d := range doms {
		if d.Name != x.op.Name {
			continue
		}
		owner := "no provider created it"
		if d.Record != nil {
			owner = fmt.Sprintf("it carries the record of group %q", d.Record.Group)
		}
		return x.do("check that the name is free", fmt.Errorf("a domain named %s appeared on the host after the plan was made (%s): nothing of it was touched; plan again", x.op.Name, owner))
	}
	return nil
}

// stop takes the member down as shutdown_timeout says: an ACPI request, a wait, then power off;
// a zero timeout powers off at once.
func (x *opRun) stop(ctx context.Context) error {
	x.down = true
	name := x.op.Name
	if timeout := x.s.Group.StopTimeout(); timeout > 0 {
		if err := x.b().ShutdownDomain(ctx, name); err != nil {
			return x.do("shut down", err)
		}
		stopped, err := x.b().WaitStopped(ctx, name, timeout)
		if err != nil {
			return x.do("wait for shutdown", err)
		}
		if stopped {
			return nil
		}
		tflog.Info(ctx, "member did not shut down in time; powering it off", map[string]any{"instance": name, "shutdown_timeout": timeout.String()})
	}
	return x.do("power off", x.b().StopDomain(ctx, name))
}

func (x *opRun) create(ctx context.Context) error {
	m := x.op.New
	if err := x.volumes(ctx, engine.Delete, engine.Recreate, engine.Keep); err != nil {
		return err
	}
	if err := x.seed(ctx, m.Plan.Desired, false); err != nil {
		return err
	}
	created := m.Plan.Applied(x.s.Group.Template)
	created.Created = x.r.now().UnixMilli()
	if err := x.do("define", x.b().DefineDomain(ctx, domainSpec(x.s, m.Plan.Desired, record(x.s, m.Index, created)))); err != nil {
		return err
	}
	if x.op.Power == engine.StatusRunning {
		return x.do("start", x.b().StartDomain(ctx, m.Name))
	}
	return nil
}

func (x *opRun) delete(ctx context.Context) error {
	if x.op.Name != "" {
		if x.op.Power == engine.StatusStopped {
			if err := x.stop(ctx); err != nil {
				return err
			}
		}
		if err := x.do("undefine", x.b().UndefineDomain(ctx, x.op.Name)); err != nil {
			return err
		}
		if err := x.seed(ctx, engine.DesiredInstance{}, false); err != nil {
			return err
		}
	}
	return x.volumes(ctx, engine.Delete, engine.Release)
}

func (x *opRun) power(ctx context.Context) error {
	if x.op.Reset {
		// A paused or crashed domain is power-cycled into a clean run.
		x.down = true
		if err := x.do("power off", x.b().StopDomain(ctx, x.op.Name)); err != nil {
			return err
		}
	}
	switch x.op.Power {
	case engine.StatusRunning:
		if err := x.do("set autostart", x.b().SetAutostart(ctx, x.op.Name, true)); err != nil {
			return err
		}
		return x.do("start", x.b().StartDomain(ctx, x.op.Name))
	case engine.StatusStopped:
		if err := x.do("set autostart", x.b().SetAutostart(ctx, x.op.Name, false)); err != nil {
			return err
		}
		return x.stop(ctx)
	}
	return nil
}

// markInFlight records, before anything changes, where the member is going, so that an
// interruption is seen and settled by the next apply whatever the configuration says then.
func (x *opRun) markInFlight(ctx context.Context) (engine.ManagedInstance, error) {
	st := x.op.Step
	mi := x.current()
	marked := mi
	target := st.Plan.Desired
	marked.InFlight, marked.InFlightAction = &target, st.Action
	if st.Heal > 0 {
		// Counted before anything changes, so that a heal that fails counts too.
		marked.Heals, marked.LastHeal = st.Heal, x.r.now().UnixMilli()
	}
	return marked, x.do("mark in flight", x.b().SetRecord(ctx, st.Name, record(x.s, st.Index, marked)))
}

// writePreservation writes the preservation the step starts or releases in the member's record,
// and nothing else of it.
func (x *opRun) writePreservation(ctx context.Context) error {
	st := x.op.Step
	if st.Preserve == nil {
		return nil
	}
	mi := x.current()
	mi.Preserved, mi.PreservedSince = st.Preserve.Kind, st.Preserve.Since
	return x.do("record preservation", x.b().SetRecord(ctx, st.Name, record(x.s, st.Index, mi)))
}

// current is the member's bookkeeping as the plan saw it.
func (x *opRun) current() engine.ManagedInstance { return x.op.Step.Current }

// finish records the applied state and clears the in-flight marker in one write.
func (x *opRun) finish(ctx context.Context) error {
	st := x.op.Step
	return x.do("record", x.b().SetRecord(ctx, st.Name, record(x.s, st.Index, st.Recorded())))
}

// live applies a change to the running member: disks detached, volumes dropped or made, disks
// attached and grown, the description when it changes, then metadata and labels in the final
// record write.
func (x *opRun) live(ctx context.Context) error {
	if x.op.Define {
		// The member runs without a definition: it gets back the one its record describes, with
		// its UUID and autostart, before anything writes to it. The running domain is untouched.
		cur := x.current()
		ds := domainSpec(x.s, cur.Current, record(x.s, x.op.Index, cur))
		ds.UUID = x.op.Step.UUID
		if err := x.do("define again", x.b().DefineDomain(ctx, ds)); err != nil {
			return err
		}
	}
	if x.op.Mark {
		if _, err := x.markInFlight(ctx); err != nil {
			return err
		}
	}
	name := x.op.Name
	for _, dev := range x.op.Detach {
		if err := x.do("detach disk "+dev, x.b().DetachDisk(ctx, name, dev)); err != nil {
			return err
		}
	}
	if err := x.volumes(ctx, engine.Delete, engine.Keep); err != nil {
		return err
	}
	for _, d := range x.op.Attach {
		if err := x.do("attach disk "+d.DeviceName, x.b().AttachDisk(ctx, name, diskOf(x.s.Pool, d))); err != nil {
			return err
		}
	}
	for _, d := range x.op.Grow {
		if err := x.do("grow disk "+d.DeviceName, x.b().GrowDisk(ctx, name, d.DeviceName, diskOf(x.s.Pool, d), d.SizeMiB)); err != nil {
			return err
		}
	}
	if err := x.seed(ctx, x.op.Step.Plan.Desired, true); err != nil {
		return err
	}
	if x.op.Description {
		if err := x.do("set description", x.b().SetDescription(ctx, name, x.op.Step.Plan.Desired.Description)); err != nil {
			return err
		}
	}
	if x.op.Record {
		if err := x.finish(ctx); err != nil {
			return err
		}
	}
	return x.power(ctx)
}

// restart makes the new volumes and stores the new definition while the member still runs, then
// stops it, grows its disks, drops the volumes it no longer has, and starts it.
func (x *opRun) restart(ctx context.Context) error {
	marked, err := x.markInFlight(ctx)
	if err != nil {
		return err
	}
	if err := x.volumes(ctx, engine.Keep); err != nil {
		return err
	}
	st := x.op.Step
	ds := domainSpec(x.s, st.Plan.Desired, record(x.s, st.Index, marked))
	ds.UUID = st.UUID
	if err := x.do("define the new definition", x.b().DefineDomain(ctx, ds)); err != nil {
		return err
	}
	if err := x.stop(ctx); err != nil {
		return err
	}
	for _, d := range x.op.Grow {
		if err := x.do("grow disk "+d.DeviceName, x.b().GrowDisk(ctx, x.op.Name, d.DeviceName, diskOf(x.s.Pool, d), d.SizeMiB)); err != nil {
			return err
		}
	}
	if err := x.volumes(ctx, engine.Delete, engine.Release); err != nil {
		return err
	}
	if err := x.seed(ctx, st.Plan.Desired, false); err != nil {
		return err
	}
	if err := x.finish(ctx); err != nil {
		return err
	}
	if x.op.Power == engine.StatusRunning {
		return x.do("start", x.b().StartDomain(ctx, x.op.Name))
	}
	return nil
}

// replace stages the new boot volume, makes new volumes and stores the new definition while the
// old member still runs, so that a bad image, a full pool or a definition libvirt refuses fails
// before anything stops; then it stops and undefines the
// old domain, recreates its stateless volumes, keeps its preserved ones, and defines and starts
// the new domain under the same name.
func (x *opRun) replace(ctx context.Context) error {
	marked, err := x.markInFlight(ctx)
	if err != nil {
		return err
	}
	st := x.op.Step
	var boot engine.VolumeOp
	for _, v := range x.op.Volumes {
		if v.DeviceName == engine.BootDeviceName && v.Fate == engine.Recreate {
			boot = v
		}
	}
	if x.op.Staging != "" {
		// A staged volume left by an interrupted replacement may back onto another image.
		if err := x.do("delete volume "+x.op.Staging, x.b().DeleteVolume(ctx, x.s.Pool, x.op.Staging)); err != nil {
			return err
		}
		spec := backend.VolumeSpec{Pool: x.s.Pool, Name: x.op.Staging, SizeMiB: boot.SizeMiB, BackingPath: boot.BackingImage}
		if _, err := x.b().EnsureVolume(ctx, spec); err != nil {
			return x.do("stage the new boot volume", err)
		}
	}
	if err := x.volumes(ctx, engine.Keep); err != nil {
		return err
	}
	// libvirt checks the new definition when it is stored over the running domain's persistent
	// one; the domain keeps running on its old definition until it stops. The definition that
	// follows the stop is the same, under a new UUID, so it does not fail on its content.
	check := domainSpec(x.s, st.Plan.Desired, record(x.s, st.Index, marked))
	check.UUID = st.UUID
	if err := x.do("define the new definition", x.b().DefineDomain(ctx, check)); err != nil {
		return err
	}
	if err := x.stop(ctx); err != nil {
		return err
	}
	if err := x.do("undefine", x.b().UndefineDomain(ctx, x.op.Name)); err != nil {
		return err
	}
	if err := x.volumes(ctx, engine.Recreate, engine.Delete, engine.Release); err != nil {
		return err
	}
	if x.op.Staging != "" {
		if err := x.do("delete volume "+x.op.Staging, x.b().DeleteVolume(ctx, x.s.Pool, x.op.Staging)); err != nil {
			return err
		}
	}
	if err := x.seed(ctx, st.Plan.Desired, false); err != nil {
		return err
	}
	replaced := st.Plan.Applied(st.Template)
	replaced.Created = x.r.now().UnixMilli()
	if st.Heal > 0 {
		replaced.Heals, replaced.LastHeal = st.Heal, replaced.Created
	} else if !st.ResetHeals {
		replaced.Heals, replaced.LastHeal = x.current().Heals, x.current().LastHeal
	}
	if err := x.do("define", x.b().DefineDomain(ctx, domainSpec(x.s, st.Plan.Desired, record(x.s, st.Index, replaced)))); err != nil {
		return err
	}
	if x.op.Power == engine.StatusRunning {
		return x.do("start", x.b().StartDomain(ctx, x.op.Name))
	}
	return nil
}
