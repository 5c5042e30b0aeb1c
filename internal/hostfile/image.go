package hostfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// qcow2Magic opens every qcow2 image.
const qcow2Magic = "QFI\xfb"

// qcow2ExternalData is the incompatible-feature bit of a qcow2 (version 3) image whose guest
// data lives in another file, named in the image.
const qcow2ExternalData = 1 << 2

// Image is a disk image as its first bytes describe it.
type Image struct {
	// Format is "qcow2" or "raw".
	Format string
	// VirtualBytes is the disk's size as a guest sees it; Bytes the file's length.
	VirtualBytes uint64
	Bytes        uint64
}

// ReadImage reads the header of the image r holds (size bytes long). A qcow2 image that names
// another file (a backing file, or an external data file) is refused: the file it names is
// opened by name, with no judgement, by whoever reads the image, so the image is not
// self-contained and the provider does not copy it. Flatten it first (qemu-img convert -O
// qcow2 in.qcow2 out.qcow2).
func ReadImage(r io.ReaderAt, size int64) (Image, error) {
	img := Image{Format: "raw", VirtualBytes: uint64(size), Bytes: uint64(size)}
	var h [80]byte
	n, err := r.ReadAt(h[:], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return Image{}, err
	}
	if n < 4 || string(h[:4]) != qcow2Magic {
		return img, nil
	}
	if n < 32 {
		return Image{}, fmt.Errorf("a qcow2 image of %d bytes has no whole header", size)
	}
	version := binary.BigEndian.Uint32(h[4:8])
	if off := binary.BigEndian.Uint64(h[8:16]); off != 0 {
		return Image{}, errors.New("it is a qcow2 image with a backing file of its own, which would be opened by name without a check: flatten it first (qemu-img convert -O qcow2 <image> <flat image>)")
	}
	if version >= 3 {
		if n < 80 {
			return Image{}, fmt.Errorf("a qcow2 version %d image of %d bytes has no whole header", version, size)
		}
		if binary.BigEndian.Uint64(h[72:80])&qcow2ExternalData != 0 {
			return Image{}, errors.New("it is a qcow2 image whose data is in an external data file, which would be opened by name without a check: flatten it first (qemu-img convert -O qcow2 <image> <flat image>)")
		}
	}
	img.Format = "qcow2"
	img.VirtualBytes = binary.BigEndian.Uint64(h[24:32])
	return img, nil
}
