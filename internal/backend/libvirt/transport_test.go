package libvirt

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// What tools/transports-up.sh (run by make harness) sets up on this machine for these tests: libvirtd
// listening on 127.0.0.1 for TCP (16509, auth none) and TLS (16514), an sshd on 127.0.0.1 letting
// root in by key, and a session daemon run by user virt-session.
const (
	harnessDir = "/var/lib/virt-harness"
	// root's key for the harness sshd, and a known_hosts file holding that sshd's key.
	harnessKeyFile    = harnessDir + "/ssh/id_ed25519"
	harnessKnownHosts = harnessDir + "/ssh/known_hosts"
	// The sshd's two host keys. go-libvirt's SSH client asks for ECDSA before Ed25519.
	harnessHostKey      = harnessDir + "/ssh/ssh_host_ed25519_key.pub"
	harnessHostKeyECDSA = harnessDir + "/ssh/ssh_host_ecdsa_key.pub"
	// A host key that no server has, to write a known_hosts file that does not match.
	harnessWrongKey = harnessDir + "/ssh/wrong_host_ed25519_key.pub"
	// A pkipath directory: the harness CA's cacert.pem and root's clientcert.pem and clientkey.pem.
	harnessPKI = harnessDir + "/pki"
	sshHost    = "127.0.0.1:16522"
	// The same sshd; root's ~/.ssh/known_hosts holds the wrong key for this address (the harness
	// writes that marked line), because the ssh transport reads no other known_hosts file.
	sshMismatchHost = "127.0.0.1:16523"
	sessionSocket   = "/run/virt-session/libvirt/libvirt-sock"
	// A password the URIs below carry, which no error may repeat.
	uriPassword = "s3cr3t-pw"
)

// TestAccTransport_connect connects through each transport the provider speaks, to the daemons the
// harness runs on this machine, and checks three things: what is under go-libvirt is the
// transport's own socket (a unix socket, a TCP connection, a TLS session whose server certificate
// was verified, a channel forwarded by sshd to a unix socket), the daemon that answered is the one
// the URI names (system or session), and the backend reads something real through it.
func TestAccTransport_connect(t *testing.T) {
	requireAcc(t)
	requireHarness(t)
	session := url.QueryEscape(sessionSocket)
	cases := map[string]struct {
		uri    string
		socket string // what connSocket says
		daemon string // the URI the daemon says it serves
		system bool   // the system daemon answers: the harness's pool is there
	}{
		"unix, the system daemon's default socket": {
			uri: "qemu:///system",
			// The dialer opens /var/run/libvirt/libvirt-sock; the peer's address is the path
			// libvirtd bound, under /run, which /var/run links to.
			socket: "unix /run/libvirt/libvirt-sock",
			daemon: "qemu:///system",
			system: true,
		},
		"unix, a session daemon's socket": {
			uri:    "qemu+unix:///session?socket=" + session,
			socket: "unix " + sessionSocket,
			daemon: "qemu:///session",
		},
		"tcp, default port": {
			uri:    "qemu+tcp://127.0.0.1/system",
			socket: "tcp 127.0.0.1:16509",
			daemon: "qemu:///system",
			system: true,
		},
		"tls, root's default certificate paths": {
			uri:    "qemu+tls://127.0.0.1/system",
			socket: "tls 127.0.0.1:16514, server localhost, verified",
			daemon: "qemu:///system",
			system: true,
		},
		"tls, pkipath, the host by name": {
			uri:    "qemu+tls://localhost:16514/system?pkipath=" + harnessPKI,
			socket: "tls 127.0.0.1:16514, server localhost, verified",
			daemon: "qemu:///system",
			system: true,
		},
		"tls, a host and no transport in the scheme": {
			uri:    "qemu://127.0.0.1/system?pkipath=" + harnessPKI,
			socket: "tls 127.0.0.1:16514, server localhost, verified",
			daemon: "qemu:///system",
			system: true,
		},
		"ssh, keyfile, the host key in root's known_hosts": {
			uri:    "qemu+ssh://root@" + sshHost + "/system?keyfile=" + harnessKeyFile,
			socket: "forwarded to " + defaultSocket,
			daemon: "qemu:///system",
			system: true,
		},
		"ssh, a session daemon's socket on the host": {
			uri:    "qemu+ssh://root@" + sshHost + "/session?keyfile=" + harnessKeyFile + "&socket=" + session,
			socket: "forwarded to " + sessionSocket,
			daemon: "qemu:///session",
		},
		"ssh, /session without socket= reaches the system daemon": {
			// go-libvirt dials the system socket whatever the path, unlike libvirt's client,
			// and the system daemon, run by root, serves qemu:///session as qemu:///system.
			uri:    "qemu+ssh://root@" + sshHost + "/session?keyfile=" + harnessKeyFile,
			socket: "forwarded to " + defaultSocket,
			daemon: "qemu:///session",
			system: true,
		},
		"libssh, known_hosts and sshauth": {
			uri:    "qemu+libssh://root@" + sshHost + "/system?sshauth=privkey&keyfile=" + harnessKeyFile + "&known_hosts=" + harnessKnownHosts,
			socket: "forwarded to " + defaultSocket,
			daemon: "qemu:///system",
			system: true,
		},
	}
	pool := os.Getenv("VIRT_TEST_POOL")
	if pool == "" {
		pool = "virt"
	}
	ctx := context.Background()
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			b := connectAcc(t, c.uri)
			if got := connSocket(b); got != c.socket {
				t.Errorf("connected over %q, want %q", got, c.socket)
			}
			got, err := b.Raw().ConnectGetUri()
			if err != nil {
				t.Fatalf("ask the daemon its URI: %v", err)
			}
			if got != c.daemon {
				t.Errorf("the daemon serves %s, want %s", got, c.daemon)
			}
			if _, err := b.ListDomains(ctx, "tfacc-"); err != nil {
				t.Errorf("list domains: %v", err)
			}
			if c.system {
				// The harness's pool is on the system daemon: this is the daemon the other tests use.
				p, err := b.LookupPool(ctx, pool)
				if err != nil {
					t.Errorf("look up the harness pool %s: %v", pool, err)
				} else if p.Path == "" {
					t.Errorf("pool %s has no path", pool)
				}
			}
			t.Logf("%s: connected and read in %s", c.uri, time.Since(start).Round(time.Millisecond))
		})
	}
}

