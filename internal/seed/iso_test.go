package seed

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// These tests read images back with isoinfo, a reader written independently of this package. It comes
// with Debian's genisoimage package: apt-get install -y genisoimage. A missing isoinfo fails the tests
// rather than skipping them, so a machine without it cannot pass them silently.

func fullSeed() Seed {
	return Seed{
		InstanceID:    "web-0",
		Hostname:      "web-0",
		Metadata:      map[string]string{"role": "web", "zone": "eu-1", "note": "a \"quoted\"\nline"},
		UserData:      "#cloud-config\npackages: [nginx]\n",
		NetworkConfig: "version: 2\nethernets:\n  eth0:\n    dhcp4: true\n",
	}
}

func TestISOReadBack(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("0123456789abcdef", 300) // 4800 bytes: spans three sectors
	cases := map[string]struct {
		seed  Seed
		files map[string]string // name -> content, as the guest must read them
	}{
		"all files": {
			seed: fullSeed(),
			files: map[string]string{
				"meta-data":      string(fullSeed().MetaData()),
				"user-data":      fullSeed().UserData,
				"network-config": fullSeed().NetworkConfig,
			},
		},
		"empty user-data still present, no network-config": {
			seed: Seed{InstanceID: "db-1", Hostname: "db-1"},
			files: map[string]string{
				"meta-data": "instance-id: \"db-1\"\nlocal-hostname: \"db-1\"\n",
				"user-data": "",
			},
		},
		"user-data over several sectors": {
			seed: Seed{InstanceID: "x", Hostname: "x", UserData: big, NetworkConfig: "version: 2\n"},
			files: map[string]string{
				"meta-data":      "instance-id: \"x\"\nlocal-hostname: \"x\"\n",
				"user-data":      big,
				"network-config": "version: 2\n",
			},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := writeImage(t, c.seed)

			info := isoinfo(t, "-d", "-i", path)
			for _, want := range []string{"Volume id: cidata\n", "Joliet with UCS level 3 found", "Rock Ridge signatures version 1 found"} {
				if !strings.Contains(info, want) {
					t.Errorf("isoinfo -d lacks %q:\n%s", want, info)
				}
			}

			var wantList []string
			for name := range c.files {
				wantList = append(wantList, "/"+name)
			}
			// Both extensions must carry the exact lowercase names and the same contents: Linux reads Rock
			// Ridge, Windows reads Joliet.
			for _, ext := range []string{"-R", "-J"} {
				got := strings.Fields(isoinfo(t, ext, "-f", "-i", path))
				if d := cmp.Diff(wantList, got, cmpSorted); d != "" {
					t.Errorf("isoinfo %s -f (-want +got):\n%s", ext, d)
				}
				for name, want := range c.files {
					if d := cmp.Diff(want, isoinfo(t, ext, "-x", "/"+name, "-i", path)); d != "" {
						t.Errorf("isoinfo %s -x /%s (-want +got):\n%s", ext, name, d)
					}
				}
			}
		})
	}
}

func TestISODeterministic(t *testing.T) {
	t.Parallel()
	a, err := fullSeed().ISO()
	if err != nil {
		t.Fatal(err)
	}
	// The same metadata built up in another order: map iteration order must not reach the bytes.
	s := fullSeed()
	s.Metadata = map[string]string{}
	for _, k := range []string{"zone", "note", "role"} {
		s.Metadata[k] = fullSeed().Metadata[k]
	}
	for i := range 5 {
		b, err := s.ISO()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Fatalf("build %d differs from the first: the image is not deterministic", i)
		}
	}
	if fullSeed().Hash() != s.Hash() {
		t.Errorf("equal seeds hash differently: %s, %s", fullSeed().Hash(), s.Hash())
	}
}

// TestHashPinned pins the image bytes of one seed. If it fails, the bytes every existing member's seed
// would be rebuilt with have changed, and each member gets its media swapped on the next apply after an
// upgrade: change the image format only on purpose, and then update the hash here.
func TestHashPinned(t *testing.T) {
	t.Parallel()
	const want = "43eceb7471b0e082fdef66b9532af0997b66cbe918ea750c79b1d3538d7f6780"
	if got := fullSeed().Hash(); got != want {
		t.Errorf("hash of fullSeed() = %s, want %s", got, want)
	}
}

func TestHashChanges(t *testing.T) {
	t.Parallel()
	base := fullSeed().Hash()
	if len(base) != 64 {
		t.Fatalf("Hash() = %q, want 64 hex digits", base)
	}
	cases := map[string]func(*Seed){
		"metadata value":        func(s *Seed) { s.Metadata["role"] = "db" },
		"metadata key added":    func(s *Seed) { s.Metadata["extra"] = "" },
		"metadata key removed":  func(s *Seed) { delete(s.Metadata, "zone") },
		"instance id":           func(s *Seed) { s.InstanceID = "web-1" },
		"hostname":              func(s *Seed) { s.Hostname = "web-1" },
		"user-data":             func(s *Seed) { s.UserData += "\n" },
		"network-config":        func(s *Seed) { s.NetworkConfig = "version: 2\n" },
		"network-config absent": func(s *Seed) { s.NetworkConfig = "" },
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := fullSeed()
			change(&s)
			if got := s.Hash(); got == base {
				t.Errorf("hash unchanged (%s) after changing the %s", got, name)
			}
		})
	}
}

func TestBuildISORejects(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		volumeID string
		files    []isoFile
	}{
		"empty volume id":      {volumeID: "", files: []isoFile{{name: "a"}}},
		"long volume id":       {volumeID: "abcdefghijklmnopq", files: []isoFile{{name: "a"}}},
		"upper case name":      {volumeID: "v", files: []isoFile{{name: "A"}}},
		"name with a slash":    {volumeID: "v", files: []isoFile{{name: "a/b"}}},
		"dot name":             {volumeID: "v", files: []isoFile{{name: ".."}}},
		"name over 64":         {volumeID: "v", files: []isoFile{{name: strings.Repeat("a", 65)}}},
		"duplicate name":       {volumeID: "v", files: []isoFile{{name: "a"}, {name: "a"}}},
		"same primary mapping": {volumeID: "v", files: []isoFile{{name: "a-b"}, {name: "a_b"}}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if _, err := buildISO(c.volumeID, c.files); err == nil {
				t.Errorf("buildISO(%q, %d files) = nil error, want one", c.volumeID, len(c.files))
			}
		})
	}
}

var cmpSorted = cmp.Transformer("sorted", func(in []string) []string {
	out := append([]string(nil), in...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
})

func writeImage(t *testing.T, s Seed) string {
	t.Helper()
	img, err := s.ISO()
	if err != nil {
		t.Fatalf("ISO(): %v", err)
	}
	path := filepath.Join(t.TempDir(), "seed.iso")
	if err := os.WriteFile(path, img, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func isoinfo(t *testing.T, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("isoinfo")
	if err != nil && os.Getenv("TF_ACC") == "" {
		// A machine without the harness's packages: make testacc runs this package again
		// with TF_ACC set, after tools/libvirt-up.sh installed genisoimage, and fails there.
		t.Skipf("isoinfo not installed (genisoimage); this read-back runs under make testacc: %v", err)
	}
	if err != nil {
		t.Fatalf("isoinfo is needed to read seed images back and was not found: apt-get install -y genisoimage (%v)", err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("isoinfo %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}
