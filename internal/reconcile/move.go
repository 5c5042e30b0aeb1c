package reconcile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// The executor's side of moves between hosts (engine's moves.go): copying a volume from one host
// to another through the provider's two connections, checked; the live migration; and the
// names of the hosts' machines, which tell the engine whether a move can be live.

// machineNames caches each host's machine name: a daemon's machine does not change while the
// provider runs.
var machineNames sync.Map // backend.Backend -> string

// machines are the names of the machines the group's hosts run on, by host, for a group on more
// than one host (a group on one moves nothing); a host that did not answer, or cannot tell, is
// left out, which makes its moves cold.
func (r *Reconciler) machines(ctx context.Context, hosts []string, down map[string]error) map[string]string {
	if len(hosts) < 2 {
		return nil
	}
	out := map[string]string{}
	for _, h := range hosts {
		if _, isDown := down[h]; isDown {
			continue
		}
		b, err := r.host(h)
		if err != nil {
			continue
		}
		if name, ok := machineNames.Load(b); ok {
			out[h] = name.(string)
			continue
		}
		name, err := b.Hostname(ctx)
		if err != nil {
			tflog.Warn(ctx, "cannot read the host's machine name: its moves are cold", map[string]any{"host": h, "error": err.Error()})
			continue
		}
		machineNames.Store(b, name)
		out[h] = name
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
// optional.
func (x *opRun) copyVolume(ctx context.Context, src, dst backend.Backend, host string, t engine.Task) error {
	pool, name := x.s.Pool, t.Volume.Volume
	step := fmt.Sprintf("copy volume %s to host %s", name, engine.HostOf(host))
	st, err := src.StatVolume(ctx, pool, name)
	if errors.Is(err, backend.ErrNotFound) && t.Optional {
		return nil
	}
	if err != nil {
		return x.do(step, err)
	}
	pr, pw := io.Pipe()
	sum := sha256.New()
	var sent int64
	go func() {
		n, err := src.DownloadVolume(ctx, pool, name, io.MultiWriter(pw, sum))
		sent = n
		pw.CloseWithError(err)
	}()
	err = dst.UploadVolume(ctx, backend.VolumeUpload{Pool: pool, Name: name, Format: st.Format, CapacityBytes: st.CapacityBytes, Bytes: st.Bytes}, pr)
	pr.CloseWithError(err) // ends the download when the upload stopped early
	if err != nil {
		return x.do(step, err)
	}
	want := hex.EncodeToString(sum.Sum(nil))
	if uint64(sent) != st.Bytes {
		return x.do(step, fmt.Errorf("the source sent %d bytes of %d: the copy is not trusted and is deleted by the next apply", sent, st.Bytes))
	}
	check := sha256.New()
	got, err := dst.DownloadVolume(ctx, pool, name, check)
	if err != nil {
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
func (x *opRun) prepareVolume(ctx context.Context, src, dst backend.Backend, t engine.Task) error {
	name := t.Volume.Volume
	st, err := src.StatVolume(ctx, x.s.Pool, name)
	if err != nil {
		return x.do("read volume "+name, err)
	}
	sizeMiB := int64((st.CapacityBytes + (1<<20 - 1)) >> 20)
	_, err = dst.EnsureVolume(ctx, backend.VolumeSpec{Pool: x.s.Pool, Name: name, SizeMiB: sizeMiB, Fresh: true})
	return x.do("make volume "+name+" for the migration", err)
}

// migrate migrates the member live to host.
func (x *opRun) migrate(ctx context.Context, host string, t engine.Task) error {
	uri, ok := x.r.URIs[engine.HostOf(host)]
	if !ok {
		return x.do("migrate to host "+engine.HostOf(host), fmt.Errorf("the provider has no URI for host %s", engine.HostOf(host)))
	}
	err := x.b().MigrateLive(ctx, x.op.Name, backend.Migration{DestURI: uri, Timeout: t.Timeout})
	if err != nil {
		err = fmt.Errorf("%w; the member runs on at its source, and the next apply tries again (set distribution_policy.live = false to move it cold: stopped, copied and started on the target)", err)
	}
	return x.do("migrate live to host "+engine.HostOf(host), err)
}

// undefineCopy undefines the member's copy on b, which a move left there once the target had the
// member: only a stopped domain carrying the group's record for the member, with its UUID. A
// running one, or another domain of the name, fails the task with nothing touched.
func (x *opRun) undefineCopy(ctx context.Context, b backend.Backend, host string) error {
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