// TestAccTransport_sshHostKey checks that both SSH transports refuse a host whose key does not
// match known_hosts, or is not in it, before anything reaches libvirt, and that each transport's
// explicit opt-out (no_verify=1 for ssh, known_hosts_verify=ignore for libssh) connects anyway.
// The ssh transport only reads root's ~/.ssh/known_hosts, where the harness keeps a wrong key for
// the sshd's second address; libssh reads the known_hosts= file the URI names.
func TestAccTransport_sshHostKey(t *testing.T) {
	requireAcc(t)
	requireHarness(t)
	dir := t.TempDir()
	wrong := writeKnownHosts(t, dir, "wrong", "[127.0.0.1]:16522", harnessWrongKey)
	other := writeKnownHosts(t, dir, "other-host", "[192.0.2.1]:22", harnessHostKey)
	ed25519Only := writeKnownHosts(t, dir, "ed25519-only", "[127.0.0.1]:16522", harnessHostKey)
	learned := writeKnownHosts(t, dir, "learned", "[192.0.2.1]:22", harnessHostKey)
	created := filepath.Join(dir, "created", "known_hosts")
	ssh := func(host, params string) string {
		return "qemu+ssh://root@" + host + "/system?keyfile=" + harnessKeyFile + params
	}
	libssh := func(params string) string {
		return "qemu+libssh://root@" + sshHost + "/system?sshauth=privkey&keyfile=" + harnessKeyFile + params
	}
	// Each case, in order (auto learns a key that the next case relies on).
	cases := []struct {
		name string
		uri  string
		want []string // what the error says; none: it connects
	}{
		{name: "ssh, root's known_hosts holds another key for the host",
			uri: ssh(sshMismatchHost, ""), want: []string{"knownhosts: key mismatch", "host key", "known_hosts"}},
		{name: "ssh, the same host with no_verify=1",
			uri: ssh(sshMismatchHost, "&no_verify=1")},
		{name: "ssh, no_verify=0 verifies",
			uri: ssh(sshMismatchHost, "&no_verify=0"), want: []string{"knownhosts: key mismatch"}},
		{name: "libssh, known_hosts holds another key for the host",
			uri: libssh("&known_hosts=" + wrong), want: []string{"knownhosts: key mismatch", "host key", "known_hosts"}},
		{name: "libssh, the same with known_hosts_verify=ignore",
			uri: libssh("&known_hosts=" + wrong + "&known_hosts_verify=ignore")},
		{name: "libssh, known_hosts_verify=auto still refuses a changed key",
			uri: libssh("&known_hosts=" + wrong + "&known_hosts_verify=auto"), want: []string{"knownhosts: key mismatch"}},
		// A limitation, which the transports guide tells users about: the client negotiates the
		// host key type by its own preference (ECDSA first), not by the types known_hosts holds for
		// the host, so the host's right Ed25519 key alone reads as a mismatch.
		{name: "libssh, known_hosts holds only the host's Ed25519 key, and the host has ECDSA too",
			uri: libssh("&known_hosts=" + ed25519Only), want: []string{"knownhosts: key mismatch"}},
		{name: "libssh, the host is not in known_hosts",
			uri: libssh("&known_hosts=" + other), want: []string{"knownhosts: key is unknown", "known_hosts"}},
		{name: "libssh, the known_hosts file does not exist",
			uri: libssh("&known_hosts=" + filepath.Join(dir, "missing")), want: []string{"no such file or directory", "known_hosts"}},
		{name: "libssh, known_hosts_verify=auto adds an unknown host's key",
			uri: libssh("&known_hosts=" + learned + "&known_hosts_verify=auto")},
		{name: "libssh, the key learned by auto then verifies",
			uri: libssh("&known_hosts=" + learned)},
		{name: "libssh, known_hosts_verify=auto makes a missing known_hosts file",
			uri: libssh("&known_hosts=" + created + "&known_hosts_verify=auto")},
		{name: "libssh, the file auto made then verifies",
			uri: libssh("&known_hosts=" + created)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkConnect(t, c.uri, c.want)
		})
	}
	// auto wrote the key the host showed (its ECDSA key), and kept what the file held.
	hostKey, shown := knownHostsKey(t, harnessHostKey), knownHostsKey(t, harnessHostKeyECDSA)
	for path, want := range map[string][]string{
		learned: {"[192.0.2.1]:22 " + hostKey, "[127.0.0.1]:16522 " + shown},
		created: {"[127.0.0.1]:16522 " + shown},
	} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Split(strings.TrimSpace(string(b)), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("after known_hosts_verify=auto %s holds:\n%s\nwant:\n%s", path, b, strings.Join(want, "\n"))
		}
	}
}

