package reconcile

import (
	"path"
	"strings"

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
		Name: desired.Name, Shape: desired.Shape, NICs: desired.NICs, Record: rec, Autostart: s.Group.Running,
		MACs: engine.MACAddresses(s.Group.Name, desired.Name, len(desired.NICs)),
	}
	for _, d := range desired.Disks {
		ds.Disks = append(ds.Disks, diskOf(s.Pool, d))
	}
	if desired.CloudInit != nil {
		seed := seedDisk(s, desired.Name)
		ds.Seed = &seed
	}
	if desired.NVRAM != "" {
		ds.NVRAM = &backend.Disk{DeviceName: engine.NVRAMDeviceName, Pool: s.Pool, Volume: desired.NVRAM}
	}
	if desired.ConsoleLogDir != "" {
		ds.ConsoleLog = path.Join(desired.ConsoleLogDir, desired.Name+".console.log")
	}
	// The console's password is the apply's (see opRun.graphicsOf), not the desired instance's.
	if g := desired.Graphics; g != nil {
		ds.Graphics = &backend.Graphics{Type: g.Type, Listen: g.Listen}
	}
	return ds
}

func seedDisk(s engine.GroupState, name string) backend.Disk {
	return backend.Disk{DeviceName: "cidata", Pool: s.Pool, Volume: engine.SeedVolumeName(name), ReadOnly: true}
}

// seedImage is the member's NoCloud seed: its name as instance-id and hostname, its effective
// metadata, and the template's cloud-init, with the write-only user data when it has some
// (userData, see opRun.userDataOf).
func seedImage(desired engine.DesiredInstance, userData string) ([]byte, error) {
	sd := seed.Seed{InstanceID: desired.Name, Hostname: desired.Name, Metadata: desired.Metadata}
	if ci := desired.CloudInit; ci != nil {
		sd.UserData, sd.NetworkConfig = ci.UserData, ci.NetworkConfig
		if ci.UserDataWOVersion > 0 {
			sd.UserData = userData
		}
	}
	return sd.ISO()
}
