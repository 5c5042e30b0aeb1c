package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"libvirt.org/go/libvirtxml"

	"github.com/virtfleet/terraform-provider-virt/internal/diskdigest"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// What the snapshot scenario reads of a volume's qcow2 snapshots and writes into a running
// member's disk, with QEMU's and libvirt's own tools, as the acceptance tests do.

// volumeSnapshots are the names of the qcow2 internal snapshots in a volume's file, in table
// order (qemu-img snapshot -l; -U reads a file a running domain holds open).
func volumeSnapshots(path string) ([]string, error) {
	out, err := exec.Command("qemu-img", "snapshot", "-U", "-l", path).Output()
	if err != nil {
		var stderr []byte
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		return nil, fmt.Errorf("qemu-img snapshot -l %s: %v: %s", path, err, bytes.TrimSpace(stderr))
	}
	return parseSnapshotList(string(out)), nil
}

// parseSnapshotList reads the tags of `qemu-img snapshot -l`: after its two header lines
// ("Snapshot list:", "ID TAG VM SIZE DATE VM CLOCK ICOUNT"), one line per snapshot, its ID then
// its tag (the provider's tags hold no space).
func parseSnapshotList(out string) []string {
	var tags []string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 2 || f[0] == "ID" || strings.HasPrefix(l, "Snapshot list") {
			continue
		}
		tags = append(tags, f[1])
	}
	return tags
}

// snapshotChecksum is the digest (diskdigest) of the guest-visible bytes a volume's snapshot tag
// holds: qemu-img converts the snapshot, not the live image (-l snapshot.name).
func snapshotChecksum(path, tag, scratch string) (string, error) {
	f, err := os.CreateTemp(scratch, "snapshot-*.raw")
	if err != nil {
		return "", err
	}
	raw := f.Name()
	f.Close()
	defer os.Remove(raw)
	if out, err := exec.Command("qemu-img", "convert", "-U", "-l", "snapshot.name="+tag, "-O", "raw", path, raw).CombinedOutput(); err != nil {
		return "", fmt.Errorf("qemu-img convert -l snapshot.name=%s %s: %v: %s", tag, path, err, bytes.TrimSpace(out))
	}
	sum, _, err := diskdigest.Raw(raw)
	return sum, err
}

// patternChecksum is the digest of a disk of sizeMiB whose first MiB holds pattern and the rest
// zeros: what writePattern or writeRunning leave in a data disk, computed without reading it.
func patternChecksum(sizeMiB int, pattern byte, scratch string) (string, error) {
	f, err := os.CreateTemp(scratch, "pattern-*.raw")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(bytes.Repeat([]byte{pattern}, 1<<20)); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Truncate(int64(sizeMiB) << 20); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	sum, _, err := diskdigest.Raw(f.Name())
	return sum, err
}

// virsh runs virsh on the harness's libvirt URI.
func (c *chaos) virsh(args ...string) (string, error) {
	out, err := exec.Command("virsh", append([]string{"-q", "-c", c.h.uri}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("virsh %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return string(out), nil
}

// writeRunning fills the first MiB of the running member's disk of volume with pattern through
// its QEMU (the monitor's qemu-io on the disk's device), then flushes it to the file: what a new
// image's first boot does when it migrates the data on its disk. The member's QEMU holds the
// image's write lock, so qemu-io from outside cannot write it.
//
// wrote is set once QEMU said it wrote the pattern, even when the flush after failed: its write
// reached the image file (the pattern overwrites allocated clusters, so no qcow2 metadata of
// QEMU's cache is needed to read it), and a power-off right after it does not take it back.
func (c *chaos) writeRunning(member, volume string, pattern byte) (wrote bool, err error) {
	doc, err := c.virsh("dumpxml", member)
	if err != nil {
		return false, err
	}
	var dom libvirtxml.Domain
	if err := dom.Unmarshal(doc); err != nil {
		return false, fmt.Errorf("read domain %s: %w", member, err)
	}
	alias := ""
	if dom.Devices != nil {
		for _, d := range dom.Devices.Disks {
			src := d.Source
			if src == nil || d.Alias == nil {
				continue
			}
			if (src.Volume != nil && src.Volume.Volume == volume) || (src.File != nil && strings.HasSuffix(src.File.File, "/"+volume)) {
				alias = d.Alias.Name
			}
		}
	}
	if alias == "" {
		return false, fmt.Errorf("domain %s has no running disk of volume %s", member, volume)
	}
	for _, cmd := range []string{fmt.Sprintf("write -P 0x%02x 0 1M", pattern), "flush"} {
		out, err := c.virsh("qemu-monitor-command", member, "--hmp", fmt.Sprintf("qemu-io -d %s %q", alias, cmd))
		if err != nil {
			return wrote, err
		}
		// HMP's qemu-io answers its errors as text with a zero exit.
		if strings.TrimSpace(out) != "" && !strings.Contains(out, "wrote") {
			return wrote, fmt.Errorf("qemu-io %q on %s of %s: %s", cmd, alias, member, strings.TrimSpace(out))
		}
		wrote = true
	}
	return wrote, nil
}

// domainSnapshots are the libvirt snapshot metadata a domain has: the provider removes them at
// once (libvirt snapshot.go), so any left is a run's cut-off deletion or revert.
func (c *chaos) domainSnapshots(domain string) ([]string, error) {
	out, err := c.virsh("snapshot-list", "--name", domain)
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// isProviderTag reports whether a qcow2 snapshot's tag is one the provider takes.
func isProviderTag(tag string) bool { return strings.HasPrefix(tag, engine.SnapshotTagPrefix) }
