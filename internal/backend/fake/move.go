package fake

import (
	"context"
	"fmt"
	"io"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// Moves between fake hosts: a volume's Data copied through DownloadVolume and UploadVolume, and
// a live migration that hands the domain to the fake Peers names.

// format is the volume's format as libvirt would report it: Format when set, else qcow2 for a
// volume with a size or a backing image (EnsureVolume's), raw for one that only holds bytes (a
// seed, an NVRAM).
func (v *Volume) format() string {
	switch {
	case v.Format != "":
		return v.Format
	case v.SizeMiB > 0 || v.Backing != "":
		return engine.VolumeFormat
	}
	return "raw"
}

// capacity is the volume's virtual size: SizeMiB, or for a volume without one (a raw seed) the
// length of its Data, as libvirt gives a raw file's.
func (v *Volume) capacity() uint64 {
	if v.SizeMiB > 0 {
		return uint64(v.SizeMiB) << 20
	}
	return uint64(len(v.Data))
}

// StatVolume gives the volume's format and capacity (see format and capacity) and the length of
// its Data as its file's.
func (b *Backend) StatVolume(_ context.Context, pool, name string) (backend.VolumeStat, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("stat-volume", name); err != nil {
		return backend.VolumeStat{}, err
	}
	v, ok := b.Volumes[pool+"/"+name]
	if !ok {
		return backend.VolumeStat{}, fmt.Errorf("stat-volume %s/%s: %w", pool, name, backend.ErrNotFound)
	}
	return backend.VolumeStat{Format: v.format(), CapacityBytes: v.capacity(), Bytes: uint64(len(v.Data))}, nil
}

// DownloadVolume writes the volume's Data to w, outside the lock: w may be a pipe to an upload
// on this same fake.
func (b *Backend) DownloadVolume(ctx context.Context, pool, name string, w io.Writer) (int64, error) {
	b.mu.Lock()
	err := b.call("download-volume", name)
	v, ok := b.Volumes[pool+"/"+name]
	data := ""
	if ok {
		data = v.Data
	}
	b.mu.Unlock()
	switch {
	case err != nil:
		return 0, err
	case !ok:
		return 0, fmt.Errorf("download-volume %s/%s: %w", pool, name, backend.ErrNotFound)
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("download-volume %s/%s: %w", pool, name, err)
	}
	if data == "" {
		// An empty stream writes nothing, as libvirt's does: w may be a pipe whose reader took
		// its zero bytes and went.
		return 0, nil
	}
	n, err := io.WriteString(w, data)
	if err != nil {
		return int64(n), fmt.Errorf("download-volume %s/%s: writing after %d bytes: %w", pool, name, n, err)
	}
	return int64(n), nil
}

// UploadVolume makes the volume at once, as libvirt does before the stream, reads spec.Bytes
// bytes of r outside the lock, and stores them as its Data; a read that fails, ends short or
// outlives ctx deletes the volume. A capacity of whole MiB is kept as SizeMiB; any other leaves
// SizeMiB 0, so that the capacity reads as the Data's length, as a raw seed's does.
func (b *Backend) UploadVolume(ctx context.Context, spec backend.VolumeUpload, r io.Reader) error {
	key := spec.Pool + "/" + spec.Name
	b.mu.Lock()
	if err := b.call("upload-volume", spec.Name); err != nil {
		b.mu.Unlock()
		return err
	}
	if _, ok := b.Volumes[key]; ok {
		b.mu.Unlock()
		return fmt.Errorf("upload-volume %s: a volume of that name is there already: %w", key, backend.ErrExists)
	}
	v := &Volume{Format: spec.Format}
	if spec.CapacityBytes%(1<<20) == 0 {
		v.SizeMiB = int64(spec.CapacityBytes >> 20)
	}
	b.Volumes[key] = v
	b.mu.Unlock()

	data, err := io.ReadAll(io.LimitReader(r, int64(spec.Bytes)))
	switch {
	case err != nil:
		err = fmt.Errorf("upload-volume %s: reading the content failed after %d of its %d bytes: %w", key, len(data), spec.Bytes, err)
	case uint64(len(data)) < spec.Bytes:
		err = fmt.Errorf("upload-volume %s: the content ended after %d of its %d bytes", key, len(data), spec.Bytes)
	case ctx.Err() != nil:
		err = fmt.Errorf("upload-volume %s: %w", key, ctx.Err())
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil {
		if b.Volumes[key] == v {
			delete(b.Volumes, key)
		}
		return err
	}
	v.Data = string(data)
	return nil
}

// MigrateLive hands the running domain to the fake Peers[m.DestURI], as a peer-to-peer migration
// with non-shared disks does: the peer gets it running, defined, with the same UUID, spec and
// record (autostart off: libvirt does not carry it), and the Data of each of its writable disks'
// volumes copied into the peer's volumes of the same names, which must be there; here it is
// undefined, its volumes left as they are.
//
// As with libvirt, a read-only disk and the seed drive are not copied (their volumes must be on
// the peer, as QEMU there opens them), and a missing NVRAM is made on the peer from the
// firmware's template. A migration that takes longer (MigrateDuration) than m.Timeout is aborted
// at the timeout, moving Clock on by it, and the domain runs on here. The peer logs
// "migrate-in <name>", and fails it as FailOn and Hook say.
func (b *Backend) MigrateLive(ctx context.Context, name string, m backend.Migration) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("migrate %s: %w", name, err)
	}
	b.mu.Lock()
	d, peer, vols, err := b.migrateOut(name, m)
	b.mu.Unlock()
	if err != nil {
		// As libvirt: a failed migration leaves the domain running here.
		return fmt.Errorf("%w (%w)", err, backend.ErrNotMigrated)
	}
	if err := peer.migrateIn(name, d, vols); err != nil {
		return fmt.Errorf("migrate %s to %s: %w (%w)", name, m.DestURI, err, backend.ErrNotMigrated)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Domains[name] == d {
		delete(b.Domains, name)
	}
	return nil
}

// migrateOut checks the migration on the source and reads what it hands over: the domain and
// the Data of its writable disks' volumes, by volume key.
func (b *Backend) migrateOut(name string, m backend.Migration) (*Domain, *Backend, map[string]string, error) {
	if err := b.call("migrate", name); err != nil {
		return nil, nil, nil, err
	}
	d, ok := b.Domains[name]
	if !ok {
		return nil, nil, nil, fmt.Errorf("migrate %s: %w", name, backend.ErrNotFound)
	}
	if d.ID < 0 {
		return nil, nil, nil, fmt.Errorf("migrate %s: Requested operation is not valid: domain is not running", name)
	}
	peer := b.Peers[m.DestURI]
	if peer == nil || peer == b {
		return nil, nil, nil, fmt.Errorf("migrate %s: unable to connect to server at '%s': no fake peer of that URI", name, m.DestURI)
	}
	if m.Timeout > 0 && b.MigrateDuration > m.Timeout {
		if b.Clock != nil {
			b.Clock.wait(m.Timeout)
		}
		return nil, nil, nil, fmt.Errorf("migrate %s to %s: aborted when its time (%s) ran out: operation aborted: migration out: canceled by client; the domain runs on here", name, m.DestURI, m.Timeout)
	}
	vols := map[string]string{}
	for _, disk := range d.Spec.Disks {
		if disk.Volume == "" || disk.ReadOnly {
			continue
		}
		v, ok := b.Volumes[disk.Pool+"/"+disk.Volume]
		if !ok {
			return nil, nil, nil, fmt.Errorf("migrate %s: the volume %s/%s of its disk %s is missing", name, disk.Pool, disk.Volume, disk.DeviceName)
		}
		vols[disk.Pool+"/"+disk.Volume] = v.Data
	}
	return d, peer, vols, nil
}

// migrateIn is the destination's side: the name must be free, the volumes there; the domain is
// defined and running when it returns.
func (b *Backend) migrateIn(name string, d *Domain, vols map[string]string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("migrate-in", name); err != nil {
		return err
	}
	if old, ok := b.Domains[name]; ok {
		return fmt.Errorf("operation failed: domain '%s' already exists with uuid %s", name, old.UUID)
	}
	need := []string{}
	for key := range vols {
		need = append(need, key)
	}
	if s := d.Spec.Seed; s != nil && s.Volume != "" {
		need = append(need, s.Pool+"/"+s.Volume)
	}
	for _, disk := range d.Spec.Disks {
		if disk.Volume != "" && disk.ReadOnly {
			need = append(need, disk.Pool+"/"+disk.Volume)
		}
	}
	for _, key := range need {
		if _, ok := b.Volumes[key]; !ok {
			return fmt.Errorf("cannot access storage file '/fake/%s': no such file or directory", key)
		}
	}
	for key, data := range vols {
		b.Volumes[key].Data = data
	}
	if nv := d.Spec.NVRAM; nv != nil {
		if _, ok := b.Volumes[nv.Pool+"/"+nv.Volume]; !ok {
			b.Volumes[nv.Pool+"/"+nv.Volume] = &Volume{Data: NVRAMTemplate}
		}
	}
	b.nextID++
	b.Domains[name] = &Domain{Spec: d.Spec, UUID: d.UUID, ID: b.nextID, Unmanaged: d.Unmanaged, IgnoresACPI: d.IgnoresACPI, Adoption: d.Adoption}
	return nil
}

// MigrationRunning reports a migration under way while MigrationPolls says the domain has polls
// left, one used per call: a migration a cut-off apply left, which ends on its own.
func (b *Backend) MigrationRunning(_ context.Context, name string) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("migration-running", name); err != nil {
		return false, err
	}
	if b.MigrationPolls[name] > 0 {
		b.MigrationPolls[name]--
		return true, nil
	}
	return false, nil
}
