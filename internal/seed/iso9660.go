package seed

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"
	"unicode/utf16"
)

// A minimal ISO 9660 (ECMA-119) writer for one flat directory of small files, with two extensions that
// carry the files' real names: Rock Ridge in the primary tree (what Linux and the BSDs mount by default)
// and Joliet in a supplementary tree (what Windows reads). Plain ISO 9660 names are upper case d-characters
// only, so without an extension "meta-data" would reach the guest as META_DATA. and cloud-init would not
// find it.
//
// The layout is fixed, which keeps the writer small and its output deterministic:
//
//	sectors 0-15   system area, zeros
//	16             primary volume descriptor
//	17             Joliet supplementary volume descriptor
//	18             volume descriptor set terminator
//	19-20          primary path tables (L, M)
//	21-22          Joliet path tables (L, M)
//	23             primary root directory, with Rock Ridge entries
//	24             Joliet root directory
//	25-            file data, each file from a sector boundary, in name order
//	last 150       zero padding, as genisoimage adds by default, so a drive's read-ahead past the last file
//	               stays inside the volume
const (
	sectorSize = 2048

	sectorPVD        = 16
	sectorSVD        = 17
	sectorTerminator = 18
	sectorPathL      = 19
	sectorPathM      = 20
	sectorJolietL    = 21
	sectorJolietM    = 22
	sectorRoot       = 23
	sectorJolietRoot = 24
	sectorFirstData  = 25
	padSectors       = 150

	// maxJolietName is the longest Joliet file identifier, in UCS-2 characters.
	maxJolietName = 64
)

// isoFile is one file at the root of the image.
type isoFile struct {
	name string // as the guest sees it: [a-z0-9._-], e.g. "meta-data"
	data []byte
}

// placedFile is an isoFile with the sector its data starts at.
type placedFile struct {
	isoFile
	extent uint32
}

// recordingTime is every timestamp in the image: the Unix epoch, in UTC. A constant keeps the image the
// same bytes for the same files. blkid shows the volume's dates as its UUID, so every seed has the same
// one; cloud-init finds its seed by the label, never by UUID.
var recordingTime = [7]byte{70, 1, 1, 0, 0, 0, 0} // years since 1900, month, day, h, m, s, UTC offset

const volumeTime = "1970010100000000" // the same instant as a 17-byte volume descriptor date, less its offset

func buildISO(volumeID string, files []isoFile) ([]byte, error) {
	if err := checkVolumeID(volumeID); err != nil {
		return nil, err
	}
	sorted := append([]isoFile(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })

	placed := make([]placedFile, len(sorted))
	next := uint64(sectorFirstData)
	for i, f := range sorted {
		if err := checkFileName(f.name); err != nil {
			return nil, err
		}
		if i > 0 && f.name == sorted[i-1].name {
			return nil, fmt.Errorf("seed image: file %q is listed twice", f.name)
		}
		if uint64(len(f.data)) > 1<<32-1 {
			return nil, fmt.Errorf("seed image: file %q is %d bytes, over the 4 GiB an ISO 9660 extent holds", f.name, len(f.data))
		}
		// An empty file takes no sector; its extent points where the next data would start, still inside
		// the volume thanks to the padding.
		placed[i] = placedFile{isoFile: f, extent: uint32(next)}
		next += (uint64(len(f.data)) + sectorSize - 1) / sectorSize
	}
	total := next + padSectors
	if total > 1<<32-1 {
		return nil, fmt.Errorf("seed image: %d sectors do not fit an ISO 9660 volume", total)
	}

	root, err := directory(sectorRoot, placed, primaryName, rockRidge)
	if err != nil {
		return nil, err
	}
	jolietRoot, err := directory(sectorJolietRoot, placed, jolietName, nil)
	if err != nil {
		return nil, err
	}

	img := make([]byte, total*sectorSize)
	sector := func(n int) []byte { return img[n*sectorSize : (n+1)*sectorSize] }

	pathSize := writePathTables(sector(sectorPathL), sector(sectorPathM), sectorRoot)
	writePathTables(sector(sectorJolietL), sector(sectorJolietM), sectorJolietRoot)
	writeVolumeDescriptor(sector(sectorPVD), volumeDescriptor{
		kind: 1, text: asciiText, volumeID: volumeID, sectors: uint32(total), pathTableSize: pathSize,
		pathL: sectorPathL, pathM: sectorPathM, root: rootRecord(sectorRoot),
	})
	writeVolumeDescriptor(sector(sectorSVD), volumeDescriptor{
		kind: 2, text: ucs2Text, volumeID: volumeID, sectors: uint32(total), pathTableSize: pathSize,
		pathL: sectorJolietL, pathM: sectorJolietM, root: rootRecord(sectorJolietRoot),
		// Joliet level 3 (UCS-2, no restriction on characters beyond the Joliet specification).
		escape: []byte{'%', '/', 'E'},
	})
	terminator := sector(sectorTerminator)
	terminator[0] = 255
	copy(terminator[1:], "CD001")
	terminator[6] = 1

	copy(sector(sectorRoot), root)
	copy(sector(sectorJolietRoot), jolietRoot)
	for _, f := range placed {
		copy(img[int(f.extent)*sectorSize:], f.data)
	}
	return img, nil
}