// TestAccTransport_tlsCertificates checks the TLS transport's certificates both ways: a pkipath
// without them fails with the tls hint; a CA that did not sign the server's certificate is refused
// unless no_verify=1; and the harness libvirtd refuses a client certificate its CA did not sign.
func TestAccTransport_tlsCertificates(t *testing.T) {
	requireAcc(t)
	requireHarness(t)
	empty := t.TempDir()
	ca := newTestCA(t)

	// The harness client certificate, with a CA that did not sign the server's.
	strangeCA := t.TempDir()
	copyFile(t, filepath.Join(harnessPKI, "clientcert.pem"), filepath.Join(strangeCA, "clientcert.pem"))
	copyFile(t, filepath.Join(harnessPKI, "clientkey.pem"), filepath.Join(strangeCA, "clientkey.pem"))
	ca.writeCert(t, filepath.Join(strangeCA, "cacert.pem"))

	// The harness CA, with a client certificate from another CA.
	strangeClient := t.TempDir()
	copyFile(t, filepath.Join(harnessPKI, "cacert.pem"), filepath.Join(strangeClient, "cacert.pem"))
	ca.issueClient(t, strangeClient)

	tlsURI := func(dir, params string) string {
		return "qemu+tls://127.0.0.1/system?pkipath=" + dir + params
	}
	cases := []struct {
		name string
		uri  string
		want []string
	}{
		{name: "pkipath without certificates",
			uri: tlsURI(empty, ""), want: []string{"clientcert.pem", "no such file or directory", "transport tls", "pkipath", "listen_tls"}},
		{name: "pkipath without certificates, no_verify=1",
			uri: tlsURI(empty, "&no_verify=1"), want: []string{"clientcert.pem", "pkipath"}},
		{name: "a CA that did not sign the server's certificate",
			uri: tlsURI(strangeCA, ""), want: []string{"certificate signed by unknown authority", "pkipath"}},
		{name: "a CA that did not sign the server's certificate, no_verify=1",
			uri: tlsURI(strangeCA, "&no_verify=1")},
		{name: "a client certificate the server's CA did not sign",
			uri: tlsURI(strangeClient, ""), want: []string{"transport tls", "closed the connection right after the TLS handshake", "did not sign", "pkipath"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkConnect(t, c.uri, c.want)
		})
	}
}

