package group

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// noSwtpm is what libvirt 9.0 lists on a host without swtpm: no emulator backend, no versions.
func noSwtpm() backend.DomainCaps {
	c := fake.DefaultCaps("qemu")
	c.TPM = &engine.HostTPM{Supported: true, Models: []string{engine.TPMModelTIS, engine.TPMModelCRB}, BackendModels: []string{"passthrough", "external"}, VersionsListed: true}
	return c
}

// TestCheckHostTPM checks TPMs against fake hosts' domain capabilities: each refusal is on the
// attribute, quotes the value, names the host and says what it offers or what to install; a
// host that does not mention the TPM, or cannot be read, is not judged.
func TestCheckHostTPM(t *testing.T) {
	t.Parallel()
	unsupported := fake.DefaultCaps("qemu")
	unsupported.TPM = &engine.HostTPM{}
	tisOnly := fake.DefaultCaps("qemu")
	tisOnly.TPM = &engine.HostTPM{Supported: true, Models: []string{engine.TPMModelTIS}, BackendModels: []string{engine.TPMBackendEmulator}}
	old := fake.DefaultCaps("qemu")
	old.TPM = nil
	crb := engine.TPM{Model: engine.TPMModelCRB, Version: engine.TPMVersion2}
	type want struct {
		Path  string
		Words []string
	}
	cases := map[string]struct {
		caps    *backend.DomainCaps
		machine string
		down    bool
		want    []want
	}{
		"swtpm installed": {},
		"no swtpm": {caps: ptr(noSwtpm()),
			want: []want{{"template.tpm", []string{`host "h2"`, "offers passthrough, external", "apt-get install swtpm swtpm-tools", "restart libvirtd"}}}},
		"no tpm devices": {caps: &unsupported, want: []want{{"template.tpm", []string{`host "h2"`, "no TPM devices"}}}},
		"crb not offered": {caps: &tisOnly,
			want: []want{{"template.tpm.model", []string{`tpm model = "tpm-crb"`, `host "h2"`, "offers tpm-tis"}}}},
		"capabilities without the tpm": {caps: &old},
		"unknown machine":              {machine: "pc-q35-99.0"},
		"host does not answer":         {down: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := fake.New()
			if tc.caps != nil {
				b.Caps = map[string]backend.DomainCaps{"qemu": *tc.caps}
			}
			if tc.down {
				b.Hook = func(string, string) error { return errors.New("connection refused") }
			}
			var diags diag.Diagnostics
			checkHostTPM(context.Background(), &diags, b, "h2", "qemu", tc.machine, crb)
			var got []want
			for _, d := range diags {
				p := ""
				if a, ok := d.(diag.DiagnosticWithPath); ok {
					p = a.Path().String()
				}
				w := want{Path: p}
				for _, tw := range tc.want {
					for _, word := range tw.Words {
						if tw.Path == p && strings.Contains(d.Detail(), word) {
							w.Words = append(w.Words, word)
						}
					}
				}
				got = append(got, w)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s\n%v", diff, diags)
			}
		})
	}
}

// TestCheckGroupHost_tpm: the plan refuses a TPM on a host of the group without swtpm, naming
// that host, when the group is new, the host new to it, or the TPM changed; an update that
// leaves the TPM as it was does not read the host for it.
func TestCheckGroupHost_tpm(t *testing.T) {
	ctx := context.Background()
	group := func(tpm *tpmModel, hostNames ...string) *StatefulGroupModel {
		var list []attr.Value
		for _, h := range hostNames {
			list = append(list, types.StringValue(h))
		}
		m := &StatefulGroupModel{Name: types.StringValue("db"), Pool: types.StringValue("p"), Instances: types.StringNull(),
			Template:     &TemplateModel{DomainType: types.StringValue("qemu"), VCPU: types.Int64Value(1), MemoryMiB: types.Int64Value(64)},
			Distribution: &DistributionModel{Hosts: types.ListValueMust(types.StringType, list)}}
		m.Template.Firmware, m.Template.Machine, m.Template.SecureBoot = types.StringNull(), types.StringNull(), types.BoolNull()
		m.Template.TPM = tpm
		return m
	}
	tpm := func(model string) *tpmModel {
		m := &tpmModel{Model: types.StringNull(), Version: types.StringNull()}
		if model != "" {
			m.Model = types.StringValue(model)
		}
		return m
	}
	const refused = `No TPM emulator (swtpm) on the host: the tpm block needs an emulated TPM (swtpm), and host "h2" offers no emulator backend`
	cases := map[string]struct {
		plan, prior *StatefulGroupModel
		want        string
	}{
		"a new group with a tpm on a host without swtpm": {plan: group(tpm(""), "default", "h2"), want: refused},
		"a new group with a tpm on hosts with swtpm":     {plan: group(tpm(""), "default")},
		"a new group without a tpm":                      {plan: group(nil, "default", "h2")},
		"a tpm added":                                    {plan: group(tpm(""), "default", "h2"), prior: group(nil, "default", "h2"), want: refused},
		"the tpm's model changed":                        {plan: group(tpm("tpm-tis"), "default", "h2"), prior: group(tpm(""), "default", "h2"), want: refused},
		"a host without swtpm new to the group":          {plan: group(tpm(""), "default", "h2"), prior: group(tpm(""), "default"), want: refused},
		"the tpm as it was":                              {plan: group(tpm(""), "default", "h2"), prior: group(tpm(""), "default", "h2")},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			def, h2 := fake.New(), fake.New()
			h2.Caps = map[string]backend.DomainCaps{"qemu": noSwtpm()}
			rec := reconcile.New(def)
			rec.Hosts = map[string]backend.Backend{"h2": h2}
			r := &StatefulGroupResource{Data: &providerdata.ProviderData{Reconciler: rec}}
			var diags diag.Diagnostics
			r.CheckGroupHost(ctx, &diags, c.plan, c.prior)
			var got []string
			for _, d := range diags.Errors() {
				got = append(got, d.Summary()+": "+d.Detail())
				if a, ok := d.(diag.DiagnosticWithPath); !ok || a.Path().String() != "template.tpm" {
					t.Errorf("an error not on template.tpm: %v", d)
				}
			}
			switch {
			case c.want == "" && len(got) > 0:
				t.Errorf("refused: %s", strings.Join(got, "; "))
			case c.want != "" && (len(got) != 1 || !strings.HasPrefix(got[0], c.want)):
				t.Errorf("errors %q, want one starting %q", got, c.want)
			}
		})
	}
}
