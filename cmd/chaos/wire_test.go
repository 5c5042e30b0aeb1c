package main

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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

// Two runs on one machine keep apart: no name prefix one sweeps begins another's names, and a
// run name that would let the default run's sweep take the named run's objects is refused.
func TestSetNames(t *testing.T) {
	defaults := ownNames()
	for _, bad := range []string{"wire", "img", "Hw", "h-w", "h_w", "abcd", "toolong"} {
		if err := setNames(bad); err == nil {
			t.Errorf("setNames(%q) = nil, want it refused", bad)
		}
	}
	if diff := cmp.Diff(defaults, ownNames()); diff != "" {
		t.Fatalf("a refused name changed the names (-before +after):\n%s", diff)
	}
	runs := map[string][]string{"": defaults}
	for _, name := range []string{"hw", "hw2", "h", "r", "im"} {
		if err := setNames(name); err != nil {
			t.Fatalf("setNames(%q): %v", name, err)
		}
		runs[name] = ownNames()
		if wireGroup != "tfchaos-"+name+"-w" {
			t.Errorf("run %q: wire group %q, want tfchaos-%s-w", name, wireGroup, name)
		}
		if len(wireGroup) > len("tfchaos-wire")+1 {
			t.Errorf("run %q: wire group %q is longer than the default's by more than a character", name, wireGroup)
		}
	}
	// Back to the default run's names for the other tests.
	prefix = "tfchaos-"
	groupName, moveGroup, wireGroup = prefix+"roll", prefix+"move", prefix+"wire"
	imageNames = [2]string{prefix + "img-a.qcow2", prefix + "img-b.qcow2"}
	for a, as := range runs {
		for b, bs := range runs {
			if a == b {
				continue
			}
			for _, p := range as {
				for _, n := range bs {
					// n stands for any object of run b: its prefix, followed by anything.
					if strings.HasPrefix(n+"-1", p) {
						t.Errorf("run %q's sweep of %q takes run %q's objects named %s…", a, p, b, n)
					}
				}
			}
		}
	}
}
