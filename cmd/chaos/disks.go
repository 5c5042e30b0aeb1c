package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
)

// The harness reads and writes disk bytes with QEMU's own tools, as the data-safety acceptance
// tests do, so that what it compares is what a guest would see, not the qcow2 file's layout.

// writePattern fills the first MiB of a volume's guest-visible bytes with one byte value.
func writePattern(path string, pattern byte) error {
	out, err := exec.Command("qemu-io", "-f", "qcow2", "-c", fmt.Sprintf("write -P 0x%02x 0 1M", pattern), path).CombinedOutput()
	if err != nil {
		return fmt.Errorf("qemu-io write to %s: %v: %s", path, err, bytes.TrimSpace(out))
	}
	return nil
}

// checksum returns the SHA-256 of a volume's guest-visible bytes and whether they are all zero.
// -U reads an image that a running domain holds open.
func checksum(path, scratch string) (string, bool, error) {
	f, err := os.CreateTemp(scratch, "raw.")
	if err != nil {
		return "", false, err
	}
	raw := f.Name()
	f.Close()
	defer os.Remove(raw)
	if out, err := exec.Command("qemu-img", "convert", "-U", "-O", "raw", path, raw).CombinedOutput(); err != nil {
		return "", false, fmt.Errorf("qemu-img convert %s: %v: %s", path, err, bytes.TrimSpace(out))
	}
	r, err := os.Open(raw)
	if err != nil {
		return "", false, err
	}
	defer r.Close()
	h := sha256.New()
	nz := &nonZero{}
	if _, err := io.Copy(io.MultiWriter(h, nz), r); err != nil {
		return "", false, err
	}
	return hex.EncodeToString(h.Sum(nil)), !nz.seen, nil
}

// nonZero notes whether any byte written to it was not zero.
type nonZero struct{ seen bool }

func (z *nonZero) Write(p []byte) (int, error) {
	if !z.seen && len(bytes.Trim(p, "\x00")) > 0 {
		z.seen = true
	}
	return len(p), nil
}

// backingFile is the image a qcow2 overlay is backed by, as qemu-img reads it from the file.
func backingFile(path string) (string, error) {
	out, err := exec.Command("qemu-img", "info", "-U", "--output=json", path).Output()
	if err != nil {
		var stderr []byte
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		return "", fmt.Errorf("qemu-img info %s: %v: %s", path, err, bytes.TrimSpace(stderr))
	}
	var info struct {
		Backing string `json:"backing-filename"`
	}
	if err := json.Unmarshal(out, &info); err != nil {
		return "", fmt.Errorf("qemu-img info %s: %w", path, err)
	}
	return info.Backing, nil
}

// copyRawInto writes a raw file's bytes into an existing volume as its guest-visible bytes,
// whatever the volume's format (-n: the volume is not created anew, so its owner and size stay).
func copyRawInto(raw, path string) error {
	if out, err := exec.Command("qemu-img", "convert", "-n", "-f", "raw", "-O", "qcow2", raw, path).CombinedOutput(); err != nil {
		return fmt.Errorf("qemu-img convert into %s: %v: %s", path, err, bytes.TrimSpace(out))
	}
	return nil
}
