package libvirt

import (
	"context"
	"fmt"
	"io"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"libvirt.org/go/libvirtxml"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

// The copy of a volume between hosts: its size and format read, its bytes downloaded from one
// host and uploaded to another through the provider's two connections (stream.go says how the
// streams are run).

// cleanupTimeout bounds the deletion of a half-made volume after a failed upload, which runs
// even when the upload failed because its context ended.
const cleanupTimeout = 30 * time.Second

// StatVolume reads the volume's format from its XML, its capacity, and its file's length, which
// libvirt gives as the physical size (VIR_STORAGE_VOL_GET_PHYSICAL): the allocation is the
// blocks the file uses, less than its length when it is sparse, and the download streams the
// length.
func (b *Backend) StatVolume(ctx context.Context, pool, name string) (backend.VolumeStat, error) {
	var st backend.VolumeStat
	err := b.do(ctx, "read volume", pool+"/"+name, func(c conn) error {
		v, err := c.volume(pool, name)
		if err != nil {
			return err
		}
		st, err = c.statVolume(v)
		return err
	})
	return st, err
}

// volume looks the volume up by pool and name; ErrNotFound when either is missing.
func (c conn) volume(pool, name string) (golibvirt.StorageVol, error) {
	p, err := c.pool(pool)
	if err != nil {
		return golibvirt.StorageVol{}, err
	}
	v, err := c.l.StorageVolLookupByName(p, name)
	return v, wrap("look up volume", pool+"/"+name, err)
}

func (c conn) statVolume(v golibvirt.StorageVol) (backend.VolumeStat, error) {
	object := v.Pool + "/" + v.Name
	doc, err := c.l.StorageVolGetXMLDesc(v, 0)
	if err != nil {
		return backend.VolumeStat{}, wrap("read volume", object, err)
	}
	var x libvirtxml.StorageVolume
	if err := x.Unmarshal(doc); err != nil {
		return backend.VolumeStat{}, fmt.Errorf("read volume %s: libvirt's XML: %w", object, err)
	}
	st := backend.VolumeStat{}
	if x.Target != nil && x.Target.Format != nil {
		st.Format = x.Target.Format.Type
	}
	_, capacity, physical, err := c.l.StorageVolGetInfoFlags(v, uint32(golibvirt.StorageVolGetPhysical))
	if err != nil {
		return backend.VolumeStat{}, wrap("read volume size", object, err)
	}
	st.CapacityBytes, st.Bytes = capacity, physical
	return st, nil
}

// DownloadVolume streams the whole volume (length 0 is "to the end") into w. The stream runs
// once: a lost connection fails it, as does w failing.
func (b *Backend) DownloadVolume(ctx context.Context, pool, name string, w io.Writer) (int64, error) {
	const op = "download volume"
	object := pool + "/" + name
	var v golibvirt.StorageVol
	err := b.do(ctx, op, object, func(c conn) error {
		var err error
		v, err = c.volume(pool, name)
		return err
	})
	if err != nil {
		return 0, err
	}
	var s *sink
	start := time.Now()
	err = b.stream(ctx, op, object, false, func(c conn, cut func()) error {
		s = &sink{w: w, cut: cut, gate: c.gate}
		err := c.l.StorageVolDownload(v, s, 0, 0, 0)
		if s.err != nil {
			return fmt.Errorf("%s %s: writing its content failed after %d bytes: %w", op, object, s.n.Load(), s.err)
		}
		if err != nil {
			return failedStream(c, op, object, s.n.Load(), err)
		}
		return nil
	})
	n := int64(0)
	if s != nil {
		n = int64(s.n.Load())
	}
	if err != nil {
		return n, err
	}
	tflog.SubsystemDebug(ctx, Subsystem, "downloaded volume", map[string]any{"pool": pool, "volume": name, "bytes": n, "seconds": time.Since(start).Seconds()})
	return n, nil
}

// UploadVolume makes the volume and streams spec.Bytes bytes of r into it.
//
// The volume is made raw, of exactly spec.Bytes bytes, whatever spec.Format says, because
// libvirt's upload writes over the file without truncating it: a volume made as a fresh qcow2
// keeps the tail of its own header after a shorter upload (measured with libvirt 9.0: 196,624
// bytes after an upload of 1,000). After the upload libvirt reads the file again, and takes its
// format and capacity from the bytes as it did on the source host; UploadVolume checks them
// against spec, and the length against spec.Bytes, so that a copy that would differ fails.
func (b *Backend) UploadVolume(ctx context.Context, spec backend.VolumeUpload, r io.Reader) error {
	const op = "upload volume"
	object := spec.Pool + "/" + spec.Name
	v, err := b.createForUpload(ctx, spec)
	if err != nil {
		return err
	}
	start := time.Now()
	src := &source{ctx: ctx, r: r, want: spec.Bytes}
	err = b.stream(ctx, op, object, true, func(c conn, _ func()) error {
		err := c.l.StorageVolUpload(v, src, 0, spec.Bytes, 0)
		if src.err != nil {
			return fmt.Errorf("%s %s: %w", op, object, src.err)
		}
		if err != nil {
			return failedStream(c, op, object, src.n, err)
		}
		return nil
	})
	if err == nil {
		err = b.checkUpload(ctx, spec)
	}
	if err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if derr := b.DeleteVolume(cctx, spec.Pool, spec.Name); derr != nil {
			return fmt.Errorf("%w; deleting the half-made volume failed too: %v", err, derr)
		}
		return err
	}
	tflog.SubsystemDebug(ctx, Subsystem, "uploaded volume", map[string]any{"pool": spec.Pool, "volume": spec.Name, "bytes": spec.Bytes, "format": spec.Format, "seconds": time.Since(start).Seconds()})
	return nil
}

