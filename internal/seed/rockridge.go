package seed

// Rock Ridge (RRIP 1.10, "RRIP_1991A") over the System Use Sharing Protocol, as far as one flat directory
// of read-only files needs it: the real name (NM), POSIX mode and owner (PX) and the time (TF). Linux
// detects Rock Ridge by the SP entry in the root's "." record and, on the ER entry there, prefers it to
// Joliet, which is how the guest's cloud-init sees "meta-data" rather than META_DATA.

const (
	modeDirectory = 0o040555 // dr-xr-xr-x
	modeFile      = 0o100444 // -r--r--r--

	// Flags of the RR entry: which Rock Ridge entries a record carries (RRIP 1.10, 4.1.5).
	rrPX = 0x01
	rrNM = 0x08
	rrTF = 0x80

	erID         = "RRIP_1991A"
	erDescriptor = "THE ROCK RIDGE INTERCHANGE PROTOCOL PROVIDES SUPPORT FOR POSIX FILE SYSTEM SEMANTICS"
	// The specification's suggested source text goes on to point at the publisher identifier; this shorter
	// form keeps the root's "." record, which carries SP, RR, PX, TF and ER, within its 255 bytes.
	erSource = "PLEASE CONTACT DISC PUBLISHER FOR SPECIFICATION SOURCE."
)

// rockRidge returns the System Use field of a record in the primary root directory.
func rockRidge(entry int, f placedFile) []byte {
	switch entry {
	case entryDot:
		// SP must come first in the root's "." record: it announces SUSP; ER names the extension.
		su := suspSP()
		su = append(su, suspRR(rrPX|rrTF)...)
		su = append(su, suspPX(modeDirectory, 2)...)
		su = append(su, suspTF()...)
		return append(su, suspER()...)
	case entryDotDot:
		su := suspRR(rrPX | rrTF)
		su = append(su, suspPX(modeDirectory, 2)...)
		return append(su, suspTF()...)
	default:
		su := suspRR(rrPX | rrNM | rrTF)
		su = append(su, suspNM(f.name)...)
		su = append(su, suspPX(modeFile, 1)...)
		return append(su, suspTF()...)
	}
}

// suspSP is the SUSP indicator (SUSP 5.3): check bytes BE EF, and no bytes skipped before each field.
func suspSP() []byte { return []byte{'S', 'P', 7, 1, 0xbe, 0xef, 0} }

// suspRR is the RRIP 1.10 RR entry, which lists the Rock Ridge entries of the record.
func suspRR(flags byte) []byte { return []byte{'R', 'R', 5, 1, flags} }

// suspPX gives POSIX mode, link count, and owner and group 0 (RRIP 1.10 4.1.1, without the serial number
// that 1.12 added).
func suspPX(mode, links uint32) []byte {
	b := make([]byte, 36)
	copy(b, "PX")
	b[2], b[3] = 36, 1
	bothEndian32(b[4:], mode)
	bothEndian32(b[12:], links)
	// uid and gid stay 0
	return b
}

// suspTF records the modification time, the same constant as every other date in the image.
func suspTF() []byte {
	b := []byte{'T', 'F', 5 + 7, 1, 0x02}
	return append(b, recordingTime[:]...)
}

// suspNM is the file's real name, whole, in one entry (names here are at most 64 bytes).
func suspNM(name string) []byte {
	b := []byte{'N', 'M', byte(5 + len(name)), 1, 0}
	return append(b, name...)
}

// suspER is the extension reference (SUSP 5.5) that declares Rock Ridge on the volume.
func suspER() []byte {
	b := []byte{'E', 'R', byte(8 + len(erID) + len(erDescriptor) + len(erSource)), 1,
		byte(len(erID)), byte(len(erDescriptor)), byte(len(erSource)), 1}
	b = append(b, erID...)
	b = append(b, erDescriptor...)
	return append(b, erSource...)
}
