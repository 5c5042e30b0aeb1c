package reconcile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// The executor's side of moves between hosts (engine's moves.go): copying a volume from one host
// to another through the provider's two connections, checked; the live migration; and the
// hosts' UUIDs, which tell the engine whether a move can be live.

// hostUUIDCache caches each host's UUID: a daemon's does not change while the provider runs.
var hostUUIDCache sync.Map // backend.Backend -> string

// hostUUIDs are the UUIDs of the group's hosts, by host, for a group on more than one host (a
// group on one moves nothing); a host that did not answer, or cannot tell, is left out, which
// makes its moves cold.
func (r *Reconciler) hostUUIDs(ctx context.Context, hosts []string, down map[string]error) map[string]string {
	if len(hosts) < 2 {
		return nil
	}
	return r.readUUIDs(ctx, hosts, down)
}

// readUUIDs reads the UUIDs of hosts that are not down, as hostUUIDs does, for any number of
// hosts.
func (r *Reconciler) readUUIDs(ctx context.Context, hosts []string, down map[string]error) map[string]string {
	out := map[string]string{}
	for _, h := range hosts {
		if _, isDown := down[h]; isDown {
			continue
		}
		b, err := r.host(h)
		if err != nil {
			continue
		}
		if id, ok := hostUUIDCache.Load(b); ok {
			out[h] = id.(string)
			continue
		}
		var id string
		err = readHost(ctx, h, func(ctx context.Context) error {
			var err error
			id, err = b.HostUUID(ctx)
			return err
		})
		if err != nil {
			tflog.Warn(ctx, "cannot read the host's UUID: its moves are cold", map[string]any{"host": h, "error": err.Error()})
			continue
		}
		hostUUIDCache.Store(b, id)
		out[h] = id
	}
	return out
}

// onHost is the backend a task runs on: its Host's, or the operation's.
func (x *opRun) onHost(t engine.Task) (backend.Backend, error) {
	if t.Host == "" || engine.HostOf(t.Host) == engine.HostOf(x.op.Host) {
		return x.backend, nil
	}
	return x.r.host(t.Host)
}

// copyVolume copies the volume from the operation's host (src) to dst through the provider's two
// connections, hashing the bytes as they pass, then reads the copy back and checks its length
// and checksum: the copy is trusted only then. A source without the volume is an error unless
// optional. A copy that ends short (libvirt's stream gave fewer bytes than the volume has, which a
// host has done right after an apply streaming from it was killed) or stalls (no byte for
// stallBound: go-libvirt has been seen to hang in a stream) is made again, twice at most, from a
// clean target: the upload deletes what it made of a short copy, and a whole one that fails its
// check is deleted here.
func (x *opRun) copyVolume(ctx context.Context, src, dst backend.Volumes, host string, t engine.Task) error {
	pool, name := x.s.Pool, t.Volume.Volume
	step := fmt.Sprintf("copy volume %s to host %s", name, engine.HostOf(host))
	const tries = 3
	for try := 1; ; try++ {
		st, err := src.StatVolume(ctx, pool, name)
		if errors.Is(err, backend.ErrNotFound) && t.Optional {
			return nil
		}
		if err != nil {
			return x.do(step, err)
		}
		sum, sent, derr, uerr := x.stream(ctx, src, dst, pool, name, st)
		var cerr error
		if derr == nil && uerr == nil && uint64(sent) == st.Bytes {
			if cerr = x.checkCopy(ctx, dst, host, name, st, sum); cerr == nil {
				return nil
			}
		}
		if try < tries && ctx.Err() == nil {
			tflog.Warn(ctx, "volume copy failed: making it again", map[string]any{"group": x.s.Group.Name, "instance": x.op.Name, "volume": name,
				"to": engine.HostOf(host), "sent": sent, "bytes": st.Bytes, "download_error": fmt.Sprint(derr), "upload_error": fmt.Sprint(uerr),
				"check_error": fmt.Sprint(cerr), "try": try})
			if uerr == nil {
				// The upload took what came as whole: its volume goes before the next try.
				if err := dst.DeleteVolume(ctx, pool, name); err != nil {
					return x.do(step, err)
				}
			}
			continue
		}
		switch {
		case derr != nil:
			return x.do(step, fmt.Errorf("download from the source: %w", derr))
		case uerr != nil:
			return x.do(step, uerr)
		case uint64(sent) != st.Bytes:
			return x.do(step, fmt.Errorf("the source sent %d bytes of %d: the copy is not trusted and is deleted by the next apply", sent, st.Bytes))
		}
		return cerr
	}
}

