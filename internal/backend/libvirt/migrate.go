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

// migrateGraces is how many of the Backend's graces (abandonGrace: 30 s in all) a migration
// whose job was asked to abort may take to return before it is abandoned with its connection:
// libvirt ends an aborted job within a second or so; one that does not return by then is stuck
// on its connection, not in the daemon.
const migrateGraces = 3

// MigrateLive runs the migration as one call to this host's daemon, which connects to
// m.DestURI itself. When m.Timeout passes (0: no bound but ctx) or ctx ends, the migration job
// is aborted (DomainAbortJob), which makes libvirt end it with the domain running here; the
// connection is not cut then, since that would leave the job running in the daemon.
//
// The call runs on a connection of its own (as streams do), and the aborts on the Backend's:
// a migration stuck on its connection neither blocks nor is blocked by other calls. A call that
// has not returned migrateGraces*grace after its abort was asked for is abandoned, its connection
// closed, and the outcome is for the caller to observe on both hosts.
//
// The call is not made again after a lost connection: the migration may have gone on in the
// daemons, and whether it finished is for the caller to observe on both hosts.
func (b *Backend) MigrateLive(ctx context.Context, name string, m backend.Migration) error {
	const op = "migrate domain"
	ctx, cancel := bounded(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return &cutError{op: op, object: name, uri: b.uri, ctxErr: err, why: cause(ctx)}
	}
	dest := redactURI(m.DestURI)
	b.handles.forget(name)
	var d golibvirt.Domain
	if err := b.do(ctx, op, name, func(c conn) error {
		var err error
		d, err = c.lookup(name)
		return err
	}); err != nil {
		return err
	}
	k, err := b.own(ctx, op, name)
	if err != nil {
		return err
	}
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := k.l.DomainMigratePerform3Params(d, golibvirt.OptString{m.DestURI}, nil, nil, migrateFlags)
		done <- err
	}()
	asked, stop := b.abortOn(ctx, d, m.Timeout)
	var perr error
	select {
	case perr = <-done:
	case <-asked:
		t := time.NewTimer(migrateGraces * b.grace)
		select {
		case perr = <-done:
			t.Stop()
		case <-t.C:
			t.Stop()
			stop()
			tflog.SubsystemError(ctx, Subsystem, "abandoned a libvirt call and its connection",
				map[string]any{"uri": b.uri, "operation": op, "object": name, "destination": dest, "grace_seconds": (migrateGraces * b.grace).Seconds()})
			k.retire()
			b.handles.forget(name)
			return fmt.Errorf("%s %s to %s on %s: the migration was asked to abort and did not return within %s: abandoned with its connection; its outcome is unknown: look for the domain on both hosts", op, name, dest, b.uri, migrateGraces*b.grace)
		}
	}
	stopped := stop()
	b.handles.forget(name)
	var lerr golibvirt.Error
	switch {
	case perr == nil:
		k.close()
		tflog.SubsystemInfo(ctx, Subsystem, "migrated domain", map[string]any{"domain": name, "destination": dest, "seconds": time.Since(start).Seconds()})
		return nil
	case !errors.As(perr, &lerr):
		// The connection failed under the call, not libvirt.
		k.retire()
		return fmt.Errorf("%s %s to %s on %s: the connection was lost during the migration (%s), whose outcome is unknown: look for the domain on both hosts", op, name, dest, b.uri, describeLoss(op, perr))
	}
	k.close()
	err = perr
	// libvirt answered with its own error: the migration did not happen, and the domain runs on
	// here (a peer-to-peer migration that fails resumes it at its source).
	switch stopped {
	case "timeout":
		return fmt.Errorf("%s %s to %s: aborted when its time (%s) ran out: %w; the domain runs on here (%w)", op, name, dest, m.Timeout, err, backend.ErrNotMigrated)
	case "context":
		return fmt.Errorf("%s %s to %s: aborted, the %w: %w; the domain runs on here (%w)", op, name, dest, cause(ctx), err, backend.ErrNotMigrated)
	}
	return fmt.Errorf("%s %s to %s on %s: %w (%w)", op, name, dest, b.uri, err, backend.ErrNotMigrated)
}

// abortEachBound bounds one attempt to abort a migration job: the abort runs after the
// operation's context ended, on the Backend's connection.
const abortEachBound = 30 * time.Second

// abortOn aborts the domain's job when timeout passes (0: never) or ctx ends, until stop is
// called; asked is closed when the abort is first asked for, and stop says why the job was
// aborted ("timeout", "context") or "" when it was not.
func (b *Backend) abortOn(ctx context.Context, d golibvirt.Domain, timeout time.Duration) (asked <-chan struct{}, stop func() string) {
	done := make(chan struct{})
	askedc := make(chan struct{})
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
		close(askedc)
		tick := time.NewTicker(abortEvery)
		defer tick.Stop()
		for {
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortEachBound)
			err := b.do(actx, "abort the migration job of", d.Name, func(c conn) error {
				return c.l.DomainAbortJob(d)
			})
			cancel()
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
	var once sync.Once
	return askedc, func() string {
		once.Do(func() { close(done) })
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
