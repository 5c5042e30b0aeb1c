package diskdigest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// chunk is bytes to put at an offset of a file.
type chunk struct {
	at   int64
	data []byte
}

// file makes a file of size bytes in dir holding chunks; dense writes every zero instead of
// leaving holes.
func file(t *testing.T, size int64, dense bool, chunks ...chunk) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "disk.raw")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if dense {
		if _, err := f.Write(make([]byte, size)); err != nil {
			t.Fatal(err)
		}
	} else if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	for _, c := range chunks {
		if _, err := f.WriteAt(c.data, c.at); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func sum(t *testing.T, p string) (string, bool) {
	t.Helper()
	s, zero, err := Raw(p)
	if err != nil {
		t.Fatal(err)
	}
	return s, zero
}

const mib = 1 << 20

var base = []chunk{{at: 0, data: []byte("boot sector")}, {at: 3*mib + 100, data: []byte("data across a block edge: " + string(make([]byte, block)) + "end")}}

// TestDigestIsOfTheBytesOnly: holes and written zeros digest alike.
func TestDigestIsOfTheBytesOnly(t *testing.T) {
	t.Parallel()
	sparse, sz := sum(t, file(t, 8*mib, false, base...))
	dense, dz := sum(t, file(t, 8*mib, true, base...))
	if sparse != dense || sz || dz {
		t.Fatalf("sparse %s (zero %v), dense %s (zero %v): want one digest, not zero", sparse, sz, dense, dz)
	}
}

// TestDigestSeesEveryChange: a byte changed, moved, added at the end or taken away gives
// another digest.
func TestDigestSeesEveryChange(t *testing.T) {
	t.Parallel()
	want, _ := sum(t, file(t, 8*mib, false, base...))
	cases := map[string]struct {
		size   int64
		chunks []chunk
	}{
		"a byte in a stored block":      {8 * mib, append(append([]chunk{}, base...), chunk{at: 1, data: []byte("O")})},
		"a byte in a hole":              {8 * mib, append(append([]chunk{}, base...), chunk{at: 5 * mib, data: []byte{1}})},
		"the last byte":                 {8 * mib, append(append([]chunk{}, base...), chunk{at: 8*mib - 1, data: []byte{1}})},
		"the same bytes a block later":  {8 * mib, []chunk{base[0], {at: base[1].at + block, data: base[1].data}}},
		"the same bytes a byte later":   {8 * mib, []chunk{base[0], {at: base[1].at + 1, data: base[1].data}}},
		"a zero block more at the end":  {8*mib + block, base},
		"a byte fewer":                  {8*mib - 1, base},
		"a block's bytes zeroed":        {8 * mib, base[:1]},
		"the first bytes, a block late": {8 * mib, []chunk{{at: block, data: base[0].data}, base[1]}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, dense := range []bool{false, true} {
				if got, _ := sum(t, file(t, c.size, dense, c.chunks...)); got == want {
					t.Errorf("dense %v: digest %s, the same as the original's", dense, got)
				}
			}
		})
	}
}

// TestDigestZero: only a file of zeros is zero, sparse or written.
func TestDigestZero(t *testing.T) {
	t.Parallel()
	for _, dense := range []bool{false, true} {
		if _, zero := sum(t, file(t, 4*mib, dense)); !zero {
			t.Errorf("dense %v: zeros not seen as zero", dense)
		}
		if _, zero := sum(t, file(t, 4*mib, dense, chunk{at: 4*mib - 1, data: []byte{7}})); zero {
			t.Errorf("dense %v: a last byte of 7 seen as zero", dense)
		}
	}
}

// TestImageReadsTheGuestBytes: a qcow2 image digests as the raw bytes it shows the guest.
func TestImageReadsTheGuestBytes(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("qemu-img"); err != nil {
		t.Skip("qemu-img is not installed (make harness installs it)")
	}
	raw := file(t, 8*mib, false, base...)
	want, _ := sum(t, raw)
	qcow := filepath.Join(t.TempDir(), "disk.qcow2")
	if out, err := exec.Command("qemu-img", "convert", "-f", "raw", "-O", "qcow2", raw, qcow).CombinedOutput(); err != nil {
		t.Fatalf("qemu-img convert: %v: %s", err, out)
	}
	got, zero, err := Image(qcow, t.TempDir())
	if err != nil || got != want || zero {
		t.Fatalf("Image: %s, zero %v, %v; want %s", got, zero, err, want)
	}
}
