package libvirt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"github.com/hashicorp/terraform-plugin-log/tflogtest"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

func TestConnectionLost(t *testing.T) {
	t.Parallel()
	noDomain := golibvirt.Error{Code: uint32(golibvirt.ErrNoDomain), Message: "Domain not found"}
	cases := map[string]struct {
		err       error
		connected bool
		want      bool
	}{
		"no error":                              {nil, true, false},
		"libvirt answered":                      {noDomain, true, false},
		"libvirt answered, wrapped":             {wrap("look up domain", "db-1", noDomain), true, false},
		"libvirt answered, then disconnected":   {noDomain, false, false},
		"call after the close":                  {wrap("list domains", "qemu:///system", syscall.EINVAL), false, true},
		"call after the close, not yet noticed": {syscall.EINVAL, true, true},
		"waiting for the answer":                {golibvirt.ErrInterrupted, true, true},
		"write to a closed socket": {&net.OpError{Op: "write", Net: "unix", Err: os.NewSyscallError("write", syscall.EPIPE)},
			true, true},
		"reset by peer":                      {fmt.Errorf("read: %w", syscall.ECONNRESET), true, true},
		"ssh channel ended":                  {io.EOF, true, true},
		"cut short":                          {io.ErrUnexpectedEOF, true, true},
		"connection closed":                  {net.ErrClosed, true, true},
		"cancelled":                          {context.Canceled, false, false},
		"deadline":                           {fmt.Errorf("wait: %w", context.DeadlineExceeded), false, false},
		"our own failure, connected":         {errors.New("build domain XML for db-1: bad"), true, false},
		"our own failure, disconnected":      {errors.New("build domain XML for db-1: bad"), false, true},
		"parse failure of an empty document": {parseError("db-1", io.EOF), true, false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := connectionLost(c.err, c.connected); got != c.want {
				t.Errorf("connectionLost(%v, connected=%v) = %v, want %v", c.err, c.connected, got, c.want)
			}
		})
	}
}

func TestLostErrorMessage(t *testing.T) {
	t.Parallel()
	uri := "qemu:///system"
	refused := errors.New("failed to connect to libvirt: dial unix /var/run/libvirt/libvirt-sock: connect: connection refused")
	notFound := wrap("look up domain", "db-1", golibvirt.Error{Code: uint32(golibvirt.ErrNoDomain), Message: "Domain not found: no domain with matching name 'db-1'"})
	cases := map[string]struct {
		err          *lostError
		want         string
		wantNotFound bool
	}{
		"reconnect failed, the method's own step": {
			err:  &lostError{op: "list domains", uri: uri, cause: wrap("list domains", uri, syscall.EINVAL), next: refused, hint: "Start the daemon."},
			want: "list domains on qemu:///system: connection to libvirt lost (the connection had already closed: invalid argument); reconnect failed: failed to connect to libvirt: dial unix /var/run/libvirt/libvirt-sock: connect: connection refused. Start the daemon.",
		},
		"reconnect failed, another step": {
			err:  &lostError{op: "start domain", object: "db-1", uri: uri, cause: wrap("look up domain", "db-1", golibvirt.ErrInterrupted), next: refused},
			want: "start domain db-1 on qemu:///system: connection to libvirt lost (look up domain db-1: the connection closed while the call waited for its answer: procedure interrupted while awaiting response); reconnect failed: " + refused.Error(),
		},
		"retry failed": {
			err:          &lostError{op: "start domain", object: "db-1", uri: uri, cause: wrap("start domain", "db-1", golibvirt.ErrInterrupted), next: notFound, retried: true},
			want:         "start domain db-1 on qemu:///system: connection to libvirt lost (the connection closed while the call waited for its answer: procedure interrupted while awaiting response); reconnected, but the retry failed: " + notFound.Error(),
			wantNotFound: true,
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := c.err.Error(); got != c.want {
				t.Errorf("message:\n got %s\nwant %s", got, c.want)
			}
			if got := errors.Is(c.err, backend.ErrNotFound); got != c.wantNotFound {
				t.Errorf("errors.Is(err, ErrNotFound) = %v, want %v", got, c.wantNotFound)
			}
		})
	}
}