// DefaultStallBound is how long a volume stream may pass no byte before it is cut off
// (Reconciler.StallBound): go-libvirt has been seen to hang in a stream (its reader goroutine
// blocked on a channel nobody reads), which no time bound of the operation would end for long.
const DefaultStallBound = time.Minute

// watched is ctx cancelled once no byte has gone through the returned writer for stallBound; stop
// ends the watch.
func (x *opRun) watched(ctx context.Context) (context.Context, io.Writer, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	bound := x.r.StallBound
	if bound <= 0 {
		bound = DefaultStallBound
	}
	w := &progress{now: x.r.now}
	w.last.Store(x.r.now().UnixNano())
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(min(time.Second, bound/4))
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if x.r.now().Sub(time.Unix(0, w.last.Load())) > bound {
					cancel(fmt.Errorf("the stream passed no byte for %s", bound))
					return
				}
			}
		}
	}()
	return ctx, w, func() { close(done); cancel(nil) }
}

// progress notes when a byte last went through it, on the reconciler's clock.
type progress struct {
	now  func() time.Time
	last atomic.Int64
}

func (p *progress) Write(b []byte) (int, error) {
	p.last.Store(p.now().UnixNano())
	return len(b), nil
}

// stream pipes the volume's download from src into its upload to dst, hashing the bytes as they
// pass: their sha256, how many the download sent, and each side's error. Both are cut off when
// the stream stalls.
func (x *opRun) stream(ctx context.Context, src, dst backend.Volumes, pool, name string, st backend.VolumeStat) (sum string, sent int64, derr, uerr error) {
	ctx, seen, stop := x.watched(ctx)
	defer stop()
	pr, pw := io.Pipe()
	h := sha256.New()
	type result struct {
		n   int64
		err error
	}
	downloaded := make(chan result, 1)
	go func() {
		n, err := src.DownloadVolume(ctx, pool, name, io.MultiWriter(pw, h, seen))
		pw.CloseWithError(err)
		downloaded <- result{n, err}
	}()
	uerr = dst.UploadVolume(ctx, backend.VolumeUpload{Pool: pool, Name: name, Format: st.Format, CapacityBytes: st.CapacityBytes, Bytes: st.Bytes}, pr)
	pr.CloseWithError(uerr) // ends the download when the upload stopped early
	d := <-downloaded
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		derr = errors.Join(d.err, cause)
	} else {
		derr = d.err
	}
	return hex.EncodeToString(h.Sum(nil)), d.n, derr, uerr
}

// checkCopy reads the copy back from dst and checks its length and checksum against the
// source's (want).
func (x *opRun) checkCopy(ctx context.Context, dst backend.Volumes, host, name string, st backend.VolumeStat, want string) error {
	ctx, seen, stop := x.watched(ctx)
	defer stop()
	check := sha256.New()
	got, err := dst.DownloadVolume(ctx, x.s.Pool, name, io.MultiWriter(check, seen))
	if err != nil {
		if cause := context.Cause(ctx); cause != nil {
			err = errors.Join(err, cause)
		}
		return x.do("check the copy of volume "+name, err)
	}
	if have := hex.EncodeToString(check.Sum(nil)); uint64(got) != st.Bytes || have != want {
		return x.do("check the copy of volume "+name, fmt.Errorf("the copy on host %s has %d bytes with sha256 %s; the source has %d bytes with sha256 %s: the copy is not trusted and the member stays on its source",
			engine.HostOf(host), got, have, st.Bytes, want))
	}
	tflog.Info(ctx, "volume copied and checked", map[string]any{"group": x.s.Group.Name, "instance": x.op.Name, "volume": name, "to": engine.HostOf(host), "bytes": got, "sha256": want})
	return nil
}

