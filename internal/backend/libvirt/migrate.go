package libvirt

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

// migrateFlags make a live, peer-to-peer migration that copies the disks into the volumes the
// caller made on the destination, defines the domain there and undefines it here.
const migrateFlags = golibvirt.MigratePeer2peer | golibvirt.MigrateLive | golibvirt.MigratePersistDest |
	golibvirt.MigrateUndefineSource | golibvirt.MigrateNonSharedDisk

// abortEvery is how often the job is asked again to abort while libvirt says there is no job
// to abort: the migration job has not begun yet.
const abortEvery = 200 * time.Millisecond

// MigrateLive runs the migration as one call to this host's daemon, which connects to
// m.DestURI itself. When m.Timeout passes (0: no bound but ctx) or ctx ends, the migration job
// is aborted (DomainAbortJob), which makes libvirt end it with the domain running here; the
// connection is not cut, since that would leave the job running in the daemon.
//
// The call is not made again after a lost connection: the migration may have gone on in the
// daemons, and whether it finished is for the caller to observe on both hosts.
func (b *Backend) MigrateLive(ctx context.Context, name string, m backend.Migration) error {
	const op = "migrate domain"
	if err := ctx.Err(); err != nil {
		return &cutError{op: op, object: name, uri: b.uri, ctxErr: err}
	}
	dest := redactURI(m.DestURI)
	b.handles.forget(name)
	start := time.Now()
	sent := false
	var stopped string
	var perr error // the migration call's own failure
	// do runs without ctx's cancellation: ctx ending aborts the job (below), it does not cut the
	// connection under the call.
	err := b.do(context.WithoutCancel(ctx), op, name, func(c conn) error {
		if sent {
			return fmt.Errorf("%s %s to %s: the connection was lost during the migration, whose outcome is unknown: look for the domain on both hosts", op, name, dest)
		}
		d, err := c.lookup(name)
		if err != nil {
			return err
		}
		sent = true
		abort := c.abortOn(ctx, d, m.Timeout)
		_, perr = c.l.DomainMigratePerform3Params(d, golibvirt.OptString{m.DestURI}, nil, nil, migrateFlags)
		stopped = abort()
		return perr
	})
	b.handles.forget(name)
	if err == nil {
		tflog.SubsystemInfo(ctx, Subsystem, "migrated domain", map[string]any{"domain": name, "destination": dest, "seconds": time.Since(start).Seconds()})
		return nil
	}
	var lerr golibvirt.Error
	if perr == nil || !errors.Is(err, perr) || !errors.As(err, &lerr) {
		// The lookup failed, or the connection did.
		return err
	}
	// libvirt answered with its own error: the migration did not happen, and the domain runs on
	// here (a peer-to-peer migration that fails resumes it at its source).
	switch stopped {
	case "timeout":
		return fmt.Errorf("%s %s to %s: aborted when its time (%s) ran out: %w; the domain runs on here (%w)", op, name, dest, m.Timeout, err, backend.ErrNotMigrated)
	case "context":
		return fmt.Errorf("%s %s to %s: aborted, the operation's %w: %w; the domain runs on here (%w)", op, name, dest, ctx.Err(), err, backend.ErrNotMigrated)
	}
	return fmt.Errorf("%s %s to %s on %s: %w (%w)", op, name, dest, b.uri, err, backend.ErrNotMigrated)
}

// abortOn aborts the domain's job when timeout passes (0: never) or ctx ends, until the
// returned function is called; that function says why the job was aborted ("timeout",
// "context") or "" when it was not.
func (c conn) abortOn(ctx context.Context, d golibvirt.Domain, timeout time.Duration) func() string {
	done := make(chan struct{})
	var mu sync.Mutex
	why := ""
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var expired <-chan time.Time
		if timeout > 0 {
			t := time.NewTimer(timeout)
			defer t.Stop()
			expired = t.C
		}
		select {
		case <-done:
			return
		case <-expired:
			mu.Lock()
			why = "timeout"
			mu.Unlock()
		case <-ctx.Done():
			mu.Lock()
			why = "context"
			mu.Unlock()
		}
		tick := time.NewTicker(abortEvery)
		defer tick.Stop()
		for {
			err := c.l.DomainAbortJob(d)
			if err == nil || !isCode(err, golibvirt.ErrOperationInvalid) {
				tflog.SubsystemWarn(ctx, Subsystem, "aborted migration job", map[string]any{"domain": d.Name, "reason": why, "error": fmt.Sprint(err)})
				return
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() string {
		close(done)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return why
	}
}

// redactURI masks any password in a URI for errors and logs.
func redactURI(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return "(a URI that does not parse)"
	}
	return u.Redacted()
}

// MigrationRunning asks the domain's job: a migration out of here runs as one (bounded or
// unbounded) until it ends.
func (b *Backend) MigrationRunning(ctx context.Context, name string) (bool, error) {
	running := false
	err := b.do(ctx, "read the job of", name, func(c conn) error {
		d, err := c.lookup(name)
		if isNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		typ, _, _, _, _, _, _, _, _, _, _, _, err := c.l.DomainGetJobInfo(d)
		if isNotFoundLibvirt(err) {
			return nil
		}
		if err != nil {
			return wrap("read the job of", name, err)
		}
		running = golibvirt.DomainJobType(typ) == golibvirt.DomainJobBounded || golibvirt.DomainJobType(typ) == golibvirt.DomainJobUnbounded
		return nil
	})
	return running, err
}
