package engine

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestDurationRule_Parse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		rule DurationRule
		in   string
		want time.Duration
		err  string // a regexp the error must match; "" for none
	}{
		{"shutdown: zero powers off at once", ShutdownTimeoutRule, "0s", 0, ""},
		{"shutdown: the default", ShutdownTimeoutRule, "60s", time.Minute, ""},
		{"shutdown: a day", ShutdownTimeoutRule, "24h", 24 * time.Hour, ""},
		{"shutdown: more than a day", ShutdownTimeoutRule, "24h1s", 0, `"24h1s" is too long: the most allowed is 24h`},
		{"shutdown: negative", ShutdownTimeoutRule, "-1s", 0, `"-1s" is too short: the least allowed is 0s`},
		{"shutdown: not a duration", ShutdownTimeoutRule, "forever", 0, `"forever" is not a duration`},
		{"heal delay: a week", HealDelayRule, "168h", 7 * 24 * time.Hour, ""},
		{"heal delay: 2,000,000h", HealDelayRule, "2000000h", 0, `"2000000h" is too long: the most allowed is 7 days \("168h"\)`},
		{"heal delay: beyond what a duration holds", HealDelayRule, "9999999999h", 0, `is not a duration`},
		{"preserve: 30 days", PreserveTimeoutRule, "720h", 30 * 24 * time.Hour, ""},
		{"preserve: a year", PreserveTimeoutRule, "8760h", 0, `the most allowed is 30 days \("720h"\)`},
		{"operation: zero", OperationTimeoutRule, "0s", 0, `"0s" is too short: the least allowed is more than 0s`},
		{"operation: negative", OperationTimeoutRule, "-1s", 0, `too short`},
		{"operation: a second", OperationTimeoutRule, "1s", time.Second, ""},
		{"operation: more than a week", OperationTimeoutRule, "169h", 0, `too long`},
		{"host: the default", HostTimeoutRule, "10s", DefaultHostTimeout, ""},
		{"host: a second", HostTimeoutRule, "1s", time.Second, ""},
		{"host: less than a second", HostTimeoutRule, "500ms", 0, `"500ms" is too short: the least allowed is 1s`},
		{"host: zero", HostTimeoutRule, "0s", 0, `too short`},
		{"host: an hour", HostTimeoutRule, "1h", time.Hour, ""},
		{"host: more than an hour", HostTimeoutRule, "61m", 0, `"61m" is too long: the most allowed is 1h`},
		{"host: not a duration", HostTimeoutRule, "10", 0, `"10" is not a duration`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.rule.Parse(tt.in)
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("Parse(%q): %v", tt.in, err)
			case tt.err != "" && (err == nil || !regexp.MustCompile(tt.err).MatchString(err.Error())):
				t.Fatalf("Parse(%q) = %v, %v; want an error matching %s", tt.in, got, err, tt.err)
			case got != tt.want:
				t.Fatalf("Parse(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
	if got := OperationTimeoutRule.Allowed(); !strings.Contains(got, "more than zero and at most 7 days") {
		t.Errorf("Allowed() = %q", got)
	}
}

func TestDurationRule_Allowed(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		rule DurationRule
		want string
	}{
		"a shutdown":   {ShutdownTimeoutRule, `a duration of zero or more and at most 24h, such as "60s", "10m" or "2h"`},
		"an operation": {OperationTimeoutRule, `a duration of more than zero and at most 7 days ("168h"), such as "60s", "10m" or "2h"`},
		// No example the rule refuses.
		"a host's answer": {HostTimeoutRule, `a duration of at least 1s and at most 1h, such as "60s" or "10m"`},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, tt.rule.Allowed()); diff != "" {
				t.Errorf("Allowed() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckTextSize(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", MaxTemplateTextBytes)
	tests := []struct {
		name string
		t    Template
		err  string
	}{
		{"empty", Template{}, ""},
		{"exactly the bound", Template{Shape: Shape{CloudInit: &CloudInit{UserData: big}}}, ""},
		{"8 MiB of user_data", Template{Shape: Shape{CloudInit: &CloudInit{UserData: strings.Repeat("x", 8<<20)}}},
			`take 8388608 bytes \(8\.0 MiB\) in all \(cloud_init\.user_data 8388608 bytes \(8\.0 MiB\)\), more than the 131072 bytes \(128\.0 KiB\) allowed`},
		{"texts that fit alone but not together", Template{Shape: Shape{Description: "d", CloudInit: &CloudInit{UserData: big[:MaxTemplateTextBytes/2]}}, Metadata: map[string]string{"k": big[:MaxTemplateTextBytes/2]}},
			`metadata 65537 bytes .*, cloud_init\.user_data 65536 bytes .*, description 1 bytes`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckTextSize(TemplateTexts(tt.t), MaxTemplateTextBytes, "texts")
			switch {
			case tt.err == "" && err != nil:
				t.Fatal(err)
			case tt.err != "" && (err == nil || !regexp.MustCompile(tt.err).MatchString(err.Error())):
				t.Fatalf("error %v, want one matching %s", err, tt.err)
			}
		})
	}
}

// TestDoubled: the backoff doubles, and a long backoff after many failures stays a long wait
// instead of overflowing into a negative one.
func TestDoubled(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		d    time.Duration
		n    int
		want time.Duration
	}{
		{"no failure", time.Minute, 0, time.Minute},
		{"three doublings", time.Minute, 3, 8 * time.Minute},
		{"a week after 100 failures", HealDelayRule.Max, 100, 1 << 62},
		{"a minute after 20 failures", time.Minute, 20, time.Minute << 20},
		{"zero stays zero", 0, 50, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := doubled(tt.d, tt.n); got != tt.want {
				t.Fatalf("doubled(%v, %d) = %v, want %v", tt.d, tt.n, got, tt.want)
			}
		})
	}
	// Decide, with the largest backoff and failure count the schema allows, waits: it does not
	// act at once because the wait overflowed.
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	a := AutoHealing{InitialDelay: "0s", Backoff: "168h", MaxConsecutiveFailures: 100}
	d := a.Decide(ManagedInstance{Created: now.Add(-time.Hour).UnixMilli(), Heals: 40, LastHeal: now.Add(-time.Hour).UnixMilli(), InFlight: &DesiredInstance{}}, now, "crashed")
	if d.Act || !d.Until.After(now) {
		t.Fatalf("decision %+v: want a wait after 40 failures with a week's backoff", d)
	}
}
