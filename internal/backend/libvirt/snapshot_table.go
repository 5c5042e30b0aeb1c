package libvirt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/hashicorp/terraform-plugin-log/tflog"
)

// The qcow2 snapshot table, read back through bounded downloads of the volume: libvirt does not
// report what qemu-img did (see snapshot.go).

// qcow2's header: its magic, and where it says how many snapshots the file holds and where
// their table starts (big-endian, as all of qcow2).
const (
	qcow2Magic           = "QFI\xfb"
	qcow2HeaderBytes     = 72
	qcow2NbSnapshots     = 60
	qcow2SnapshotsOffset = 64
	// qcow2MaxSnapshotTable is QEMU's bound on a snapshot table (QCOW_MAX_SNAPSHOTS_SIZE).
	qcow2MaxSnapshotTable = 64 << 20
)

// volumeTags reads the tags of the volume's qcow2 snapshots from its file's snapshot table, in
// table order (a tag twice when the file holds two snapshots of it). A file that is not qcow2 is
// an error; a missing volume wraps ErrNotFound.
//
// A download can end short of the bytes the file holds (go-libvirt ends a download at the first
// empty packet: make chaos's snapshot scenario saw a header of a member's qcow2 data volume read
// back short, and the deletion of a snapshot fail with "its file is not a qcow2 image"), so a
// header or a table read short is read again, up to readAttempts times, before it is taken for
// what the file holds.
// VolumeSnapshots is backend.Snapshots's: the tags of the volume's qcow2 snapshot table.
func (b *Backend) VolumeSnapshots(ctx context.Context, pool, volume string) ([]string, error) {
	return b.volumeTags(ctx, pool, volume)
}

func (b *Backend) volumeTags(ctx context.Context, pool, volume string) ([]string, error) {
	var tags []string
	var err error
	for attempt := 1; attempt <= readAttempts; attempt++ {
		var short bool
		tags, short, err = b.readTags(ctx, pool, volume)
		if !short {
			return tags, err
		}
		tflog.SubsystemWarn(ctx, Subsystem, "a volume's qcow2 header or snapshot table was read short; reading it again", map[string]any{"pool": pool, "volume": volume, "attempt": attempt, "error": err.Error()})
	}
	return nil, err
}

// readTags is one reading of volumeTags; short is set (with an error) when a download gave fewer
// bytes than the qcow2 header, or than the table its header announces.
func (b *Backend) readTags(ctx context.Context, pool, volume string) (tags []string, short bool, err error) {
	object := pool + "/" + volume
	head, err := b.readVolume(ctx, pool, volume, 0, qcow2HeaderBytes)
	if err != nil {
		return nil, false, err
	}
	if len(head) < qcow2HeaderBytes {
		return nil, true, fmt.Errorf("read the snapshots of volume %s: its header was read as %d bytes, not %d", object, len(head), qcow2HeaderBytes)
	}
	if string(head[:4]) != qcow2Magic {
		return nil, false, fmt.Errorf("read the snapshots of volume %s: its file is not a qcow2 image", object)
	}
	nb := binary.BigEndian.Uint32(head[qcow2NbSnapshots:])
	if nb == 0 {
		return nil, false, nil
	}
	offset := binary.BigEndian.Uint64(head[qcow2SnapshotsOffset:])
	for size := uint64(64 << 10); ; size *= 4 {
		size = min(size, qcow2MaxSnapshotTable)
		table, err := b.readVolume(ctx, pool, volume, offset, size)
		if err != nil {
			return nil, false, err
		}
		tags, complete, err := parseSnapshotTable(table, nb)
		if err != nil {
			return nil, false, fmt.Errorf("read the snapshots of volume %s: %w", object, err)
		}
		if complete {
			return tags, false, nil
		}
		if uint64(len(table)) < size {
			return nil, true, fmt.Errorf("read the snapshots of volume %s: its table of %d snapshots at offset %d is cut short at %d bytes", object, nb, offset, len(table))
		}
		if size == qcow2MaxSnapshotTable {
			return nil, false, fmt.Errorf("read the snapshots of volume %s: its table of %d snapshots at offset %d is longer than qcow2 allows", object, nb, offset)
		}
	}
}

