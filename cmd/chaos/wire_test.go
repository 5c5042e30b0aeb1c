package main

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestWireFaultByte(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var small, large bool
	for range 10000 {
		b := wireFaultByte(r)
		if b < 64 || b >= 256<<10 {
			t.Fatalf("wireFaultByte = %d, want within [64, 262144)", b)
		}
		small = small || b < 1024
		large = large || b >= 64<<10
	}
	if !small || !large {
		t.Errorf("10000 draws reached below 1 KiB: %t, above 64 KiB: %t; want both", small, large)
	}
}

// A wire trial fails the run when its command did not return within its bound, when the rerun
// did not converge, when bytes were lost or orphans left, and when a member is left down.
func TestWireFailures(t *testing.T) {
	ok := wireTrial{n: 1, op: "update", fault: "stall"}
	cases := map[string]struct {
		trial wireTrial
		want  string // a failure must contain it; "" means no failure
	}{
		"returned and converged": {ok, ""},
		"hung":                   {func() wireTrial { t := ok; t.hung = true; return t }(), "did not return within 3m0s"},
		"rerun failed":           {func() wireTrial { t := ok; t.applyExit = 1; t.recovered = true; t.recoverExit = 1; return t }(), "did not converge"},
		"blamed":                 {func() wireTrial { t := ok; t.blamed = true; return t }(), "did not converge"},
		"bytes lost":             {func() wireTrial { t := ok; t.checks.lost = []string{"x"}; return t }(), "bytes lost: x"},
		"orphan volume":          {func() wireTrial { t := ok; t.checks.orphanVolumes = []string{"v"}; return t }(), "orphan volume: v"},
		"member down":            {func() wireTrial { t := ok; t.checks.down = []string{"m is shutoff"}; return t }(), "members down after the rerun: m is shutoff"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			fails := (&wireResults{trials: []wireTrial{c.trial}}).failures()
			if c.want == "" {
				if len(fails) > 0 {
					t.Fatalf("failures = %q, want none", fails)
				}
				return
			}
			found := false
			for _, f := range fails {
				found = found || strings.Contains(f, c.want)
			}
			if !found {
				t.Errorf("failures = %q, want one containing %q", fails, c.want)
			}
		})
	}
}
