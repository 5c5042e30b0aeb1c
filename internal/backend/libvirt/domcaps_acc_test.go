package libvirt

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// TestAccDomainCaps reads the harness host's capabilities: the pc and q35 aliases among its
// machines, OVMF (which the harness installs) with Secure Boot on q35 only, no host-passthrough
// under TCG, usable custom models; an unknown machine is ErrNotFound; a second read is the cache's.
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
