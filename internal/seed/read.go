package seed

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrNoFile is returned by ReadFile when the image has no file of that name.
var ErrNoFile = errors.New("no such file in the seed image")

// ReadFile returns the data of the file of that name at the root of a seed image, as ISO builds
// it: found in the Joliet tree, which carries the files' real names. It reads what a host gave
// back, so it checks every offset against the image and never trusts a size; an image of
// another shape is an error, not a guess.
func ReadFile(img []byte, name string) ([]byte, error) {
	root, err := jolietRoot(img)
	if err != nil {
		return nil, err
	}
	dir, err := extent(img, root)
	if err != nil {
		return nil, fmt.Errorf("seed image: root directory: %w", err)
	}
	want := ucs2(name)
	for off := 0; off < len(dir); {
		n := int(dir[off])
		if n == 0 {
			// Records never cross a sector: the rest of this sector is padding.
			off = (off/sectorSize + 1) * sectorSize
			continue
		}
		if n < 34 || off+n > len(dir) {
			return nil, fmt.Errorf("seed image: bad directory record at offset %d", off)
		}
		rec := dir[off : off+n]
		idLen := int(rec[32])
		if 33+idLen > n {
			return nil, fmt.Errorf("seed image: bad directory record at offset %d", off)
		}
		if rec[25]&0x02 == 0 && string(rec[33:33+idLen]) == string(want) {
			data, err := extent(img, rec)
			if err != nil {
				return nil, fmt.Errorf("seed image: file %s: %w", name, err)
			}
			return data, nil
		}
		off += n
	}
	return nil, fmt.Errorf("seed image: %s: %w", name, ErrNoFile)
}

// jolietRoot finds the root directory record of the Joliet supplementary volume descriptor.
func jolietRoot(img []byte) ([]byte, error) {
	for s := sectorPVD; ; s++ {
		if (s+1)*sectorSize > len(img) {
			return nil, errors.New("seed image: no Joliet volume descriptor (not a seed image, or a truncated one)")
		}
		d := img[s*sectorSize : (s+1)*sectorSize]
		if string(d[1:6]) != "CD001" {
			return nil, fmt.Errorf("seed image: sector %d is not a volume descriptor", s)
		}
		switch {
		case d[0] == 255:
			return nil, errors.New("seed image: no Joliet volume descriptor")
		case d[0] == 2 && d[88] == '%' && d[89] == '/' && (d[90] == '@' || d[90] == 'C' || d[90] == 'E'):
			return d[156 : 156+34], nil
		}
	}
}

// extent is the data a directory record points at, within the image.
func extent(img, rec []byte) ([]byte, error) {
	start := uint64(binary.LittleEndian.Uint32(rec[2:6])) * sectorSize
	size := uint64(binary.LittleEndian.Uint32(rec[10:14]))
	if start+size > uint64(len(img)) {
		return nil, fmt.Errorf("extent of %d bytes at %d is outside the %d-byte image", size, start, len(img))
	}
	return img[start : start+size], nil
}

// UserData is the user-data file of a seed image.
func UserData(img []byte) (string, error) {
	b, err := ReadFile(img, UserDataFile)
	return string(b), err
}
