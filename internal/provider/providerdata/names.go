package providerdata

import "regexp"

// The patterns of disk sources, as regular expressions the schema validators can show. Names
// (groups, base instance names, hosts, device names) follow the engine's NamePattern and
// DeviceNamePattern, which the validators read from there.
var (
	AbsolutePathRegexp = regexp.MustCompile(`^/`)
	// SourceRegexp is a per-instance config disk's source: a volume name, or an absolute path.
	SourceRegexp = regexp.MustCompile(`^(/.+|[^/]+)$`)
)