// createForUpload makes the raw volume an upload writes, refusing a name that is taken.
//
// A create whose answer the connection lost and that runs again finds the volume it made: as
// EnsureVolume does, it counts that one as its own, since the caller deletes any leftover of
// the name before an upload.
func (b *Backend) createForUpload(ctx context.Context, spec backend.VolumeUpload) (golibvirt.StorageVol, error) {
	object := spec.Pool + "/" + spec.Name
	doc, err := (&libvirtxml.StorageVolume{
		Name:       spec.Name,
		Capacity:   &libvirtxml.StorageVolumeSize{Unit: "bytes", Value: spec.Bytes},
		Allocation: &libvirtxml.StorageVolumeSize{Unit: "bytes", Value: 0},
		Target:     &libvirtxml.StorageVolumeTarget{Format: &libvirtxml.StorageVolumeTargetFormat{Type: "raw"}},
	}).Marshal()
	if err != nil {
		return golibvirt.StorageVol{}, fmt.Errorf("build volume XML for %s: %w", object, err)
	}
	var v golibvirt.StorageVol
	sent := false
	err = b.do(ctx, "create volume", object, func(c conn) error {
		p, err := c.pool(spec.Pool)
		if err != nil {
			return err
		}
		retry := sent
		sent = true
		v, err = c.l.StorageVolCreateXML(p, doc, 0)
		switch {
		case err == nil:
			return nil
		case isCode(err, golibvirt.ErrStorageVolExist) && retry:
			v, err = c.l.StorageVolLookupByName(p, spec.Name)
			return wrap("look up volume", object, err)
		case isCode(err, golibvirt.ErrStorageVolExist):
			return fmt.Errorf("upload volume %s on %s: a volume of that name is there already (%v); an upload never writes over one: %w", object, b.uri, err, backend.ErrExists)
		}
		return wrap("create volume", object, err)
	})
	return v, err
}

// checkUpload compares the uploaded volume with what the upload was to make. libvirt reads the
// volume's format and capacity from its bytes again after an upload, in a thread of its own that
// may not have run yet: the pool is refreshed first, so that the check, and a definition that
// takes the disk's format from the pool, see the uploaded bytes' format and never the raw the
// volume was made as (a qcow2 image opened raw would be written over as raw).
func (b *Backend) checkUpload(ctx context.Context, spec backend.VolumeUpload) error {
	if err := b.RefreshPool(ctx, spec.Pool); err != nil {
		return err
	}
	st, err := b.StatVolume(ctx, spec.Pool, spec.Name)
	if err != nil {
		return err
	}
	if st.Bytes != spec.Bytes || st.CapacityBytes != spec.CapacityBytes || st.Format != spec.Format {
		return fmt.Errorf("upload volume %s/%s on %s: libvirt reads the uploaded volume as %s of capacity %d bytes in a file of %d bytes; the upload was to make %s of capacity %d bytes in %d bytes",
			spec.Pool, spec.Name, b.uri, st.Format, st.CapacityBytes, st.Bytes, spec.Format, spec.CapacityBytes, spec.Bytes)
	}
	return nil
}

// HostUUID reads the host's UUID from its capabilities (read once per connection).
func (b *Backend) HostUUID(ctx context.Context) (string, error) {
	caps, err := b.hostCaps(ctx)
	if err != nil {
		return "", err
	}
	if caps.Host.UUID == "" {
		return "", fmt.Errorf("read host UUID of %s: the host's capabilities give none", b.uri)
	}
	return caps.Host.UUID, nil
}
