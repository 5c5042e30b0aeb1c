package libvirt

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/digitalocean/go-libvirt/socket"
	"github.com/digitalocean/go-libvirt/socket/dialers"
)

// go-libvirt takes no context, and its Disconnect first sends a goodbye call that waits for an
// answer as long as any other. So a call libvirtd never answers (a daemon stuck on a storage
// lock, a host gone from the network without a reset) can only be cut off by closing the socket
// under it: the call then fails at once with golibvirt.ErrInterrupted. go-libvirt keeps its socket
// to itself, so the backend dials through its own dialer and keeps the socket it made.

// cuttable is a dialer that remembers the socket it opened, so that it can be closed from outside.
type cuttable struct {
	d socket.Dialer

	mu   sync.Mutex
	c    net.Conn
	dead bool // cut: a socket dialled from now on is closed at once
}

func (d *cuttable) Dial() (net.Conn, error) {
	c, err := d.d.Dial()
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.c = c
	dead := d.dead
	d.mu.Unlock()
	if dead {
		_ = c.Close()
		return nil, errors.New("the connection was cut off before it was made")
	}
	// cut closes the socket itself; go-libvirt gets it measured when EnableRPCStats was called.
	return measure(c), nil
}

// cut closes the socket: every call waiting on it fails, and go-libvirt's reader marks the
// client disconnected. A cut before the socket is made closes it as soon as it is.
func (d *cuttable) cut() {
	d.mu.Lock()
	c := d.c
	d.dead = true
	d.mu.Unlock()
	if c != nil {
		_ = c.Close()
	}
}

// connectOn connects go-libvirt to the daemon at u through cd. It is not bounded: openWithin
// bounds it.
func connectOn(u *url.URL, cd *cuttable) (*golibvirt.Libvirt, error) {
	l := golibvirt.NewWithDialer(cd)
	if err := l.ConnectToURI(golibvirt.RemoteURI(u)); err != nil {
		if transportOf(u) == "tls" && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || strings.Contains(err.Error(), "EOF")) {
			// TLS 1.3 finishes the client's side of the handshake before the server has checked
			// the client's certificate: a refused certificate shows only as a connection closed
			// at the first message.
			return nil, fmt.Errorf("failed to connect to libvirt: the host closed the connection right after the TLS handshake (%w): libvirtd does that to a client certificate that its CA (ca_file) did not sign, that has expired, or whose name its tls_allowed_dn_list does not list", err)
		}
		return nil, fmt.Errorf("failed to connect to libvirt: %w", err)
	}
	return l, nil
}

// transportOf is the URI's transport: unix (the default), tcp, tls (also a plain qemu:// URI
// with a host), ssh or libssh.
func transportOf(u *url.URL) string {
	if scheme := strings.SplitN(u.Scheme, "+", 2); len(scheme) > 1 {
		return scheme[1]
	}
	if u.Host != "" {
		return "tls"
	}
	return "unix"
}

// dialerFor chooses go-libvirt's dialer for the URI's transport with the URI's parameters, as
// go-libvirt's ConnectToURI does (that mapping is not exported): unix (the default, ?socket=),
// tcp, tls (?pkipath=, ?no_verify=), ssh (the system's ssh defaults, ?keyfile=, ?no_verify=) and
// libssh (?known_hosts=, ?known_hosts_verify=, ?sshauth=).
func dialerFor(u *url.URL) (socket.Dialer, error) {
	q := u.Query()
	transport := transportOf(u)
	switch transport {
	case "unix":
		var opts []dialers.LocalOption
		if s := q.Get("socket"); s != "" {
			opts = append(opts, dialers.WithSocket(s))
		}
		if err := checkMode(q.Get("mode")); err != nil {
			return nil, err
		}
		return dialers.NewLocal(opts...), nil
	case "tcp":
		var opts []dialers.RemoteOption
		if port := u.Port(); port != "" {
			opts = append(opts, dialers.UsePort(port))
		}
		return dialers.NewRemote(u.Hostname(), opts...), nil
	case "tls":
		var opts []dialers.TLSOption
		if port := u.Port(); port != "" {
			opts = append(opts, dialers.UseTLSPort(port))
		}
		if p := q.Get("pkipath"); p != "" {
			opts = append(opts, dialers.UsePKIPath(p))
		}
		nv, err := noVerify(q.Get("no_verify"))
		if err != nil {
			return nil, err
		}
		if nv {
			opts = append(opts, dialers.WithInsecureNoVerify())
		}
		return dialers.NewTLS(u.Hostname(), opts...), nil
	case "libssh", "libssh2":
		opts, err := sshOptions(u, nil)
		if err != nil {
			return nil, err
		}
		if kh := q.Get("known_hosts"); kh != "" {
			opts = append(opts, dialers.UseKnownHostsFile(kh))
		}
		switch v := q.Get("known_hosts_verify"); v {
		case "", "normal":
		case "auto":
			opts = append(opts, dialers.WithAcceptUnknownHostKey())
		case "ignore":
			opts = append(opts, dialers.WithInsecureIgnoreHostKey())
		default:
			return nil, fmt.Errorf("known_hosts_verify=%q: want normal, auto or ignore", v)
		}
		if auth := q.Get("sshauth"); auth != "" {
			methods := &dialers.SSHAuthMethods{}
			for _, a := range strings.Split(auth, ",") {
				switch strings.ToLower(a) {
				case "agent":
					methods.Agent()
				case "privkey":
					methods.PrivKey()
				case "password":
					methods.Password()
				case "keyboard-interactive":
					methods.KeyboardInteractive()
				default:
					return nil, fmt.Errorf("sshauth=%q: want agent, privkey, password or keyboard-interactive", a)
				}
			}
			opts = append(opts, dialers.WithSSHAuthMethods(methods))
		}
		if q.Get("no_verify") != "" {
			return nil, fmt.Errorf("no_verify does not apply to the %s transport: use known_hosts_verify=ignore", transport)
		}
		return dialers.NewSSH(u.Hostname(), opts...), nil
	case "ssh":
		// go-libvirt speaks ssh itself rather than running the ssh program, so ~/.ssh/config is
		// not read; the current user's known_hosts and keys are.
		me, err := user.Current()
		if err != nil {
			return nil, err
		}
		opts, err := sshOptions(u, []dialers.SSHOption{dialers.WithSystemSSHDefaults(me)})
		if err != nil {
			return nil, err
		}
		nv, err := noVerify(q.Get("no_verify"))
		if err != nil {
			return nil, err
		}
		if nv {
			opts = append(opts, dialers.WithInsecureIgnoreHostKey())
		}
		var bad []error
		for _, f := range []string{"known_hosts", "known_hosts_verify", "sshauth"} {
			if q.Get(f) != "" {
				bad = append(bad, fmt.Errorf("%s does not apply to the ssh transport: use qemu+libssh", f))
			}
		}
		if len(bad) > 0 {
			return nil, errors.Join(bad...)
		}
		return dialers.NewSSH(u.Hostname(), opts...), nil
	}
	return nil, fmt.Errorf("unsupported libvirt transport %q: want unix, tcp, tls, ssh or libssh", transport)
}

