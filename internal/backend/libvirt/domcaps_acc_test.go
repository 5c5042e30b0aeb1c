package libvirt

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"libvirt.org/go/libvirtxml"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// TestAccDomainCaps reads the harness host's capabilities: the pc and q35 aliases among its
// machines, OVMF (which the harness installs) with Secure Boot on q35 only, no host-passthrough
// under TCG, usable custom models, a TPM with swtpm (which the harness installs: the emulator
// backend and TPM 2.0 listed); an unknown machine is ErrNotFound; a second read is the cache's.
func TestAccDomainCaps(t *testing.T) {
	requireAcc(t)
	b := connectAcc(t, "qemu:///system")
	ctx := context.Background()
	pc, err := b.DomainCaps(ctx, "qemu", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"pc", "q35"} {
		if !slices.Contains(pc.Machines, m) {
			t.Errorf("machine %s is not listed: %v", m, pc.Machines)
		}
	}
	if !pc.EFI || pc.SecureBoot || len(pc.Loaders) == 0 {
		t.Errorf("default machine %s: EFI %t, Secure Boot %t, loaders %v; want OVMF without Secure Boot", pc.CanonicalMachine, pc.EFI, pc.SecureBoot, pc.Loaders)
	}
	if slices.Contains(pc.CPUModes, engine.CPUHostPassthrough) || !slices.Contains(pc.CPUModes, engine.CPUCustom) || !slices.Contains(pc.CPUModels, "qemu64") {
		t.Errorf("TCG CPU modes %v, models %v", pc.CPUModes, pc.CPUModels)
	}
	if tpm := pc.TPM; tpm == nil || !tpm.Supported || !slices.Contains(tpm.Models, engine.TPMModelCRB) ||
		!slices.Contains(tpm.BackendModels, engine.TPMBackendEmulator) || !tpm.VersionsListed || !slices.Contains(tpm.Versions, engine.TPMVersion2) {
		t.Errorf("TPM %+v; want supported, tpm-crb, the emulator backend and version 2.0", tpm)
	} else if p := engine.TPMProblems(engine.TPM{Model: engine.TPMModelCRB, Version: engine.TPMVersion2}, tpm, "this host", "qemu"); len(p) > 0 {
		t.Errorf("a tpm-crb 2.0 TPM is refused here: %v", p)
	}
	q35, err := b.DomainCaps(ctx, "qemu", "q35")
	if err != nil {
		t.Fatal(err)
	}
	if !q35.EFI || !q35.SecureBoot {
		t.Errorf("q35 (%s): EFI %t, Secure Boot %t, loaders %v", q35.CanonicalMachine, q35.EFI, q35.SecureBoot, q35.Loaders)
	}
	if _, err := b.DomainCaps(ctx, "qemu", "pc-q35-99.0"); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("an unknown machine: %v, want ErrNotFound", err)
	}
	virt, err := b.HostVirt(ctx)
	if err != nil || virt.KVM != pc.KVM {
		t.Errorf("host virt %+v (%v), kvm offered %t", virt, err, pc.KVM)
	}
	b.caps.mu.Lock()
	_, cached := b.caps.domain[capsKey{"qemu", "q35"}]
	b.caps.mu.Unlock()
	if !cached {
		t.Error("the q35 capabilities were not cached")
	}
}

// TestAccHostVirt judges the harness host's KVM as the provider does at plan, and compares it
// with the CPU flags the kernel reports (/proc/cpuinfo: the daemon is on this machine). The test
// machine lists no kvm, so the CPU is also judged as if it did (its capabilities with a kvm
// domain added): that runs libvirt's expansion of the host CPU (virConnectBaselineCPU) for real.
func TestAccHostVirt(t *testing.T) {
	requireAcc(t)
	b := connectAcc(t, "qemu:///system")
	ctx := context.Background()
	cpuinfo, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Fatal(err)
	}
	var flags []string
	for _, line := range strings.Split(string(cpuinfo), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "flags" {
			flags = strings.Fields(v)
			break
		}
	}
	hasVirt := engine.HasCPUVirt(flags)

	v, err := b.HostVirt(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, kvmErr := os.Stat("/dev/kvm")
	if v.KVM && (!v.CPUKnown || v.CPUVirt != hasVirt) {
		t.Errorf("HostVirt = %+v; the kernel's CPU flags have VMX or SVM: %t", v, hasVirt)
	}
	if v.KVM != (kvmErr == nil) {
		t.Logf("kvm listed: %t, /dev/kvm: %v", v.KVM, kvmErr)
	}

	caps, err := b.hostCaps(ctx)
	if err != nil {
		t.Fatal(err)
	}
	withKVM := *caps
	withKVM.Guests = slices.Clone(caps.Guests)
	added := false
	for i, g := range withKVM.Guests {
		if g.OSType == "hvm" && g.Arch.Name == guestArch {
			withKVM.Guests[i].Arch.Domains = append(slices.Clone(g.Arch.Domains), libvirtxml.CapsGuestDomain{Type: "kvm"})
			added = true
		}
	}
	if !added {
		t.Fatal("the host lists no x86_64 hvm guest")
	}
	got := judgeHostVirt(&withKVM, b.expandCPU(ctx))
	want := engine.HostVirt{KVM: true, CPUKnown: true, CPUVirt: hasVirt}
	if got != want {
		t.Errorf("judged as if kvm were listed: %+v, want %+v (the kernel's flags: VMX or SVM %t)", got, want, hasVirt)
	}
	t.Logf("this host: %+v; as if kvm were listed: %+v, default domain type %s", v, got, got.DefaultDomainType())
}
