package engine

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Bounds of what users write, checked at plan time so that an absurd value is refused with its
// attribute and the allowed range instead of failing (or overflowing) later.

// DurationRule is the range a duration attribute accepts.
type DurationRule struct {
	// Min is the least value; with Positive, a value must also be above zero.
	Min      time.Duration
	Positive bool
	// Max is the greatest value, chosen as what a user would still find sane, so that a typo
	// (2,000,000h for 2h) is caught; Max is written in the attribute's description.
	Max time.Duration
}

// The bounds of the group's durations and of the resources' timeouts block.
var (
	// ShutdownTimeoutRule: "0s" powers off at once; no guest needs a day to shut down.
	ShutdownTimeoutRule = DurationRule{Max: 24 * time.Hour}
	// HealDelayRule bounds auto_healing's initial_delay and backoff: a week.
	HealDelayRule = DurationRule{Max: 7 * 24 * time.Hour}
	// PreserveTimeoutRule bounds failed_instance_preservation's preserve_timeout: 30 days.
	PreserveTimeoutRule = DurationRule{Max: 30 * 24 * time.Hour}
	// OperationTimeoutRule bounds a timeouts block's create, update and delete: more than zero
	// (a zero or negative limit would stop every operation before it starts) and at most a week.
	OperationTimeoutRule = DurationRule{Positive: true, Max: 7 * 24 * time.Hour}
	// HostTimeoutRule bounds the provider's host_timeout, what a plan waits on one host: a
	// second at least (a daemon at the other end of a network answers a listing in less, but
	// not in nothing), an hour at most (a plan that waits longer is one users kill).
	HostTimeoutRule = DurationRule{Min: time.Second, Max: time.Hour}
)

// DefaultHostTimeout is host_timeout when the provider block leaves it out: a daemon answers a
// plan's readings in well under a second, and a plan should not wait long on one that does not.
const DefaultHostTimeout = 10 * time.Second

// Allowed says in words what the rule accepts, for descriptions and diagnostics.
func (r DurationRule) Allowed() string {
	low := "zero or more"
	switch {
	case r.Min > 0:
		low = "at least " + FormatDuration(r.Min)
	case r.Positive:
		low = "more than zero"
	}
	return fmt.Sprintf("a duration of %s and at most %s, such as \"60s\", \"10m\" or \"2h\"", low, FormatDuration(r.Max))
}

// Parse reads a duration as users write it (a Go duration) and checks it against the rule.
func (r DurationRule) Parse(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is not a duration such as \"60s\", \"10m\" or \"2h\"", s)
	case d < r.Min || (r.Positive && d <= 0):
		return 0, fmt.Errorf("%q is too short: the least allowed is %s", s, r.low())
	case d > r.Max:
		return 0, fmt.Errorf("%q is too long: the most allowed is %s", s, FormatDuration(r.Max))
	}
	return d, nil
}

func (r DurationRule) low() string {
	if r.Positive {
		return "more than 0s"
	}
	return FormatDuration(r.Min)
}

// FormatDuration writes d in the largest whole unit among days, hours, minutes and seconds, as
// people read bounds ("7d" rather than "168h0m0s"); Go's duration syntax has no days, so a
// bound in days is also given in hours.
func FormatDuration(d time.Duration) string {
	switch {
	case d > 24*time.Hour && d%(24*time.Hour) == 0:
		return fmt.Sprintf("%d days (\"%dh\")", d/(24*time.Hour), d/time.Hour)
	case d >= time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d >= time.Minute && d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

// Text that travels in libvirt calls. libvirt carries a domain definition, its metadata and a
// secret's XML each as one RPC string of at most 4 MiB (REMOTE_STRING_MAX, 4194304 bytes). The
// template's texts go into every member's record (JSON inside the domain's XML) and into the
// group record, and a config's metadata into its member's record beside them. Measured
// (TestAccStatefulGroup_largestTemplateTextFits): text made of the characters escaping grows most
// (control characters, <, ", &) takes about ten times its size in a member's definition, and a
// member being replaced holds two copies (its record and the in-flight marker): 256 KiB of such
// user_data failed at "mark in flight" with libvirt's "Unable to decode message payload". The
// bounds leave room for both copies and a config's metadata, and stay above what cloud-init
// user-data usually is (clouds allow 16 to 256 KiB).
const (
	// MaxTemplateTextBytes bounds the template's user_data, network_config, metadata, labels and
	// description together.
	MaxTemplateTextBytes = 128 << 10
	// MaxConfigMetadataBytes bounds a per-instance config's metadata (keys and values).
	MaxConfigMetadataBytes = 16 << 10
)

// TextPart is one text of a template or config and its size in bytes.
type TextPart struct {
	Attribute string // as users write it: "cloud_init.user_data"
	Bytes     int
}

// MapBytes is the size a map's keys and values take.
func MapBytes(m map[string]string) int {
	n := 0
	for k, v := range m {
		n += len(k) + len(v)
	}
	return n
}

// TemplateTexts lists the template's texts that travel in every record, largest first.
func TemplateTexts(t Template) []TextPart {
	parts := []TextPart{
		{"metadata", MapBytes(t.Metadata)},
		{"labels", MapBytes(t.Labels)},
		{"description", len(t.Description)},
	}
	if t.CloudInit != nil {
		parts = append(parts, TextPart{"cloud_init.user_data", len(t.CloudInit.UserData)}, TextPart{"cloud_init.network_config", len(t.CloudInit.NetworkConfig)})
	}
	slices.SortStableFunc(parts, func(a, b TextPart) int { return b.Bytes - a.Bytes })
	return parts
}

// CheckTextSize refuses texts whose total is above limit, naming each part's size; "what" names
// the texts ("the template's user_data, ..."). It returns nil when they fit.
func CheckTextSize(parts []TextPart, limit int, what string) error {
	total := 0
	var sizes []string
	for _, p := range parts {
		total += p.Bytes
		if p.Bytes > 0 {
			sizes = append(sizes, fmt.Sprintf("%s %s", p.Attribute, FormatBytes(p.Bytes)))
		}
	}
	if total <= limit {
		return nil
	}
	return fmt.Errorf("%s take %s in all (%s), more than the %s allowed: libvirt carries them in the members' definitions and in the group record, each one RPC string of at most 4 MiB, where escaping can make one byte six. Make them smaller (for a large payload, have user_data fetch it, or put it in an image or a volume)",
		what, FormatBytes(total), strings.Join(sizes, ", "), FormatBytes(limit))
}

// FormatBytes writes n in bytes, with KiB or MiB beside it when n is that large.
func FormatBytes(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%d bytes (%.1f MiB)", n, float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d bytes (%.1f KiB)", n, float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