func sshOptions(u *url.URL, opts []dialers.SSHOption) ([]dialers.SSHOption, error) {
	q := u.Query()
	if port := u.Port(); port != "" {
		opts = append(opts, dialers.UseSSHPort(port))
	}
	if name := u.User.Username(); name != "" {
		opts = append(opts, dialers.UseSSHUsername(name))
	}
	if pw, ok := u.User.Password(); ok {
		opts = append(opts, dialers.UseSSHPassword(pw))
	}
	if s := q.Get("socket"); s != "" {
		opts = append(opts, dialers.WithRemoteSocket(s))
	}
	if k := q.Get("keyfile"); k != "" {
		opts = append(opts, dialers.UseKeyFile(k))
	}
	return opts, checkMode(q.Get("mode"))
}

func noVerify(v string) (bool, error) {
	if v == "" {
		return false, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return false, fmt.Errorf("no_verify=%q: want 0 or 1", v)
	}
	return n != 0, nil
}

func checkMode(mode string) error {
	switch strings.ToLower(mode) {
	case "", "legacy", "auto":
		return nil
	case "direct":
		return errors.New("mode=direct is not supported: the provider speaks to libvirtd (mode=legacy)")
	}
	return fmt.Errorf("mode=%q: want legacy or auto", mode)
}

// driver is the only libvirt driver the provider speaks: it builds QEMU domains.
const driver = "qemu"

// transports are the transports a URI's scheme may name after "qemu+" (see dialerFor).
var transports = []string{"unix", "tcp", "tls", "ssh", "libssh", "libssh2"}

// schemesAllowed says in words which URI schemes the provider takes.
const schemesAllowed = "qemu (the local unix socket, or TLS when the URI names a host), qemu+unix, qemu+tcp, qemu+tls, qemu+ssh or qemu+libssh, " +
	"such as qemu:///system, qemu:///session or qemu+ssh://root@host/system"

// CheckURI refuses a URI whose scheme is not one the provider speaks, before any connection is
// tried: "http://host" would otherwise be read as TLS to that host, and its failure answered
// with advice about certificates. It says nothing of whether the daemon answers.
func CheckURI(uri string) error {
	u, err := url.Parse(uri)
	if err != nil {
		// url.Parse's error quotes the whole URI, password included: give only its reason.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return fmt.Errorf("the libvirt URI cannot be parsed: %w", err)
	}
	name, transport, _ := strings.Cut(u.Scheme, "+")
	switch {
	case u.Scheme == "":
		return fmt.Errorf("the libvirt URI has no scheme: use %s", schemesAllowed)
	case name != driver:
		return fmt.Errorf("scheme %q is not a libvirt URI scheme the provider speaks: use %s", u.Scheme, schemesAllowed)
	case strings.Contains(u.Scheme, "+") && !slices.Contains(transports, transport):
		return fmt.Errorf("unsupported libvirt transport %q in scheme %q: use %s", transport, u.Scheme, schemesAllowed)
	}
	return nil
}

// IsLocal reports whether uri reaches a daemon on this machine through its unix socket (no host,
// unix transport), so that the files it names are this machine's files. A URI that names a
// host, even this one, is not local: what it reaches is decided by the network.
func IsLocal(uri string) bool {
	u, err := url.Parse(uri)
	if err != nil || u.Host != "" {
		return false
	}
	_, transport, _ := strings.Cut(u.Scheme, "+")
	return transport == "" || transport == "unix"
}
