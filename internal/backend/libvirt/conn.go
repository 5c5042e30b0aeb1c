// Package libvirt implements backend.Backend on a libvirt daemon over go-libvirt, with the XML
// built and parsed by libvirtxml. It needs no cgo.
package libvirt

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

// reconnectPatience is how long a lost connection is dialled again before the call fails: long
// enough for a daemon restart (measured: libvirtd answers again within a second of starting).
const reconnectPatience = 10 * time.Second

// Subsystem is the tflog subsystem the backend logs under.
const Subsystem = "backend"

// DefaultURI is used when neither the provider configuration nor LIBVIRT_DEFAULT_URI names one.
const DefaultURI = "qemu:///system"

const defaultSocket = "/var/run/libvirt/libvirt-sock"

// Backend is a connection to one libvirt daemon. go-libvirt multiplexes concurrent calls over the
// one connection, so a Backend serves every resource of a provider configuration at once. When
// that connection is lost, the first method to notice replaces it (see reconnect.go); when a
// call is cut off on it, it is retired and the next call opens another (link.go). So cur is
// only read through current(). Volume streams and migrations run on connections of their own.
type Backend struct {
	uri string
	u   *url.URL

	mu     sync.RWMutex // guards cur and closed
	cur    *link        // nil before the first connection and after one was retired
	closed bool
	// reconnectMu makes one caller at a time reconnect; the others wait for its connection.
	reconnectMu sync.Mutex
	// patience is how long a reconnect keeps dialling a daemon that does not answer yet, so that
	// an apply outlives a libvirtd restart.
	patience time.Duration
	// grace is how long a call whose connection was closed under it may take to return before
	// it is abandoned (abandonGrace; tests shorten it).
	grace time.Duration
	// dialFailed, when set, is told of each failed attempt to reconnect (tests bring the daemon
	// back from it).
	dialFailed func(error)
	// callEnded, when set, is told when the goroutine of a call run by within has ended, its
	// result handed over or left in its buffer (tests of abandoned calls wait for it).
	callEnded func()

	// caps holds the host's capabilities and domain capabilities (domcaps.go).
	caps capsCache

	handles handles     // of the domains the last listing saw
	pools   poolHandles // of the pools volumes were made in

	// snapshotting holds the volumes a snapshot call works on (snapshot.go).
	snapshotting volumeLocks
}

var _ backend.Backend = (*Backend)(nil)

// Connect opens a connection to the libvirt daemon at uri. Transports are those of go-libvirt:
// the local unix socket (with ?socket= to choose it), +tcp, +tls, +ssh and +libssh (see dial.go).
// Errors and logs show the URI with any password in it masked.
func Connect(uri string) (*Backend, error) {
	return ConnectContext(context.Background(), uri)
}

// ConnectContext is Connect within ctx's deadline (the default bound when it has none): a daemon
// that accepts the connection and never answers fails it when ctx ends.
func ConnectContext(ctx context.Context, uri string) (*Backend, error) {
	b, err := Lazy(uri)
	if err != nil {
		return nil, err
	}
	ctx, cancel := bounded(ctx)
	defer cancel()
	k, err := openWithin(ctx, b.u, b.grace)
	if err != nil {
		return nil, b.connectError(err)
	}
	b.cur = k
	return b, nil
}

// Lazy is a backend for the daemon at uri that connects on its first call, and again on each
// later call until one connection succeeds: a host that does not answer fails the calls made
// to it, not the provider's configuration. Only a URI that cannot be parsed is refused here.
func Lazy(uri string) (*Backend, error) {
	if err := CheckURI(uri); err != nil {
		return nil, err
	}
	u, err := url.Parse(uri)
	if err != nil {
		return nil, err // CheckURI parsed it
	}
	return &Backend{uri: u.Redacted(), u: u, patience: reconnectPatience, grace: abandonGrace}, nil
}

// connectError is the error of a first connection that failed: where, by which transport, why
// (no password shown) and how to bring that daemon up.
func (b *Backend) connectError(err error) error {
	return fmt.Errorf("cannot connect to libvirt at %s (%s): %s. %s", b.uri, describeTransport(b.u), redact(err, b.u), startHint(b.u))
}

