package fake

import "github.com/virtfleet/terraform-provider-virt/internal/backend"

// The fake implements every piece of backend.Backend, so that a test can hand a consumer the
// one piece it takes. Each piece's methods have a file of their own: Host in host.go and
// caps.go, Domains in fake.go, Metadata in metadata.go, Devices in devices.go, Seeds in seeds.go,
// GuestAgent in guestagent.go, Networks in networks.go, Volumes in volume.go (their streams in
// move.go), Pools in pool.go, Snapshots in snapshot.go, Migrator in move.go, GroupRecords in grouprecord.go.
var (
	_ backend.Host         = (*Backend)(nil)
	_ backend.Domains      = (*Backend)(nil)
	_ backend.Metadata     = (*Backend)(nil)
	_ backend.Devices      = (*Backend)(nil)
	_ backend.Seeds        = (*Backend)(nil)
	_ backend.GuestAgent   = (*Backend)(nil)
	_ backend.Networks     = (*Backend)(nil)
	_ backend.Volumes      = (*Backend)(nil)
	_ backend.Pools        = (*Backend)(nil)
	_ backend.Snapshots    = (*Backend)(nil)
	_ backend.Migrator     = (*Backend)(nil)
	_ backend.GroupRecords = (*Backend)(nil)
)
