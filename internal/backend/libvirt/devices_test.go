package libvirt

import (
	"regexp"
	"strings"
	"testing"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// TestDomainXMLDevices holds the definition of each device to what libvirt 9.0 was measured to
// accept: a console on autoport with its listen address, virtio-rng from /dev/urandom, and a
// virtiofs share with shared memfd memory (which virtiofs needs); none of them without the spec
// asking.
func TestDomainXMLDevices(t *testing.T) {
	t.Parallel()
	share := engine.Filesystem{Source: "/srv/share", Target: "share"}
	tests := map[string]struct {
		spec      backend.DomainSpec
		want, not []string
	}{
		"none": {
			spec: backend.DomainSpec{},
			not:  []string{"<graphics", "<rng", "<filesystem", "<memoryBacking", "<tpm"},
		},
		"vnc": {
			spec: backend.DomainSpec{Graphics: &backend.Graphics{Type: "vnc", Listen: "127.0.0.1"}},
			want: []string{`<graphics type="vnc" autoport="yes" listen="127.0.0.1">`, `<listen type="address" address="127.0.0.1">`},
			not:  []string{"passwd"},
		},
		"vnc with password": {
			spec: backend.DomainSpec{Graphics: &backend.Graphics{Type: "vnc", Listen: "0.0.0.0", Password: "s3cret"}},
			want: []string{`<graphics type="vnc" autoport="yes" passwd="s3cret" listen="0.0.0.0">`},
		},
		"spice on IPv6": {
			spec: backend.DomainSpec{Graphics: &backend.Graphics{Type: "spice", Listen: "::1", Password: "pw"}},
			want: []string{`<graphics type="spice" autoport="yes" listen="::1" passwd="pw">`, `<listen type="address" address="::1">`},
		},
		"rng": {
			spec: backend.DomainSpec{Shape: engine.Shape{Hardware: engine.Hardware{RNG: true}}},
			want: []string{`<rng model="virtio">`, `<backend model="random">/dev/urandom</backend>`},
		},
		"tpm": {
			spec: backend.DomainSpec{Shape: engine.Shape{Hardware: engine.Hardware{TPM: &engine.TPM{Model: "tpm-crb", Version: "2.0"}}}},
			want: []string{`<tpm model="tpm-crb">`, `<backend type="emulator" version="2.0">`},
		},
		"share": {
			spec: backend.DomainSpec{Shape: engine.Shape{Hardware: engine.Hardware{Filesystems: []engine.Filesystem{share, {Source: "/srv/b", Target: "b"}}}}},
			want: []string{
				`<memoryBacking>`, `<source type="memfd">`, `<access mode="shared">`,
				`<filesystem type="mount" accessmode="passthrough">`, `<driver type="virtiofs">`, `<source dir="/srv/share">`, `<target dir="share">`,
				`<source dir="/srv/b">`, `<target dir="b">`,
			},
			not: []string{"<readonly", "<binary"},
		},
	}
	squash := regexp.MustCompile(`>\s*</[a-zA-Z]+>`)
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			spec := tt.spec
			spec.Name, spec.DomainType, spec.VCPU, spec.MemoryMiB = "db-1", "qemu", 1, 64
			doc, err := domainXML(spec)
			if err != nil {
				t.Fatal(err)
			}
			// Empty elements are written open and closed; compare their start tags.
			flat := squash.ReplaceAllString(doc, ">")
			for _, w := range tt.want {
				if !strings.Contains(flat, w) {
					t.Errorf("no %s in\n%s", w, doc)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(doc, n) {
					t.Errorf("%s in\n%s", n, doc)
				}
			}
		})
	}
}

func TestGraphicsPortOf(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		doc  string
		want int
	}{
		"none":            {`<domain type='qemu'><devices/></domain>`, 0},
		"not started":     {`<domain type='qemu'><devices><graphics type='vnc' port='-1' autoport='yes'/></devices></domain>`, 0},
		"vnc":             {`<domain type='qemu'><devices><graphics type='vnc' port='5900' autoport='yes'/></devices></domain>`, 5900},
		"spice":           {`<domain type='qemu'><devices><graphics type='spice' port='5930'/></devices></domain>`, 5930},
		"first counts":    {`<domain type='qemu'><devices><graphics type='vnc' port='-1'/><graphics type='spice' port='5930'/></devices></domain>`, 0},
		"other type skip": {`<domain type='qemu'><devices><graphics type='sdl'/><graphics type='vnc' port='5901'/></devices></domain>`, 5901},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for reader, read := range map[string]func(string) (*parsedDomain, error){"parseDomain": parseDomain, "readDomainXML": readDomainXML} {
				p, err := read(tt.doc)
				if err != nil {
					t.Fatalf("%s: %v", reader, err)
				}
				if p.graphicsPort != tt.want {
					t.Errorf("%s: port %d, want %d", reader, p.graphicsPort, tt.want)
				}
			}
		})
	}
}