func checkVolumeID(id string) error {
	// Joliet stores the volume identifier as 16 UCS-2 characters; the primary descriptor keeps it as given,
	// in lower case, as genisoimage does, because that is the label blkid and cloud-init match.
	if id == "" || len(id) > 16 {
		return fmt.Errorf("seed image: volume identifier %q must be 1 to 16 characters", id)
	}
	for _, c := range []byte(id) {
		if !isNameByte(c) {
			return fmt.Errorf("seed image: volume identifier %q may only hold a-z, 0-9, '.', '_' and '-'", id)
		}
	}
	return nil
}

func checkFileName(name string) error {
	if name == "" || len(name) > maxJolietName || name == "." || name == ".." {
		return fmt.Errorf("seed image: file name %q must be 1 to %d characters, other than \".\" and \"..\"", name, maxJolietName)
	}
	for _, c := range []byte(name) {
		if !isNameByte(c) {
			return fmt.Errorf("seed image: file name %q may only hold a-z, 0-9, '.', '_' and '-'", name)
		}
	}
	return nil
}

func isNameByte(c byte) bool {
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'
}

// primaryName is the plain ISO 9660 identifier of a file: upper case d-characters, at most 30 of them
// (interchange level 2), a '.' before the empty or given extension, and version 1. Rock Ridge carries the
// real name beside it; this one is only what a reader without extensions shows.
func primaryName(name string) []byte {
	base, ext := name, ""
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '.' {
			base, ext = name[:i], name[i+1:]
			break
		}
	}
	base, ext = dCharacters(base), dCharacters(ext)
	if len(base)+len(ext) > 30 {
		base = base[:30-min(len(ext), 30)]
		ext = ext[:30-len(base)]
	}
	return []byte(base + "." + ext + ";1")
}

// dCharacters maps a name onto ISO 9660 d-characters: A-Z, 0-9 and '_'.
func dCharacters(s string) string {
	out := []byte(s)
	for i, c := range out {
		switch {
		case c >= 'a' && c <= 'z':
			out[i] = c - 'a' + 'A'
		case c >= '0' && c <= '9':
		default:
			out[i] = '_'
		}
	}
	return string(out)
}

// jolietName is the Joliet identifier of a file: its name in UCS-2 big-endian, with no version suffix, so
// a reader shows it exactly as given.
func jolietName(name string) []byte {
	return ucs2(name)
}

func ucs2(s string) []byte {
	units := utf16.Encode([]rune(s))
	out := make([]byte, 2*len(units))
	for i, u := range units {
		binary.BigEndian.PutUint16(out[2*i:], u)
	}
	return out
}

// directory builds the one sector of a root directory: ".", "..", then the files. systemUse, when not nil,
// gives each record its System Use field (Rock Ridge).
func directory(
	self uint32, files []placedFile, name func(string) []byte, systemUse func(entry int, f placedFile) []byte,
) ([]byte, error) {
	var out []byte
	add := func(r dirRecord) error {
		b, err := r.bytes()
		if err != nil {
			return err
		}
		out = append(out, b...)
		return nil
	}
	su := func(entry int, f placedFile) []byte {
		if systemUse == nil {
			return nil
		}
		return systemUse(entry, f)
	}
	// The root is its own parent.
	if err := add(dirRecord{extent: self, size: sectorSize, dir: true, id: []byte{0}, systemUse: su(entryDot, placedFile{})}); err != nil {
		return nil, err
	}
	if err := add(dirRecord{extent: self, size: sectorSize, dir: true, id: []byte{1}, systemUse: su(entryDotDot, placedFile{})}); err != nil {
		return nil, err
	}
	// Records are in the order of their identifiers (ECMA-119 9.3), which for the primary tree's mapped
	// names need not be the order of the real names.
	records := make([]dirRecord, len(files))
	for i, f := range files {
		records[i] = dirRecord{extent: f.extent, size: uint32(len(f.data)), id: name(f.name), systemUse: su(entryFile, f)}
	}
	sort.Slice(records, func(i, j int) bool { return bytes.Compare(records[i].id, records[j].id) < 0 })
	for i, r := range records {
		if i > 0 && bytes.Equal(r.id, records[i-1].id) {
			return nil, fmt.Errorf("seed image: two files map to the same identifier %q", r.id)
		}
		if err := add(r); err != nil {
			return nil, err
		}
	}
	if len(out) > sectorSize {
		return nil, fmt.Errorf("seed image: the root directory needs %d bytes, over the one sector this writer gives it", len(out))
	}
	return out, nil
}

// Kinds of directory entry, for the System Use field each gets.
const (
	entryDot = iota
	entryDotDot
	entryFile
)

