// Package seed builds the cloud-init NoCloud seed a group member boots with: its meta-data, user-data and
// network-config, packed as an ISO 9660 image labelled "cidata" that the backend attaches as a CD-ROM.
//
// The package is pure: it builds bytes in memory and imports nothing of Terraform or libvirt. The image is
// byte-for-byte the same for the same Seed (fixed timestamps, sorted entries, no version stamp), so a plan can
// tell whether a member's seed changed by comparing Hash values, without reading anything back from a host.
package seed

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"
)

// Seed is what one member's cloud-init is told about itself.
type Seed struct {
	// InstanceID is cloud-init's instance-id. cloud-init runs its once-per-instance modules again when it
	// changes, so it is the member's name, which stays the same across restart and replace.
	InstanceID string
	// Hostname becomes local-hostname.
	Hostname string
	// Metadata is the member's effective metadata, written as further top-level meta-data keys. The keys
	// instance-id and local-hostname are left out: the member's own identity always wins.
	Metadata map[string]string
	// UserData is written as user-data verbatim; the file is always there, empty when this is "".
	UserData string
	// NetworkConfig is written as network-config verbatim, and only when it is not "": without the file,
	// cloud-init falls back to its default network configuration.
	NetworkConfig string
}

// Names of the seed's files, as cloud-init's NoCloud data source looks them up at the root of the volume.
const (
	VolumeID          = "cidata"
	MetaDataFile      = "meta-data"
	UserDataFile      = "user-data"
	NetworkConfigFile = "network-config"
)

// reservedKeys are the meta-data keys the seed writes itself; metadata entries with these names are
// dropped rather than written twice, since a YAML mapping with a duplicate key is an error or, worse,
// silently takes the last value depending on the parser.
var reservedKeys = map[string]bool{"instance-id": true, "local-hostname": true}

// MetaData renders the meta-data file: instance-id and local-hostname first, then the metadata entries
// sorted by key, one `key: "value"` per line. Every value is a YAML double-quoted scalar, so no value can
// change type (yes, 012, null) or break the document (a newline, a colon, a leading '&').
func (s Seed) MetaData() []byte {
	var b strings.Builder
	writeYAMLEntry(&b, "instance-id", s.InstanceID)
	writeYAMLEntry(&b, "local-hostname", s.Hostname)

	keys := make([]string, 0, len(s.Metadata))
	for k := range s.Metadata {
		if !reservedKeys[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		writeYAMLEntry(&b, k, s.Metadata[k])
	}
	return []byte(b.String())
}

// files lists the seed's files in the order the image holds them.
func (s Seed) files() []isoFile {
	files := []isoFile{
		{name: MetaDataFile, data: s.MetaData()},
		{name: UserDataFile, data: []byte(s.UserData)},
	}
	if s.NetworkConfig != "" {
		files = append(files, isoFile{name: NetworkConfigFile, data: []byte(s.NetworkConfig)})
	}
	return files
}

// ISO builds the seed image: ISO 9660 with Rock Ridge and Joliet, volume identifier "cidata", the files
// at the root under their exact lowercase names.
func (s Seed) ISO() ([]byte, error) {
	return buildISO(VolumeID, s.files())
}

// Hash is the hex SHA-256 of the image ISO builds, or "" when the image cannot be built (ISO reports why).
// Two seeds have the same hash exactly when their images are the same bytes.
func (s Seed) Hash() string {
	img, err := s.ISO()
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(img)
	return hex.EncodeToString(sum[:])
}
