package reconcile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/hostfile"
)

// A source_image that is a host file outside every pool, on a host whose files are this
// machine's, is read here through a judged descriptor (hostfile.Open): once at observation, for
// its digest, which names the group's copy (engine.HostImage), and once more by the plan's
// TaskImportImage, which streams it into that copy and checks the copy's bytes. libvirt is never
// given the path.

// hostImages describes the group's source_image on each of hosts whose files the provider reads
// (ReadsFiles), when it is a host file no pool holds. A file that cannot be opened or copied
// is described by its problem, for the plan to block the members it would make.
func (r *Reconciler) hostImages(ctx context.Context, s engine.GroupState, hosts []string, down map[string]error) map[string]engine.HostImage {
	src := s.Group.Template.BootDisk.SourceImage
	if r.ReadsFiles == nil || !strings.HasPrefix(src, "/") {
		return nil
	}
	var out map[string]engine.HostImage
	for _, h := range hosts {
		if _, isDown := down[h]; isDown || !r.ReadsFiles(engine.HostOf(h)) {
			continue
		}
		if img, ok := s.RecordedImage(h, src); ok {
			// The group's copy: the file is not read again, whatever its name reaches now.
			if out == nil {
				out = map[string]engine.HostImage{}
			}
			out[engine.HostOf(h)] = img
			continue
		}
		b, err := r.host(h)
		if err != nil || inPool(ctx, b, s.Pool, src) {
			continue
		}
		img, err := describeImage(src)
		if err != nil {
			img = engine.HostImage{Source: src, Problem: err.Error()}
		}
		if out == nil {
			out = map[string]engine.HostImage{}
		}
		out[engine.HostOf(h)] = img
	}
	return out
}

// poolLookup is what inPool asks of a host: a volume by name or path, and the pools.
type poolLookup interface {
	backend.Volumes
	backend.Pools
}

// inPool reports whether src is a volume of a pool on b (or a link to one): such an image is
// the pool's, handed to libvirt by path and checked at each use by the backend. A host that
// does not answer counts as a pool's, so that nothing is copied on its say.
func inPool(ctx context.Context, b poolLookup, pool, src string) bool {
	_, err := b.LookupVolume(ctx, pool, src)
	if !errors.Is(err, backend.ErrNotFound) {
		return true
	}
	// A name in a pool's directory that the pool does not list (a volume swapped for a link,
	// which a refreshed pool may skip) is the pool's, never a host file to copy: the backend
	// refuses it at use.
	pools, err := b.ListPools(ctx)
	if err != nil {
		return true
	}
	for _, p := range pools {
		if p.Path != "" && filepath.Dir(src) == filepath.Clean(p.Path) {
			return true
		}
	}
	if resolved, rerr := filepath.EvalSymlinks(src); rerr == nil && resolved != src {
		_, err = b.LookupVolume(ctx, pool, resolved)
		return !errors.Is(err, backend.ErrNotFound)
	}
	return false
}

// imageKey is a file's identity and version: the same key is the same bytes, so its digest is
// read once per process.
type imageKey struct {
	dev, ino     uint64
	size, mtime  int64
	source, path string
}

var imageDigests sync.Map // imageKey -> engine.HostImage

// describeImage opens src by descriptor and describes the image it reaches: format, sizes and
// the sha256 of its bytes.
func describeImage(src string) (engine.HostImage, error) {
	f, o, err := hostfile.Open(src, hostfile.LocalOwners(os.Geteuid()))
	if err != nil {
		return engine.HostImage{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return engine.HostImage{}, err
	}
	key := imageKey{dev: o.Dev, ino: o.Ino, size: fi.Size(), mtime: fi.ModTime().UnixNano(), source: src, path: o.Path}
	if img, ok := imageDigests.Load(key); ok {
		return img.(engine.HostImage), nil
	}
	hdr, err := hostfile.ReadImage(f, fi.Size())
	if err != nil {
		if o.Path != src {
			return engine.HostImage{}, fmt.Errorf("%q (%s): %w", src, o.Path, err)
		}
		return engine.HostImage{}, fmt.Errorf("%q: %w", src, err)
	}
	sum := sha256.New()
	n, err := io.Copy(sum, io.NewSectionReader(f, 0, fi.Size()))
	if err != nil {
		return engine.HostImage{}, fmt.Errorf("read %q (%s): %w", src, o.Path, err)
	}
	if n != fi.Size() {
		return engine.HostImage{}, fmt.Errorf("read %q (%s): %d bytes of %d: it changed while it was read", src, o.Path, n, fi.Size())
	}
	img := engine.HostImage{Source: src, Format: hdr.Format, SHA256: hex.EncodeToString(sum.Sum(nil)), Bytes: hdr.Bytes, VirtualBytes: hdr.VirtualBytes}
	imageDigests.Store(key, img)
	return img, nil
}

// imageLocks serialises the imports of one image volume: the members a wave creates at once
// share it, and the first makes it. It is the process's (one terraform command), as the
// volumes it made or checked are.
var images imageLocks

type imageLocks struct {
	mu    sync.Mutex
	locks map[imageVolumeKey]*sync.Mutex
	// done are the image volumes made or checked by this process.
	done map[imageVolumeKey]bool
}

// imageVolumeKey is one image volume of one connection. It holds the backend itself, not its
// address: a key made of a pointer's printed address outlived the backend it named, and a later
// backend allocated at the same address (another connection, a test's fake) was taken for it,
// its image volume counted as made when it was not.
type imageVolumeKey struct {
	b            backend.Volumes
	pool, volume string
}

func (l *imageLocks) lock(key imageVolumeKey) func() {
	l.mu.Lock()
	if l.locks == nil {
		l.locks, l.done = map[imageVolumeKey]*sync.Mutex{}, map[imageVolumeKey]bool{}
	}
	m, ok := l.locks[key]
	if !ok {
		m = &sync.Mutex{}
		l.locks[key] = m
	}
	l.mu.Unlock()
	m.Lock()
	return m.Unlock
}

func (l *imageLocks) isDone(key imageVolumeKey) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.done[key]
}