// redact masks the URI's password wherever err's message repeats it.
func redact(err error, u *url.URL) string {
	msg := err.Error()
	if pw, ok := u.User.Password(); ok && pw != "" {
		msg = strings.ReplaceAll(msg, pw, "xxxxx")
	}
	return msg
}

func describeTransport(u *url.URL) string {
	scheme := strings.SplitN(u.Scheme, "+", 2)
	if len(scheme) == 2 && scheme[1] != "unix" {
		return "transport " + scheme[1] + " to host " + u.Host
	}
	sock := u.Query().Get("socket")
	if sock == "" {
		sock = defaultSocket
	}
	return "unix socket " + sock
}

// startHint says what to check for the URI's transport when the daemon cannot be reached.
func startHint(u *url.URL) string {
	switch transportOf(u) {
	case "ssh", "libssh", "libssh2":
		return "Check that sshd answers on " + u.Host + " and accepts the key (?keyfile=, else ~/.ssh/id_* or ssh-agent) for the URI's user, " +
			"that the host key is in known_hosts (ssh to the host once), that the user may use libvirt there (root, or the libvirt group), " +
			"that sshd allows stream-local forwarding (AllowStreamLocalForwarding), and that libvirtd runs there."
	case "tls":
		return "Check that libvirtd on " + u.Host + " listens for TLS (listen_tls = 1, or virtproxyd-tls.socket; port 16514 unless the URI gives one), " +
			"and that ?pkipath= (default ~/.pki/libvirt, /etc/pki for root) holds cacert.pem, clientcert.pem and clientkey.pem that the host's CA signed."
	case "tcp":
		return "Check that libvirtd on " + u.Host + " listens on TCP (listen_tcp = 1, or virtproxyd-tcp.socket; port 16509 unless the URI gives one) " +
			"with auth_tcp = \"none\": the provider does not speak SASL."
	case "unix":
		return "Check that libvirtd runs on this machine (start it with `systemctl start libvirtd`, or `systemctl start virtqemud.socket` where the modular daemons are used; " +
			"for qemu:///session, the user's own daemon starts with `libvirtd --daemon`), and that this user may open its socket (root, or the libvirt group)."
	}
	return "The provider speaks the unix, ssh, libssh, tls and tcp transports."
}

// Close ends the connection, without waiting for it: a connection stuck in a call would hold
// Close as long (see link.close). A closed backend does not reconnect.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	if b.cur != nil {
		b.cur.close()
		b.cur = nil
	}
	return nil
}

// URI is the URI the backend is connected to.
func (b *Backend) URI() string { return b.uri }

// Raw exposes the go-libvirt client, for tests and benchmarks that need the floor. It is the
// current connection: after a reconnect, a client obtained earlier is closed.
func (b *Backend) Raw() *golibvirt.Libvirt { return b.client() }

// opError is a libvirt failure with the operation and the object it was about.
type opError struct {
	op, object string
	err        error
}

func (e *opError) Error() string { return fmt.Sprintf("%s %s: %v", e.op, e.object, e.err) }
func (e *opError) Unwrap() error { return e.err }

// Is makes errors.Is(err, backend.ErrNotFound) hold for libvirt's "no such object" errors.
func (e *opError) Is(target error) bool {
	if target != backend.ErrNotFound {
		return false
	}
	var lerr golibvirt.Error
	if !errors.As(e.err, &lerr) {
		return false
	}
	switch golibvirt.ErrorNumber(lerr.Code) {
	case golibvirt.ErrNoDomain, golibvirt.ErrNoStorageVol, golibvirt.ErrNoStoragePool, golibvirt.ErrNoNetwork:
		return true
	}
	return false
}

func wrap(op, object string, err error) error {
	if err == nil {
		return nil
	}
	return &opError{op: op, object: object, err: err}
}

func isCode(err error, code golibvirt.ErrorNumber) bool {
	var lerr golibvirt.Error
	return errors.As(err, &lerr) && golibvirt.ErrorNumber(lerr.Code) == code
}