// parseSnapshotTable reads the names of nb snapshots from a qcow2 snapshot table; complete is
// false when table ends before the nb-th entry does. An entry is a 40-byte header (its sizes of
// extra data, ID and name at 36, 12 and 14), its extra data, ID and name, padded to 8 bytes.
func parseSnapshotTable(table []byte, nb uint32) (tags []string, complete bool, err error) {
	pos := 0
	for i := range nb {
		if len(table)-pos < 40 {
			return nil, false, nil
		}
		e := table[pos:]
		idSize := int(binary.BigEndian.Uint16(e[12:]))
		nameSize := int(binary.BigEndian.Uint16(e[14:]))
		extra := int(binary.BigEndian.Uint32(e[36:]))
		if extra > 1<<20 {
			return nil, false, fmt.Errorf("snapshot %d of the table has %d bytes of extra data, which qcow2 does not allow", i, extra)
		}
		end := 40 + extra + idSize + nameSize
		if len(e) < end {
			return nil, false, nil
		}
		tags = append(tags, string(e[40+extra+idSize:end]))
		pos += (end + 7) &^ 7
	}
	return tags, true, nil
}

// readVolume reads length bytes of the volume's file from offset (fewer at its end), through a
// download: the file is on the libvirt host.
//
// go-libvirt can hang at the end of a download: its call returns at the stream's end while the
// connection's reader goroutine, holding the lock the call's deregistration needs, waits to hand
// the call one more packet (seen by make chaos's snapshot scenario: an apply waited in the
// download of a snapshot table, its stack in requestStream's deferred deregister and the reader's
// callback, until its 30-minute timeout). A download here reads a header or a snapshot table, at
// most 64 MiB and most often 64 KiB, so each gets a bound of its own (readBound) instead of the
// apply's, and one cut off at its bound is read again on a new connection (stream abandons the
// stuck one), up to readAttempts times.
func (b *Backend) readVolume(ctx context.Context, pool, volume string, offset, length uint64) ([]byte, error) {
	const op = "read volume"
	object := pool + "/" + volume
	var v golibvirt.StorageVol
	err := b.do(ctx, op, object, func(c conn) error {
		var err error
		v, err = c.volume(pool, volume)
		return err
	})
	if err != nil {
		return nil, err
	}
	var out []byte
	err = retryStuck(ctx, readAttempts, readBound(length), errReadBound, func(ctx context.Context) error {
		var buf bytes.Buffer
		err := b.stream(ctx, op, object, false, func(c conn, cut func()) error {
			buf.Reset()
			s := &sink{w: &buf, cut: cut, gate: c.gate}
			err := c.l.StorageVolDownload(v, s, offset, length, 0)
			if s.err != nil {
				return fmt.Errorf("%s %s: %w", op, object, s.err)
			}
			if err != nil {
				return failedStream(c, op, object, s.n.Load(), err)
			}
			return nil
		})
		if err != nil {
			tflog.SubsystemWarn(ctx, Subsystem, "download of a volume's header or snapshot table failed", map[string]any{"pool": pool, "volume": volume, "offset": offset, "length": length, "error": err.Error()})
			return err
		}
		out = buf.Bytes()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// readAttempts is how many times readVolume downloads before it gives up.
const readAttempts = 3

// readBound is how long one download of length bytes by readVolume may take: 30 s, and a second
// more per MiB (a snapshot table is read 64 KiB first, then larger when it is longer).
func readBound(length uint64) time.Duration {
	return 30*time.Second + time.Duration(length>>20)*time.Second
}

// errReadBound is the cause of a download cut off at its readBound.
var errReadBound = errors.New("the download outlived its own bound (go-libvirt can hang at the end of a download)")

// retryStuck runs fn up to attempts times, each within bound (cause: why the bound ended it): a
// run cut off by its own bound, the caller's context still live, is run again; success, any
// other error, or the caller's context ending, ends it.
func retryStuck(ctx context.Context, attempts int, bound time.Duration, cause error, fn func(context.Context) error) error {
	var err error
	for range attempts {
		actx, cancel := context.WithTimeoutCause(ctx, bound, cause)
		err = fn(actx)
		stuck := actx.Err() != nil && ctx.Err() == nil
		cancel()
		if err == nil || !stuck {
			return err
		}
	}
	return err
}
