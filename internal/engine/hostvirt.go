package engine

// HostVirt is what a host's capabilities say about running guests under KVM: whether libvirt
// offers kvm domains at all, and whether the host's CPU has the hardware virtualisation KVM
// needs to run an ordinary guest (Intel VMX or AMD SVM).
//
// The two can disagree. libvirt lists kvm domains when /dev/kvm opens, and in some virtual
// machines it opens on a CPU that exposes neither VMX nor SVM (a PVM-style KVM, which runs only
// guests built for it): every ordinary kvm guest is then stopped by QEMU at its first
// instruction, seconds after an apply that succeeded. The CPU's features tell the two apart
// before anything is defined.
type HostVirt struct {
	// KVM: libvirt lists kvm domains for x86_64 in the host's capabilities.
	KVM bool
	// CPUKnown: the host CPU's features could be read (libvirt's host CPU with its model's
	// features expanded). When they could not, nothing is judged from them.
	CPUKnown bool
	// CPUVirt: the host CPU has VMX or SVM (meaningful only with CPUKnown).
	CPUVirt bool
}

// Domain types, as template.domain_type and libvirt name them.
const (
	DomainTypeKVM  = "kvm"
	DomainTypeQEMU = "qemu"
)

// KVMCannotRun reports a host that lists kvm domains on a CPU known to lack both VMX and SVM:
// its KVM opens but cannot run ordinary guests.
func (v HostVirt) KVMCannotRun() bool {
	return v.KVM && v.CPUKnown && !v.CPUVirt
}

// DefaultDomainType is the domain type an unset template.domain_type resolves to on this host:
// kvm where libvirt offers it and it can run guests (as libvirt's own default, less the hosts
// whose KVM cannot run them), else qemu (TCG).
func (v HostVirt) DefaultDomainType() string {
	if v.KVM && !v.KVMCannotRun() {
		return DomainTypeKVM
	}
	return DomainTypeQEMU
}

// HasCPUVirt reports whether a CPU feature list names VMX or SVM.
func HasCPUVirt(features []string) bool {
	for _, f := range features {
		if f == "vmx" || f == "svm" {
			return true
		}
	}
	return false
}