// dirRecord is an ECMA-119 directory record (9.1).
type dirRecord struct {
	extent, size uint32
	dir          bool
	id           []byte
	systemUse    []byte
}

func (r dirRecord) bytes() ([]byte, error) {
	n := 33 + len(r.id)
	if n%2 == 1 {
		n++ // the padding byte that starts the System Use field on an even offset
	}
	n += len(r.systemUse)
	if n%2 == 1 {
		n++
	}
	if n > 255 {
		return nil, fmt.Errorf("seed image: directory record for %q is %d bytes, over 255", r.id, n)
	}
	b := make([]byte, n)
	b[0] = byte(n)
	bothEndian32(b[2:], r.extent)
	bothEndian32(b[10:], r.size)
	copy(b[18:25], recordingTime[:])
	if r.dir {
		b[25] = 0x02
	}
	bothEndian16(b[28:], 1) // volume sequence number
	b[32] = byte(len(r.id))
	copy(b[33:], r.id)
	copy(b[33+len(r.id)+(1-len(r.id)%2):], r.systemUse)
	return b, nil
}

// rootRecord is the 34-byte record of the root directory that a volume descriptor holds.
func rootRecord(extent uint32) []byte {
	b, _ := dirRecord{extent: extent, size: sectorSize, dir: true, id: []byte{0}}.bytes() // 34 bytes, cannot fail
	return b
}

// writePathTables writes the L (little-endian) and M (big-endian) path tables of a volume whose only
// directory is the root, and returns their size in bytes.
func writePathTables(l, m []byte, root uint32) uint32 {
	for _, t := range []struct {
		b     []byte
		order binary.ByteOrder
	}{{l, binary.LittleEndian}, {m, binary.BigEndian}} {
		t.b[0] = 1 // length of the directory identifier, the root's 0x00
		t.order.PutUint32(t.b[2:], root)
		t.order.PutUint16(t.b[6:], 1) // parent directory number: the root is its own parent
	}
	return 10 // 8 + 1-byte identifier + 1 padding byte
}

// volumeDescriptor holds what differs between the primary and the Joliet descriptor.
type volumeDescriptor struct {
	kind          byte                 // 1 primary, 2 supplementary
	text          func([]byte, string) // fills a text field: ASCII for primary, UCS-2 for Joliet
	volumeID      string
	sectors       uint32
	pathTableSize uint32
	pathL, pathM  uint32
	root          []byte
	escape        []byte
}

// writeVolumeDescriptor writes an ECMA-119 primary (8.4) or supplementary (8.5) volume descriptor.
func writeVolumeDescriptor(b []byte, d volumeDescriptor) {
	b[0] = d.kind
	copy(b[1:], "CD001")
	b[6] = 1
	d.text(b[8:40], "")          // system identifier
	d.text(b[40:72], d.volumeID) // volume identifier
	bothEndian32(b[80:], d.sectors)
	copy(b[88:120], d.escape)
	bothEndian16(b[120:], 1) // volume set size
	bothEndian16(b[124:], 1) // volume sequence number
	bothEndian16(b[128:], sectorSize)
	bothEndian32(b[132:], d.pathTableSize)
	binary.LittleEndian.PutUint32(b[140:], d.pathL)
	binary.BigEndian.PutUint32(b[148:], d.pathM)
	copy(b[156:190], d.root)
	d.text(b[190:318], "")                        // volume set identifier
	d.text(b[318:446], "")                        // publisher identifier
	d.text(b[446:574], "")                        // data preparer identifier
	d.text(b[574:702], "TERRAFORM-PROVIDER-VIRT") // application identifier, with no version so the bytes stay
	d.text(b[702:739], "")                        // copyright file identifier
	d.text(b[739:776], "")                        // abstract file identifier
	d.text(b[776:813], "")                        // bibliographic file identifier
	copy(b[813:], volumeTime)                     // creation, then modification; offset byte 0 is UTC
	copy(b[830:], volumeTime)
	copy(b[847:], "0000000000000000") // expiration: not specified
	copy(b[864:], "0000000000000000") // effective: not specified
	b[881] = 1                        // file structure version
}

// asciiText fills a primary descriptor's text field, padded with spaces.
func asciiText(field []byte, s string) {
	for i := range field {
		field[i] = ' '
	}
	copy(field, s)
}

// ucs2Text fills a Joliet descriptor's text field in UCS-2 big-endian, padded with UCS-2 spaces; a field
// of odd length keeps a final zero byte.
func ucs2Text(field []byte, s string) {
	for i := 0; i+1 < len(field); i += 2 {
		field[i], field[i+1] = 0, ' '
	}
	copy(field, ucs2(s))
}

func bothEndian16(b []byte, v uint16) {
	binary.LittleEndian.PutUint16(b, v)
	binary.BigEndian.PutUint16(b[2:], v)
}

func bothEndian32(b []byte, v uint32) {
	binary.LittleEndian.PutUint32(b, v)
	binary.BigEndian.PutUint32(b[4:], v)
}
