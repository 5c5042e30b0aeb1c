package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	grouppkg "github.com/virtfleet/terraform-provider-virt/internal/provider/group"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// TestCheckGroupHost_kvmThatCannotRunGuests: a host that lists kvm on a CPU without VMX or SVM
// (its /dev/kvm opens, its KVM cannot run an ordinary guest) is found at plan, not by members
// that pause after the apply: an unset domain_type is qemu there with a warning saying why, and
// kvm for members on such a host is warned about, naming the attribute and the host. A group
// that already runs is warned only when its domain type changes or it reaches a new host.
func TestCheckGroupHost_kvmThatCannotRunGuests(t *testing.T) {
	ctx := context.Background()
	cannot := engine.HostVirt{KVM: true, CPUKnown: true}             // kvm listed, no VMX or SVM
	can := engine.HostVirt{KVM: true, CPUKnown: true, CPUVirt: true} // kvm listed, VMX or SVM
	group := func(domainType types.String, hostNames ...string) *grouppkg.StatefulGroupModel {
		m := &grouppkg.StatefulGroupModel{Name: types.StringValue("db"), Pool: types.StringValue("p"),
			Template:  &grouppkg.TemplateModel{DomainType: domainType, VCPU: types.Int64Value(1), MemoryMiB: types.Int64Value(64)},
			Instances: types.StringNull()}
		if len(hostNames) > 0 {
			var list []attr.Value
			for _, h := range hostNames {
				list = append(list, types.StringValue(h))
			}
			m.Distribution = &grouppkg.DistributionModel{Hosts: types.ListValueMust(types.StringType, list)}
		}
		return m
	}
	running := func(m *grouppkg.StatefulGroupModel) *grouppkg.StatefulGroupModel {
		m.Instances = types.StringValue(`[{"name":"db-1","host":"default","status":"RUNNING"}]`)
		return m
	}
	unset, kvm, qemu := types.StringUnknown(), types.StringValue("kvm"), types.StringValue("qemu")
	const (
		defaulted = `template.domain_type: domain_type defaults to qemu: this host's KVM cannot run guests: host "default" (the provider's uri)`
		kvmOnDef  = `template.domain_type: KVM on this host cannot run ordinary guests: host "default" (the provider's uri)`
		kvmOnH2   = `template.domain_type: KVM on this host cannot run ordinary guests: host "h2"`
	)
	cases := map[string]struct {
		plan, prior     *grouppkg.StatefulGroupModel
		defaultVirt, h2 engine.HostVirt
		want            []string // "path: summary: host" of each warning
	}{
		"unset on a host whose KVM cannot run guests: qemu, and the plan says why": {
			plan: group(unset), defaultVirt: cannot, want: []string{defaulted}},
		"unset on a host whose KVM runs guests: kvm, no warning": {
			plan: group(unset), defaultVirt: can},
		"unset on a host without kvm: qemu, no warning": {
			plan: group(unset)},
		"kvm set on a host whose KVM cannot run guests is warned about": {
			plan: group(kvm), defaultVirt: cannot, want: []string{kvmOnDef}},
		"qemu set on such a host: nothing to say": {
			plan: group(qemu), defaultVirt: cannot},
		"unset, resolved to kvm on the default host, and a second host whose KVM cannot run guests": {
			plan: group(unset, "default", "h2"), defaultVirt: can, h2: cannot, want: []string{kvmOnH2}},
		"a running group whose domain type does not change is not warned at every plan": {
			plan: group(kvm), prior: running(group(kvm)), defaultVirt: cannot},
		"a running group changed to kvm is warned": {
			plan: group(kvm), prior: running(group(qemu)), defaultVirt: cannot, want: []string{kvmOnDef}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			def, h2 := fake.New(), fake.New()
			def.Virt, h2.Virt = c.defaultVirt, c.h2
			rec := reconcile.New(def)
			rec.Hosts = map[string]backend.Backend{"h2": h2}
			r := &grouppkg.StatefulGroupResource{Data: &providerdata.ProviderData{Reconciler: rec}}
			var diags diag.Diagnostics
			r.CheckGroupHost(ctx, &diags, c.plan, c.prior)
			if diags.HasError() {
				t.Fatalf("refused: %v", diags.Errors())
			}
			var got []string
			for _, d := range diags.Warnings() {
				wp, ok := d.(diag.DiagnosticWithPath)
				if !ok {
					t.Fatalf("warning without an attribute: %s", d.Summary())
				}
				host := "?"
				for _, h := range []string{`host "default" (the provider's uri)`, `host "h2"`} {
					if strings.Contains(d.Detail(), h) {
						host = h
					}
				}
				got = append(got, wp.Path().String()+": "+d.Summary()+": "+host)
				if !strings.Contains(d.Detail(), "neither VMX (Intel) nor SVM (AMD)") {
					t.Errorf("the warning does not say why: %s", d.Detail())
				}
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}
