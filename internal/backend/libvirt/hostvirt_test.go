package libvirt

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"libvirt.org/go/libvirtxml"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// capsXML is a host's capabilities as libvirt 9.0 writes them, cut to what HostVirt reads: the
// host CPU (a model and the features it lacks) and the x86_64 guest's domain types.
func capsXML(cpu string, domains ...string) string {
	doms := ""
	for _, d := range domains {
		doms += fmt.Sprintf("<domain type='%s'/>", d)
	}
	return `<capabilities><host><uuid>e990280d-50cc-41ee-b210-f2902559a0fc</uuid>` + cpu + `</host>
<guest><os_type>hvm</os_type><arch name='x86_64'><wordsize>64</wordsize>
<emulator>/usr/bin/qemu-system-x86_64</emulator><machine maxCpus='255'>pc-i440fx-7.2</machine>` + doms + `</arch></guest></capabilities>`
}

// The host CPUs of the samples: this test machine's (a VM whose CPU has no SVM), an Intel host
// that lists vmx beside its model, and an AMD host whose model (EPYC-Rome) carries svm itself.
const (
	cpuNoVirt = `<cpu><arch>x86_64</arch><model>kvm64</model><vendor>AMD</vendor>
<feature name='hypervisor'/><feature name='avx2'/></cpu>`
	cpuIntelVMX = `<cpu><arch>x86_64</arch><model>Skylake-Client-IBRS</model><vendor>Intel</vendor>
<feature name='ds'/><feature name='vmx'/><feature name='pdcm'/></cpu>`
	cpuEPYC = `<cpu><arch>x86_64</arch><model>EPYC-Rome</model><vendor>AMD</vendor>
<feature name='x2apic'/></cpu>`
)

// Expansions as `virsh cpu-baseline --features` (virConnectBaselineCPU with its features
// expanded) writes them for the CPUs above.
const (
	expandedNoVirt = `<cpu mode='custom' match='exact'><model fallback='forbid'>kvm64</model><vendor>AMD</vendor>
<feature policy='require' name='apic'/><feature policy='require' name='avx2'/><feature policy='require' name='hypervisor'/></cpu>`
	expandedEPYC = `<cpu mode='custom' match='exact'><model fallback='forbid'>EPYC-Rome</model><vendor>AMD</vendor>
<feature policy='require' name='apic'/><feature policy='require' name='svm'/><feature policy='require' name='x2apic'/></cpu>`
	expandedDisabledSVM = `<cpu mode='custom' match='exact'><model fallback='forbid'>EPYC-Rome</model><vendor>AMD</vendor>
<feature policy='require' name='apic'/><feature policy='disable' name='svm'/></cpu>`
)

func TestJudgeHostVirt(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		caps     string
		expanded string // what the expansion answers; "" fails it
		want     engine.HostVirt
		// expands: whether the CPU had to be expanded.
		expands bool
	}{
		"no kvm listed: the CPU is not looked at": {
			caps: capsXML(cpuNoVirt, "qemu"), want: engine.HostVirt{}},
		"kvm listed on a CPU without VMX or SVM": {
			caps: capsXML(cpuNoVirt, "qemu", "kvm"), expanded: expandedNoVirt, expands: true,
			want: engine.HostVirt{KVM: true, CPUKnown: true}},
		"kvm listed, vmx among the listed features": {
			caps: capsXML(cpuIntelVMX, "qemu", "kvm"),
			want: engine.HostVirt{KVM: true, CPUKnown: true, CPUVirt: true}},
		"kvm listed, svm in the CPU's model only": {
			caps: capsXML(cpuEPYC, "qemu", "kvm"), expanded: expandedEPYC, expands: true,
			want: engine.HostVirt{KVM: true, CPUKnown: true, CPUVirt: true}},
		"an expansion that disables svm has none": {
			caps: capsXML(cpuEPYC, "qemu", "kvm"), expanded: expandedDisabledSVM, expands: true,
			want: engine.HostVirt{KVM: true, CPUKnown: true}},
		"an expansion libvirt refuses: not judged": {
			caps: capsXML(cpuNoVirt, "qemu", "kvm"), expands: true,
			want: engine.HostVirt{KVM: true}},
		"no host CPU: not judged": {
			caps: capsXML("", "qemu", "kvm"), want: engine.HostVirt{KVM: true}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var caps libvirtxml.Caps
			if err := caps.Unmarshal(c.caps); err != nil {
				t.Fatal(err)
			}
			expanded := false
			got := judgeHostVirt(&caps, func(cpu string) (string, error) {
				expanded = true
				var x libvirtxml.CapsHostCPU
				if err := x.Unmarshal(cpu); err != nil || x.Model == "" {
					t.Errorf("expand was given %q (%v), not the host's CPU", cpu, err)
				}
				if c.expanded == "" {
					return "", errors.New("virConnectBaselineCPU: this function is not supported")
				}
				return c.expanded, nil
			})
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if expanded != c.expands {
				t.Errorf("expanded the CPU: %t, want %t", expanded, c.expands)
			}
			if got.DefaultDomainType() == engine.DomainTypeKVM && got.KVMCannotRun() {
				t.Errorf("kvm chosen on a host whose KVM cannot run guests: %+v", got)
			}
		})
	}
}