func (l *imageLocks) markDone(key imageVolumeKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done[key] = true
}

// importImage makes the group's image volume img.Volume from the host file img.Source, read
// through a descriptor judged when it is opened (a link swapped since the plan is refused, or
// its bytes differ from the digest the plan named, and nothing is made), unless the volume is
// there; either way the volume's bytes are checked against the digest before any overlay backs
// onto it. A volume of that name whose bytes differ is not the group's copy and is left.
func (x *opRun) importImage(ctx context.Context, img *engine.HostImage) error {
	b, pool := x.volumes(), x.s.Pool
	step := fmt.Sprintf("copy source_image %s into volume %s", img.Source, img.Volume)
	// Keyed by the backend too: another connection (another provider, a test's fake) is
	// another host for all this process knows.
	key := imageVolumeKey{b: b, pool: pool, volume: img.Volume}
	unlock := images.lock(key)
	defer unlock()
	if images.isDone(key) {
		return nil
	}
	_, err := b.StatVolume(ctx, pool, img.Volume)
	switch {
	case err == nil:
		if err := x.checkImage(ctx, img); err != nil {
			return x.do(step, err)
		}
	case errors.Is(err, backend.ErrNotFound):
		if err := x.uploadImage(ctx, img); err != nil {
			return x.do(step, err)
		}
	default:
		return x.do(step, err)
	}
	images.markDone(key)
	return nil
}

// uploadImage streams the host file into a new image volume and checks what was read and what
// the volume holds.
func (x *opRun) uploadImage(ctx context.Context, img *engine.HostImage) error {
	b, pool := x.volumes(), x.s.Pool
	f, o, err := hostfile.Open(img.Source, hostfile.LocalOwners(os.Geteuid()))
	if err != nil {
		return err
	}
	defer f.Close()
	read := sha256.New()
	spec := backend.VolumeUpload{Pool: pool, Name: img.Volume, Format: img.Format, CapacityBytes: img.VirtualBytes, Bytes: img.Bytes}
	if err := b.UploadVolume(ctx, spec, io.TeeReader(io.NewSectionReader(f, 0, int64(img.Bytes)), read)); err != nil {
		return err
	}
	if got := hex.EncodeToString(read.Sum(nil)); got != img.SHA256 {
		derr := b.DeleteVolume(context.WithoutCancel(ctx), pool, img.Volume)
		return errors.Join(fmt.Errorf("%q (%s) changed since the plan read it (sha256 %s then, %s now): the copy is deleted; plan again", img.Source, o.Path, img.SHA256, got), derr)
	}
	if err := x.checkImage(ctx, img); err != nil {
		derr := b.DeleteVolume(context.WithoutCancel(ctx), pool, img.Volume)
		return errors.Join(err, derr)
	}
	tflog.Info(ctx, "source_image copied into the group's pool", map[string]any{"group": x.s.Group.Name, "source_image": img.Source, "file": o.Path, "volume": img.Volume, "bytes": img.Bytes, "sha256": img.SHA256})
	return nil
}

// checkImage reads the image volume back and compares its bytes with the digest.
func (x *opRun) checkImage(ctx context.Context, img *engine.HostImage) error {
	ctx, seen, stop := x.watched(ctx)
	defer stop()
	sum := sha256.New()
	n, err := x.volumes().DownloadVolume(ctx, x.s.Pool, img.Volume, io.MultiWriter(sum, seen))
	if err != nil {
		if cause := context.Cause(ctx); cause != nil {
			err = errors.Join(err, cause)
		}
		return err
	}
	if got := hex.EncodeToString(sum.Sum(nil)); uint64(n) != img.Bytes || got != img.SHA256 {
		return fmt.Errorf("volume %s of pool %s holds %d bytes with sha256 %s, and source_image %q has %d bytes with sha256 %s: it is not the group's copy of the image, and is left as it is (delete it with `virsh vol-delete --pool %s %s` if nothing else uses it)",
			img.Volume, x.s.Pool, n, got, img.Source, img.Bytes, img.SHA256, x.s.Pool, img.Volume)
	}
	return nil
}

// recordImages lists the image volumes the plan makes in the group's record before it runs,
// so that a run stopped half-way leaves none that the group's destroy does not know of.
func (r *Reconciler) recordImages(ctx context.Context, s *engine.GroupState, add map[string][]engine.HostImage) error {
	images, changed := s.AddImages(add)
	if !changed {
		return nil
	}
	_, err := r.changeStored(ctx, s.Group.Name, s.Pool, nil, func(st *stored, exists bool) error {
		if !exists {
			// As place: a group without a record (a test's) has nowhere to keep them.
			return errNoPlacement
		}
		st.Images, _ = st.AddImages(add)
		return nil
	}, true)
	switch {
	case errors.Is(err, errNoPlacement):
		return nil
	case err == nil:
		s.Images = images
	}
	return err
}
