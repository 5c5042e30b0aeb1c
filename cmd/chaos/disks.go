package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"

	"github.com/virtfleet/terraform-provider-virt/internal/diskdigest"
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

// checksum returns the digest of a volume's guest-visible bytes (diskdigest) and whether they
// are all zero.
func checksum(path, scratch string) (string, bool, error) {
	return diskdigest.Image(path, scratch)
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