// TestAccGoLibvirtLostConnection pins down what go-libvirt returns when libvirtd goes away, by
// cutting a proxied connection under a bare client, and checks that connectionLost knows each
// answer. Should a go-libvirt upgrade change them, this test says so.
func TestAccGoLibvirtLostConnection(t *testing.T) {
	requireAcc(t)
	p := startProxy(t, defaultSocket)
	u, err := url.Parse(p.uri())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		// lose breaks the connection around a call and returns the call's error.
		lose func(l *golibvirt.Libvirt) error
		want error // nil when either of two errors can win a race
	}{
		{
			name: "call after go-libvirt saw the close",
			lose: func(l *golibvirt.Libvirt) error {
				p.cut()
				<-l.Disconnected()
				_, _, err := l.ConnectListAllDomains(1, 0)
				return err
			},
			want: syscall.EINVAL,
		},
		{
			name: "call waiting for its answer",
			lose: func(l *golibvirt.Libvirt) error {
				p.stall()
				done := make(chan error, 1)
				go func() { _, _, err := l.ConnectListAllDomains(1, 0); done <- err }()
				<-p.swallowed
				p.cut()
				return <-done
			},
			want: golibvirt.ErrInterrupted,
		},
		{
			name: "call right after the close",
			lose: func(l *golibvirt.Libvirt) error {
				p.cut()
				_, _, err := l.ConnectListAllDomains(1, 0)
				return err
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, err := golibvirt.ConnectToURI(u)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = l.Disconnect() }()
			// One call that works first. Besides showing the proxy forwards, it orders go-libvirt's
			// own goroutines after ConnectToURI, whose write of its disconnected channel races
			// with its watcher goroutine's read under -race otherwise (a go-libvirt bug).
			if _, _, err := l.ConnectListAllDomains(1, 0); err != nil {
				t.Fatalf("list through the proxy: %v", err)
			}
			err = c.lose(l)
			t.Logf("go-libvirt returned %T %#v: %v (IsConnected %v)", err, err, err, l.IsConnected())
			if c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("got %v, want %v", err, c.want)
			}
			if !connectionLost(err, l.IsConnected()) {
				t.Errorf("connectionLost(%v) = false", err)
			}
		})
	}
}

// TestAccReconnect cuts the backend's connection in each way libvirtd dying can meet a call,
// and checks that the call succeeds anyway through exactly one new connection.
func TestAccReconnect(t *testing.T) {
	requireAcc(t)
	ctx := context.Background()
	p := startProxy(t, defaultSocket)
	b := connectAcc(t, p.uri())
	if _, err := b.ListDomains(ctx, "tfacc-"); err != nil {
		t.Fatalf("list through the proxy: %v", err)
	}
	cases := []struct {
		name string
		// run breaks the connection around one or more calls of list and returns their errors.
		run func(old *golibvirt.Libvirt, list func() error) []error
	}{
		{
			name: "call after go-libvirt saw the close",
			run: func(old *golibvirt.Libvirt, list func() error) []error {
				p.cut()
				<-old.Disconnected()
				return []error{list()}
			},
		},
		{
			name: "call waiting for its answer",
			run: func(_ *golibvirt.Libvirt, list func() error) []error {
				p.stall()
				done := make(chan error, 1)
				go func() { done <- list() }()
				<-p.swallowed
				p.cut()
				return []error{<-done}
			},
		},
		{
			name: "call right after the close",
			run: func(_ *golibvirt.Libvirt, list func() error) []error {
				p.cut()
				return []error{list()}
			},
		},
		{
			name: "many callers at once",
			run: func(old *golibvirt.Libvirt, list func() error) []error {
				p.cut()
				<-old.Disconnected()
				errs := make([]error, 8)
				var wg sync.WaitGroup
				for i := range errs {
					wg.Add(1)
					go func() { defer wg.Done(); errs[i] = list() }()
				}
				wg.Wait()
				return errs
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var logs lockedBuffer
			ctx := tflog.NewSubsystem(tflogtest.RootLogger(ctx, &logs), Subsystem)
			list := func() error { _, err := b.ListDomains(ctx, "tfacc-"); return err }
			old, before := b.Raw(), p.connections()
			for i, err := range c.run(old, list) {
				if err != nil {
					t.Errorf("call %d failed: %v", i, err)
				}
			}
			if b.Raw() == old {
				t.Errorf("the backend still uses the lost connection")
			}
			if got := p.connections() - before; got != 1 {
				t.Errorf("%d new connections, want 1", got)
			}
			entries, err := tflogtest.MultilineJSONDecode(&logs.buf)
			if err != nil {
				t.Fatal(err)
			}
			reconnects := 0
			for _, e := range entries {
				switch e["@message"] {
				case "lost the connection to libvirt; reconnecting once":
					if e["operation"] != "list domains" || e["uri"] != p.uri() || e["cause"] == nil {
						t.Errorf("loss logged without its fields: %v", e)
					}
				case "reconnected to libvirt":
					reconnects++
				}
			}
			if reconnects != 1 {
				t.Errorf("%d reconnects logged, want 1: %v", reconnects, entries)
			}
		})
	}
}

