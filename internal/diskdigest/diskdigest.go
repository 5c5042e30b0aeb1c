// Package diskdigest digests the guest-visible bytes of a disk image, for the tests and the chaos
// run that prove no data was lost: the same bytes give the same digest, any byte changed gives
// another.
//
// It does not hash the image as one stream. The images the tests look at are a few MiB of data
// in gigabytes of zeros, and hashing every zero took more than half the acceptance tests' own
// CPU (a profile of ten group tests: 19 of 36 s in reading, clearing and hashing zeros). The
// digest is instead a SHA-256 over the virtual size and, in order, each 64 KiB block that holds a
// byte other than zero, with its offset: a block of zeros is the same whether the image stores
// it or leaves a hole, so it is left out, and the size and the offsets keep where every other
// byte sits. Only the blocks the raw copy stores are read (SEEK_DATA, SEEK_HOLE).
package diskdigest

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"os/exec"

	"golang.org/x/sys/unix"
)

// block is the unit a digest skips when it holds only zeros.
const block = 64 << 10

// header starts every digest, so that it is never taken for a plain SHA-256 of the bytes.
const header = "diskdigest v1\n"

// Image converts the image at path to a raw file in scratch (qemu-img cannot write raw to a
// pipe; -U reads an image a running domain holds open) and digests it.
func Image(path, scratch string) (sum string, zero bool, err error) {
	f, err := os.CreateTemp(scratch, "diskdigest-*.raw")
	if err != nil {
		return "", false, err
	}
	raw := f.Name()
	f.Close()
	defer os.Remove(raw)
	if out, err := exec.Command("qemu-img", "convert", "-U", "-O", "raw", path, raw).CombinedOutput(); err != nil {
		return "", false, fmt.Errorf("qemu-img convert %s: %v: %s", path, err, bytes.TrimSpace(out))
	}
	return Raw(raw)
}

// Raw digests the raw file at path: its bytes are the guest's. zero tells that every byte is
// zero.
func Raw(path string) (sum string, zero bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", false, err
	}
	d := digest{h: sha256.New(), buf: make([]byte, block), zero: true}
	d.h.Write([]byte(header))
	d.h.Write(binary.BigEndian.AppendUint64(nil, uint64(fi.Size())))
	if err := d.regions(f, fi.Size()); err != nil {
		return "", false, fmt.Errorf("digest %s: %w", path, err)
	}
	return hex.EncodeToString(d.h.Sum(nil)), d.zero, nil
}

type digest struct {
	h    hash.Hash
	buf  []byte
	next int64 // the first block not yet looked at
	zero bool
}

// regions looks at the blocks the file stores, region by region; a file system that cannot tell
// (SEEK_DATA refused) has them all looked at.
func (d *digest) regions(f *os.File, size int64) error {
	fd := int(f.Fd())
	for off := int64(0); off < size; {
		data, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			return nil // only a hole is left
		}
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP) {
			return d.blocks(f, off, size, size)
		}
		if err != nil {
			return err
		}
		hole, err := unix.Seek(fd, data, unix.SEEK_HOLE)
		if err != nil {
			return err
		}
		if err := d.blocks(f, data, hole, size); err != nil {
			return err
		}
		off = hole
	}
	return nil
}

// blocks hashes the blocks that hold any of [from, to) and are not all zero.
func (d *digest) blocks(f *os.File, from, to, size int64) error {
	start := max(from/block*block, d.next)
	for b := start; b < to; b += block {
		n := min(int64(block), size-b)
		p := d.buf[:n]
		if _, err := f.ReadAt(p, b); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		d.next = b + block
		if allZero(p) {
			continue
		}
		d.zero = false
		d.h.Write(binary.BigEndian.AppendUint64(nil, uint64(b)))
		d.h.Write(p)
	}
	return nil
}

func allZero(p []byte) bool {
	for len(p) >= 8 {
		if binary.LittleEndian.Uint64(p) != 0 {
			return false
		}
		p = p[8:]
	}
	for _, c := range p {
		if c != 0 {
			return false
		}
	}
	return true
}
