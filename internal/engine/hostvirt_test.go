package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHostVirt(t *testing.T) {
	t.Parallel()
	type got struct {
		Default   string
		CannotRun bool
	}
	cases := map[string]struct {
		v    HostVirt
		want got
	}{
		"no kvm listed: qemu":                          {HostVirt{}, got{"qemu", false}},
		"no kvm listed, CPU with VMX: qemu":            {HostVirt{CPUKnown: true, CPUVirt: true}, got{"qemu", false}},
		"kvm listed on a CPU with VMX or SVM: kvm":     {HostVirt{KVM: true, CPUKnown: true, CPUVirt: true}, got{"kvm", false}},
		"kvm listed on a CPU without VMX or SVM: qemu": {HostVirt{KVM: true, CPUKnown: true}, got{"qemu", true}},
		// A CPU that could not be read is not judged: libvirt's own default stands.
		"kvm listed, CPU unknown: kvm": {HostVirt{KVM: true}, got{"kvm", false}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(c.want, got{c.v.DefaultDomainType(), c.v.KVMCannotRun()}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestHasCPUVirt(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		features []string
		want     bool
	}{
		"intel":   {[]string{"sse4.2", "vmx", "avx"}, true},
		"amd":     {[]string{"svm", "avx2"}, true},
		"neither": {[]string{"hypervisor", "avx2", "svm-lock"}, false},
		"none":    {nil, false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := HasCPUVirt(c.features); got != c.want {
				t.Errorf("HasCPUVirt(%v) = %t, want %t", c.features, got, c.want)
			}
		})
	}
}
