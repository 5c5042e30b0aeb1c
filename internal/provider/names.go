package provider

import "regexp"

// These mirror the engine's name rules, as regular expressions the schema validators can show.
var (
	dnsLabelRegexp     = regexp.MustCompile(`^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$`)
	nameRegexp         = dnsLabelRegexp
	deviceNameRegexp   = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)
	absolutePathRegexp = regexp.MustCompile(`^/`)
)

// sourceRegexp is a per-instance config disk's source: a volume name, or an absolute path.
var sourceRegexp = regexp.MustCompile(`^(/.+|[^/]+)$`)
