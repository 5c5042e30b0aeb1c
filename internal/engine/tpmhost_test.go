package engine

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTPMProblems judges a TPM against hosts' domain capabilities: each refusal is on the
// attribute that is missing (the block when there is no TPM or no swtpm), names the host and the
// value, and says what the host offers or what to install; a host that says nothing of the TPM
// is not judged.
func TestTPMProblems(t *testing.T) {
	t.Parallel()
	// What libvirt 9.0 lists on Debian 12 with swtpm installed.
	full := func() *HostTPM {
		return &HostTPM{Supported: true, Models: []string{TPMModelTIS, TPMModelCRB}, BackendModels: []string{"passthrough", "emulator", "external"},
			Versions: []string{"1.2", "2.0"}, VersionsListed: true}
	}
	with := func(f func(*HostTPM)) *HostTPM { h := full(); f(h); return h }
	crb := TPM{Model: TPMModelCRB, Version: TPMVersion2}
	type problem struct {
		Field string
		Words []string // words the problem must say
	}
	cases := map[string]struct {
		tpm     TPM
		offered *HostTPM
		want    []problem
	}{
		"supported":   {tpm: crb, offered: full()},
		"tis":         {tpm: TPM{Model: TPMModelTIS, Version: TPMVersion2}, offered: full()},
		"unsupported": {tpm: crb, offered: &HostTPM{}, want: []problem{{"tpm", []string{`host "h2"`, "no TPM devices", "kvm"}}}},
		"model missing": {tpm: crb, offered: with(func(h *HostTPM) { h.Models = []string{TPMModelTIS} }),
			want: []problem{{"tpm.model", []string{`tpm model = "tpm-crb"`, `host "h2"`, "offers tpm-tis"}}}},
		"emulator missing": {tpm: crb, offered: with(func(h *HostTPM) { h.BackendModels = []string{"passthrough", "external"}; h.Versions = nil }),
			want: []problem{{"tpm", []string{`host "h2"`, "offers passthrough, external", "swtpm swtpm-tools", "restart libvirtd"}}}},
		"no backends at all": {tpm: crb, offered: with(func(h *HostTPM) { h.BackendModels = nil }),
			want: []problem{{"tpm", []string{"offers none", "swtpm"}}}},
		"version missing": {tpm: crb, offered: with(func(h *HostTPM) { h.Versions = []string{"1.2"} }),
			want: []problem{{"tpm.version", []string{`tpm version = "2.0"`, `host "h2"`, "which is 1.2"}}}},
		"version enum absent": {tpm: crb, offered: with(func(h *HostTPM) { h.Versions, h.VersionsListed = nil, false })},
		"model and version missing": {tpm: crb, offered: with(func(h *HostTPM) { h.Models, h.Versions = []string{TPMModelTIS}, nil }),
			want: []problem{{"tpm.model", []string{"tpm-crb"}}, {"tpm.version", []string{"which is none"}}}},
		"tpm element absent": {tpm: crb, offered: nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var got []problem
			for _, p := range TPMProblems(tc.tpm, tc.offered, `host "h2"`, "kvm") {
				g := problem{Field: p.Field}
				for _, w := range tc.want {
					for _, word := range w.Words {
						if w.Field == p.Field && strings.Contains(p.Problem, word) {
							g.Words = append(g.Words, word)
						}
					}
				}
				got = append(got, g)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s\n%v", diff, TPMProblems(tc.tpm, tc.offered, `host "h2"`, "kvm"))
			}
		})
	}
}