// TestAccTransport_password gives each network transport a URI with a password and a reason to
// fail: no error repeats the password, whichever layer failed.
func TestAccTransport_password(t *testing.T) {
	requireAcc(t)
	requireHarness(t)
	empty := t.TempDir()
	pw := "root:" + uriPassword + "@"
	cases := map[string]struct {
		uri  string
		want []string
	}{
		"ssh, host key mismatch": {
			uri:  "qemu+ssh://" + pw + sshMismatchHost + "/system?keyfile=" + harnessKeyFile,
			want: []string{"root:xxxxx@" + sshMismatchHost, "key mismatch"},
		},
		"libssh, password authentication, which the sshd refuses": {
			uri:  "qemu+libssh://" + pw + sshHost + "/system?sshauth=password&known_hosts=" + harnessKnownHosts,
			want: []string{"root:xxxxx@" + sshHost, "unable to authenticate"},
		},
		"tls, no certificates": {
			uri:  "qemu+tls://" + pw + "127.0.0.1/system?pkipath=" + empty,
			want: []string{"root:xxxxx@127.0.0.1", "clientcert.pem"},
		},
		"tcp, nothing listens": {
			uri:  "qemu+tcp://" + pw + "127.0.0.1:1/system",
			want: []string{"root:xxxxx@127.0.0.1:1", "connection refused"},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			checkConnect(t, c.uri, c.want)
		})
	}
}

// checkConnect connects to uri: with want empty it must connect and answer; otherwise it must
// fail with an error saying each of want, and never the URI's password.
func checkConnect(t *testing.T, uri string, want []string) {
	t.Helper()
	start := time.Now()
	b, err := Connect(uri)
	took := time.Since(start).Round(time.Millisecond)
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		defer func() { _ = b.Close() }()
		if _, err := b.Raw().ConnectGetLibVersion(); err != nil {
			t.Fatalf("connected, but libvirt does not answer: %v", err)
		}
		t.Logf("connected in %s", took)
		return
	}
	if err == nil {
		_ = b.Close()
		t.Fatalf("connected to %s; want an error saying %q", uri, want)
	}
	msg := err.Error()
	if strings.Contains(msg, uriPassword) {
		t.Errorf("the error shows the password: %s", msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("the error does not say %q:\n%s", w, msg)
		}
	}
	t.Logf("refused in %s: %s", took, msg)
}

// requireHarness fails, rather than skips, when the harness's transports are not set up: under
// TF_ACC the acceptance tests run against what make harness brings up.
func requireHarness(t *testing.T) {
	t.Helper()
	for _, f := range []string{harnessKeyFile, harnessKnownHosts, harnessWrongKey, filepath.Join(harnessPKI, "clientkey.pem")} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("the transports harness is not set up (run make harness, as root): %v", err)
		}
	}
}

// connSocket says what the backend's socket is, seen from under go-libvirt: the transport as it
// really went.
func connSocket(b *Backend) string {
	sock := b.current().sock
	sock.mu.Lock()
	c := sock.c
	sock.mu.Unlock()
	switch c := c.(type) {
	case *net.UnixConn:
		return "unix " + c.RemoteAddr().String()
	case *net.TCPConn:
		return "tcp " + c.RemoteAddr().String()
	case *tls.Conn:
		st := c.ConnectionState()
		s := "tls " + c.RemoteAddr().String()
		if len(st.PeerCertificates) > 0 {
			s += ", server " + st.PeerCertificates[0].Subject.CommonName
		}
		if len(st.VerifiedChains) > 0 {
			return s + ", verified"
		}
		return s + ", not verified"
	case nil:
		return "no socket"
	}
	// x/crypto/ssh's channel to a unix socket on the server (direct-streamlocal): its remote
	// address is the socket's path.
	return "forwarded to " + c.RemoteAddr().String()
}

// knownHostsKey is "type base64" of an OpenSSH public key file.
func knownHostsKey(t *testing.T, pubFile string) string {
	t.Helper()
	b, err := os.ReadFile(pubFile)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		t.Fatalf("%s is not a public key", pubFile)
	}
	return f[0] + " " + f[1]
}

// writeKnownHosts writes a known_hosts file with one line: host and the key in pubFile.
func writeKnownHosts(t *testing.T, dir, name, host, pubFile string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(host+" "+knownHostsKey(t, pubFile)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// testCA is a certificate authority made for one test, which signed nothing of the harness's.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTestCA(t *testing.T) testCA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{Organization: []string{"tfacc"}, CommonName: "tfacc stranger CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return testCA{cert: cert, key: key}
}

func (ca testCA) writeCert(t *testing.T, path string) {
	t.Helper()
	writePEM(t, path, "CERTIFICATE", ca.cert.Raw)
}

// issueClient writes clientcert.pem and clientkey.pem, signed by ca, into dir.
func (ca testCA) issueClient(t *testing.T, dir string) {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(2),
		Subject:               pkix.Name{Organization: []string{"tfacc"}, CommonName: "root"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Join(dir, "clientcert.pem"), "CERTIFICATE", der)
	k, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Join(dir, "clientkey.pem"), "PRIVATE KEY", k)
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
