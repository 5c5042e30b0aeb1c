package fake

import (
	"context"
	"fmt"
	"slices"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// DefaultCaps is what the fake host offers a domain type without Caps: no kvm, the machines of
// a Debian 12 host (aliases and the newest versions), OVMF with Secure Boot, a TPM with swtpm
// installed, and for qemu (TCG) every CPU mode but host-passthrough, as libvirt 9.0 reports them.
func DefaultCaps(domainType string) backend.DomainCaps {
	c := backend.DomainCaps{
		DomainType: domainType, MaxVCPU: 255,
		Machines: []string{"pc", "pc-i440fx-7.2", "pc-q35-7.2", "q35"},
		EFI:      true, SecureBoot: true, Loaders: []string{"/usr/share/OVMF/OVMF_CODE_4M.fd", "/usr/share/OVMF/OVMF_CODE_4M.secboot.fd"},
		CPUModes: []string{engine.CPUHostModel, engine.CPUCustom}, CPUModels: []string{"Westmere", "kvm64", "qemu64"}, UnusableCPUModels: []string{"EPYC"},
		TPM: &engine.HostTPM{Supported: true, Models: []string{engine.TPMModelTIS, engine.TPMModelCRB}, BackendModels: []string{"passthrough", engine.TPMBackendEmulator, "external"},
			Versions: []string{"1.2", engine.TPMVersion2}, VersionsListed: true},
	}
	if domainType == "kvm" {
		c.KVM = true
		c.CPUModes = slices.Clone(engine.CPUModes)
	}
	return c
}

// DomainCaps answers from Caps, else DefaultCaps; a machine the answer does not list is
// ErrNotFound.
func (b *Backend) DomainCaps(_ context.Context, domainType, machine string) (backend.DomainCaps, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("domain-caps", domainType+"/"+machine); err != nil {
		return backend.DomainCaps{}, err
	}
	c, ok := b.Caps[domainType]
	if !ok {
		c = DefaultCaps(domainType)
	}
	c.Machine = machine
	if machine != "" && !slices.Contains(c.Machines, machine) {
		return c, fmt.Errorf("machine %q: %w", machine, backend.ErrNotFound)
	}
	return c, nil
}
