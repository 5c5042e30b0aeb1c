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
			want: []string{"unix socket /nonexistent/libvirt-sock", "systemctl start libvirtd"},
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
		"qemu:///system":                      "systemctl start libvirtd",
		"qemu+unix:///system":                 "systemctl start libvirtd",
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

// TestCheckURI refuses, before any dial, schemes the provider does not speak, with the list of
// those it does; the transports it speaks pass.
func TestCheckURI(t *testing.T) {
	cases := map[string]string{ // URI -> what the error must say, "" for none
		"qemu:///system":                         "",
		"qemu:///session":                        "",
		"qemu+unix:///session?socket=/run/x":     "",
		"qemu+tcp://127.0.0.1/system":            "",
		"qemu+tls://h/system":                    "",
		"qemu://h/system":                        "",
		"qemu+ssh://root@h/system?keyfile=/k":    "",
		"qemu+libssh://root@h/system":            "",
		"http://h2/system":                       `scheme "http" is not a libvirt URI scheme the provider speaks: use qemu`,
		"https://ops:s3cr3t-pw@h2/system":        `scheme "https" is not`,
		"xen:///system":                          `scheme "xen" is not`,
		"qemu+ext:///system?command=/bin/foo":    `unsupported libvirt transport "ext"`,
		"qemu+carrier-pigeon://h/system":         `unsupported libvirt transport "carrier-pigeon"`,
		"/var/run/libvirt/libvirt-sock":          `has no scheme`,
		"qemu+ssh://ops:s3cr3t-pw@h:port/system": `cannot be parsed`,
	}
	for uri, want := range cases {
		err := CheckURI(uri)
		switch {
		case want == "" && err != nil:
			t.Errorf("CheckURI(%s): %v", uri, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("CheckURI(%s) = %v, want an error saying %q", uri, err, want)
		case err != nil && strings.Contains(err.Error(), "s3cr3t-pw"):
			t.Errorf("CheckURI(%s) shows the password: %v", uri, err)
		case err != nil && !strings.Contains(err.Error(), "cannot be parsed") && !strings.Contains(err.Error(), "qemu+ssh"):
			t.Errorf("CheckURI(%s) = %v, which does not list the schemes", uri, err)
		}
	}
}