// prepareVolume makes an empty volume on dst with the capacity of the source's, for a live
// migration to copy the disk into.
func (x *opRun) prepareVolume(ctx context.Context, src, dst backend.Volumes, t engine.Task) error {
	name := t.Volume.Volume
	st, err := src.StatVolume(ctx, x.s.Pool, name)
	if err != nil {
		return x.do("read volume "+name, err)
	}
	sizeMiB := int64((st.CapacityBytes + (1<<20 - 1)) >> 20)
	_, err = dst.EnsureVolume(ctx, backend.VolumeSpec{Pool: x.s.Pool, Name: name, SizeMiB: sizeMiB, Fresh: true})
	return x.do("make volume "+name+" for the migration", err)
}

// migrate migrates the member live to host from src. When libvirt does not migrate it (it
// refused, failed or was aborted, and the member runs on at its source), cold is true and the
// caller runs the engine's other tasks for the move instead: it goes on cold. A failure whose
// outcome is unknown (the connection was lost during the call) stops the operation, for the next
// apply to find the member where it is.
func (x *opRun) migrate(ctx context.Context, src backend.Migrator, host string, t engine.Task) (cold bool, err error) {
	step := "migrate live to host " + engine.HostOf(host)
	uri, ok := x.r.URIs[engine.HostOf(host)]
	if !ok {
		return false, x.do(step, fmt.Errorf("the provider has no URI for host %s", engine.HostOf(host)))
	}
	err = src.MigrateLive(ctx, x.op.Name, backend.Migration{DestURI: uri, Timeout: t.Timeout})
	if err == nil {
		return false, nil
	}
	if errors.Is(err, backend.ErrNotMigrated) && len(t.Otherwise) > 0 {
		tflog.Warn(ctx, "live move not possible: the member moves cold (stopped, copied, checked, started on the target)", map[string]any{
			"group": x.s.Group.Name, "instance": x.op.Name, "to": engine.HostOf(host), "libvirt": err.Error()})
		msg := fmt.Sprintf("%s: live move to host %s not possible (%v); it moved cold: stopped, copied, checked and started on host %s", x.op.Name, engine.HostOf(host), err, engine.HostOf(host))
		progressed(ctx, msg, x.op)
		warned(ctx, "Live move not possible: moved cold", msg+". Set distribution_policy.live = false to plan such moves cold, or give the target host a URI its source host's daemon can open.")
		return true, nil
	}
	return false, x.do(step, err)
}

// undefineCopy undefines the member's copy on b, which a move left there once the target had the
// member: only a stopped domain carrying the group's record for the member, with its UUID. A
// running one, or another domain of the name, fails the task with nothing touched.
func (x *opRun) undefineCopy(ctx context.Context, b backend.Domains, host string) error {
	step := "undefine the source's copy on host " + engine.HostOf(host)
	doms, err := b.ListDomains(ctx, x.op.Name, x.op.Name)
	if err != nil {
		return x.do(step, err)
	}
	for _, d := range doms {
		if d.Name != x.op.Name {
			continue
		}
		if d.Record == nil || d.Record.Group != x.s.Group.Name || d.UUID != x.op.Step.UUID {
			return x.do(step, fmt.Errorf("the domain %s on host %s is not the member's copy (another record or UUID): nothing of it was touched; remove it or rename it, and apply again", d.Name, engine.HostOf(host)))
		}
		if d.Status == engine.StatusRunning {
			return x.do(step, fmt.Errorf("the member's copy on host %s runs (started after the move stopped it and copied its volumes): which copy is the member is yours to say. Stop the copy you do not want (virsh destroy) and apply again; nothing was touched", engine.HostOf(host)))
		}
		return x.do(step, b.UndefineDomain(ctx, d.Name))
	}
	return nil
}
