package libvirt

import "testing"

// A pool's id is the UUID as formatUUID writes it; PoolByUUID and DeletePool read it back.
func TestParseUUID(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		in string
		ok bool
	}{
		"as libvirt writes it": {in: "f03353ea-fbf6-4a6a-aeb2-81f01b2e5443", ok: true},
		"too short":            {in: "f03353ea-fbf6-4a6a-aeb2"},
		"not hex":              {in: "z03353ea-fbf6-4a6a-aeb2-81f01b2e5443"},
		"a name":               {in: "virt"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			u, err := parseUUID(tc.in)
			if (err == nil) != tc.ok {
				t.Fatalf("parseUUID(%q): error %v, want ok %v", tc.in, err, tc.ok)
			}
			if tc.ok && formatUUID(u) != tc.in {
				t.Errorf("round trip: %q, want %q", formatUUID(u), tc.in)
			}
		})
	}
}