// TestAccReconnect_daemonGone closes the proxy for good: the reconnect fails, and the error
// names the operation, the object and the URI, says the connection was lost, and gives the
// reconnect's failure.
func TestAccReconnect_daemonGone(t *testing.T) {
	requireAcc(t)
	ctx := context.Background()
	p := startProxy(t, defaultSocket)
	b := connectAcc(t, p.uri())
	b.patience = 300 * time.Millisecond
	if _, err := b.ListDomains(ctx, "tfacc-"); err != nil {
		t.Fatalf("list through the proxy: %v", err)
	}
	p.close()
	cases := map[string]struct {
		call func() error
		want []string
	}{
		"list domains": {
			call: func() error { _, err := b.ListDomains(ctx, "tfacc-"); return err },
			want: []string{"list domains on " + p.uri(), "connection to libvirt lost", "reconnect failed", "dial unix " + p.path},
		},
		"start domain": {
			call: func() error { return b.StartDomain(ctx, "tfacc-bk-gone") },
			want: []string{"start domain tfacc-bk-gone on " + p.uri(), "connection to libvirt lost", "reconnect failed", "dial unix " + p.path},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			err := c.call()
			if err == nil {
				t.Fatal("succeeded with the daemon gone")
			}
			t.Log(err)
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestAccReconnect_lostAnswer drops the answer to a call libvirtd did carry out, then cuts the
// connection, as when libvirtd dies between doing the work and answering. The retry on the new
// connection must then accept what the first attempt did: a second define of the domain, a
// second write of the group record's generation, and a volume that is there now because this
// call made it.
func TestAccReconnect_lostAnswer(t *testing.T) {
	requireAcc(t)
	ctx := context.Background()
	p := startProxy(t, defaultSocket)
	b := connectAcc(t, p.uri())
	name := "tfacc-bk-lost-" + testSuffix()
	const pool = "virt"
	cases := []struct {
		name string
		// answered is how many of the method's calls are answered before the one whose answer is
		// lost.
		answered int
		call     func() error
		check    func(t *testing.T)
		cleanup  func() error
	}{
		{
			name: "define domain",
			call: func() error {
				return b.DefineDomain(ctx, backend.DomainSpec{Name: name, Shape: engine.Shape{DomainType: "qemu", VCPU: 1, MemoryMiB: 64}})
			},
			check: func(t *testing.T) {
				doms, err := b.ListDomains(ctx, name)
				if err != nil || len(doms) != 1 {
					t.Errorf("domains named %s: %v, %v; want one", name, doms, err)
				}
			},
			cleanup: func() error { return b.UndefineDomain(ctx, name) },
		},
		{
			name: "write group record",
			call: func() error {
				return b.WriteGroupRecord(ctx, name, backend.GroupRecord{Pool: pool, Generation: 1, Data: []byte(`{"n":1}`)})
			},
			check: func(t *testing.T) {
				rec, err := b.ReadGroupRecord(ctx, name)
				// The stored body is indented for people; checksum compares it compacted.
				if err != nil || rec.Generation != 1 || checksum(rec.Data) != checksum([]byte(`{"n":1}`)) {
					t.Errorf("read back %+v, %v; want generation 1", rec, err)
				}
			},
			cleanup: func() error { return b.DeleteGroupRecord(ctx, pool, name) },
		},
		{
			name: "create volume",
			// The pool's and the volume's look-ups are answered; the create's answer is lost.
			answered: 2,
			call: func() error {
				created, err := b.EnsureVolume(ctx, backend.VolumeSpec{Pool: pool, Name: name + ".qcow2", SizeMiB: 1})
				if err == nil && !created {
					return errors.New("EnsureVolume says it reused the volume it created")
				}
				return err
			},
			check: func(t *testing.T) {
				vols, err := b.ListVolumes(ctx, pool, name)
				if err != nil || len(vols) != 1 {
					t.Errorf("volumes named %s: %v, %v; want one", name, vols, err)
				}
			},
			cleanup: func() error { return b.DeleteVolume(ctx, pool, name+".qcow2") },
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Cleanup(func() {
				if err := c.cleanup(); err != nil {
					t.Errorf("clean up: %v", err)
				}
			})
			before := p.connections()
			p.dropReply(c.answered)
			done := make(chan error, 1)
			go func() { done <- c.call() }()
			<-p.swallowed
			p.cut()
			if err := <-done; err != nil {
				t.Fatalf("failed after the answer was lost: %v", err)
			}
			if got := p.connections() - before; got != 1 {
				t.Errorf("%d new connections, want 1", got)
			}
			c.check(t)
		})
	}
}

// TestAccReconnect_retryFails loses the connection under a call that then fails on the new
// connection for a reason of its own: the error gives the loss as the cause and the retry's
// failure after it, and still wraps ErrNotFound.
func TestAccReconnect_retryFails(t *testing.T) {
	requireAcc(t)
	ctx := context.Background()
	p := startProxy(t, defaultSocket)
	b := connectAcc(t, p.uri())
	// A call that works first also orders go-libvirt's goroutines for -race (see
	// TestAccGoLibvirtLostConnection).
	if _, err := b.ListDomains(ctx, "tfacc-"); err != nil {
		t.Fatalf("list through the proxy: %v", err)
	}
	old := b.Raw()
	p.cut()
	<-old.Disconnected()
	name := "tfacc-bk-missing-" + testSuffix()
	err := b.StartDomain(ctx, name)
	t.Log(err)
	want := []string{
		"start domain " + name + " on " + p.uri(),
		"connection to libvirt lost (look up domain " + name + ": the connection had already closed: invalid argument)",
		"reconnected, but the retry failed: look up domain " + name + ": Domain not found",
	}
	for _, w := range want {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v does not contain %q", err, w)
		}
	}
	if !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("errors.Is(%v, ErrNotFound) = false", err)
	}
}

// TestAccReconnect_daemonBack: the daemon is away when the connection is found lost and comes
// back while the reconnect keeps dialling: the call succeeds, as an apply should through a
// libvirtd restart.
func TestAccReconnect_daemonBack(t *testing.T) {
	requireAcc(t)
	ctx := context.Background()
	p := startProxy(t, defaultSocket)
	b := connectAcc(t, p.uri())
	if _, err := b.ListDomains(ctx, "tfacc-"); err != nil {
		t.Fatalf("list through the proxy: %v", err)
	}
	failures := 0
	b.dialFailed = func(error) {
		if failures++; failures == 1 {
			if err := p.reopen(defaultSocket); err != nil {
				t.Errorf("reopen the proxy: %v", err)
			}
		}
	}
	p.close()
	if _, err := b.ListDomains(ctx, "tfacc-"); err != nil {
		t.Fatalf("list after the daemon came back: %v", err)
	}
	if failures != 1 {
		t.Fatalf("%d failed dials, want 1 before the daemon was back", failures)
	}
}
