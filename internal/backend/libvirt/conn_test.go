package libvirt

import (
	"net/url"
	"strings"
	"testing"
)

// TestConnectErrors checks what a failed connection says: the transport's own hint, and never
// the URI's password, whether the URI cannot be parsed or the host cannot be reached.
func TestConnectErrors(t *testing.T) {
	cases := map[string]struct {
		uri  string
		want []string
	}{
		"ssh with a password": {
			uri:  "qemu+ssh://ops:s3cr3t-pw@127.0.0.1:1/system",
			want: []string{"ops:xxxxx@127.0.0.1:1", "transport ssh", "known_hosts", "AllowStreamLocalForwarding"},
		},
		"tls": {
			uri:  "qemu+tls://127.0.0.1:1/system",
			want: []string{"transport tls", "listen_tls", "pkipath"},
		},
		"tcp": {
			uri:  "qemu+tcp://127.0.0.1:1/system",
			want: []string{"transport tcp", "listen_tcp", "auth_tcp"},
		},
		"unix": {
			uri:  "qemu:///system?socket=/nonexistent/libvirt-sock",
			want: []string{"unix socket /nonexistent/libvirt-sock", "Start the daemon"},
		},
		"unknown transport": {
			uri:  "qemu+carrier-pigeon://h/system",
			want: []string{"unsupported libvirt transport \"carrier-pigeon\""},
		},
		"unparsable with a password": {
			uri:  "qemu+ssh://ops:s3cr3t-pw@h:port/system",
			want: []string{"cannot be parsed", "invalid port"},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			b, err := Connect(c.uri)
			if err == nil {
				_ = b.Close()
				t.Fatalf("connected to %s", c.uri)
			}
			msg := err.Error()
			if strings.Contains(msg, "s3cr3t-pw") {
				t.Errorf("the error shows the password: %s", msg)
			}
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
		})
	}
}

// TestStartHint gives each transport its own advice.
func TestStartHint(t *testing.T) {
	cases := map[string]string{
		"qemu:///system":                      "Start the daemon",
		"qemu+unix:///system":                 "Start the daemon",
		"qemu+ssh://root@h/system":            "known_hosts",
		"qemu+libssh://root@h/system":         "known_hosts",
		"qemu+tls://h/system":                 "pkipath",
		"qemu://h/system":                     "pkipath",
		"qemu+tcp://h/system":                 "auth_tcp",
		"qemu+ext:///system?command=/bin/foo": "unix, ssh, libssh, tls and tcp",
	}
	for uri, want := range cases {
		u, err := url.Parse(uri)
		if err != nil {
			t.Fatal(err)
		}
		if got := startHint(u); !strings.Contains(got, want) {
			t.Errorf("startHint(%s) = %q, want it to say %q", uri, got, want)
		}
	}
}
