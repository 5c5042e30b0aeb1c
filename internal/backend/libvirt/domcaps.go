package libvirt

import (
	"context"
	"fmt"
	"slices"
	"sync"

	golibvirt "github.com/digitalocean/go-libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// guestArch is the one guest architecture the provider defines domains for.
const guestArch = "x86_64"

// capsCache holds the host's answers about what it offers: its capabilities (read once) and its
// domain capabilities per domain type and machine. They change only when the host's QEMU or
// firmware packages do, which a provider run does not outlive; only an answer is kept, never a
// failure to get one.
type capsCache struct {
	mu     sync.Mutex
	host   *libvirtxml.Caps
	domain map[capsKey]backend.DomainCaps
	// virt is HostVirt's answer, once it is whole (the CPU judged where kvm is listed).
	virt *engine.HostVirt
}

type capsKey struct{ domainType, machine string }

// hostCaps reads the host's capabilities (the guests it can run: architectures, domain types,
// machines), once per backend.
func (b *Backend) hostCaps(ctx context.Context) (*libvirtxml.Caps, error) {
	b.caps.mu.Lock()
	defer b.caps.mu.Unlock()
	if b.caps.host != nil {
		return b.caps.host, nil
	}
	var caps libvirtxml.Caps
	err := b.do(ctx, "get capabilities", "", func(c conn) error {
		doc, err := c.l.ConnectGetCapabilities()
		if err != nil {
			return wrap("get capabilities", c.uri, err)
		}
		var got libvirtxml.Caps
		if err := got.Unmarshal(doc); err != nil {
			return fmt.Errorf("parse the capabilities of %s: %v", c.uri, err)
		}
		c.keep(func() { caps = got })
		return nil
	})
	if err != nil {
		return nil, err
	}
	b.caps.host = &caps
	return &caps, nil
}

// HostVirt reads whether the host offers kvm domains for x86_64 and, when it does, whether its
// CPU has VMX or SVM (engine.HostVirt), once per backend. The host CPU in the capabilities is a
// model plus the features the model lacks, and some models carry SVM themselves (EPYC, Opteron,
// qemu64): the features are read from libvirt's expansion of that CPU (virConnectBaselineCPU
// with its features expanded, as `virsh cpu-baseline --features` does), unless the listed
// features already name one. A host that cannot expand them is not judged (CPUKnown false).
func (b *Backend) HostVirt(ctx context.Context) (engine.HostVirt, error) {
	caps, err := b.hostCaps(ctx)
	if err != nil {
		return engine.HostVirt{}, err
	}
	b.caps.mu.Lock()
	cached := b.caps.virt
	b.caps.mu.Unlock()
	if cached != nil {
		return *cached, nil
	}
	v := judgeHostVirt(caps, b.expandCPU(ctx))
	if v.KVM && !v.CPUKnown {
		return v, nil // not kept: the next plan may read the CPU
	}
	b.caps.mu.Lock()
	b.caps.virt = &v
	b.caps.mu.Unlock()
	return v, nil
}

// expandCPU asks the host for a CPU (a <cpu> document) with its model's features expanded.
func (b *Backend) expandCPU(ctx context.Context) func(cpu string) (string, error) {
	return func(cpu string) (string, error) {
		var expanded string
		err := b.do(ctx, "expand the host CPU's features", "", func(c conn) error {
			var err error
			expanded, err = c.l.ConnectBaselineCPU([]string{cpu}, golibvirt.ConnectBaselineCPUExpandFeatures)
			return err
		})
		return expanded, err
	}
}

// judgeHostVirt reads engine.HostVirt from the host's capabilities, with expand giving the host
// CPU (a <cpu> document) with its model's features expanded. The CPU is looked at only where
// kvm is listed; a CPU that cannot be expanded or read is not judged (CPUKnown false), so that
// libvirt's own default stands.
func judgeHostVirt(caps *libvirtxml.Caps, expand func(cpu string) (string, error)) engine.HostVirt {
	v := engine.HostVirt{KVM: offersKVM(caps)}
	if !v.KVM || caps.Host.CPU == nil {
		return v
	}
	if engine.HasCPUVirt(listedFeatures(caps)) {
		v.CPUKnown, v.CPUVirt = true, true
		return v
	}
	cpu, err := caps.Host.CPU.Marshal()
	if err != nil {
		return v
	}
	expanded, err := expand(cpu)
	if err != nil {
		return v
	}
	features, err := expandedFeatures(expanded)
	if err != nil {
		return v
	}
	v.CPUKnown, v.CPUVirt = true, engine.HasCPUVirt(features)
	return v
}

// listedFeatures are the feature names the capabilities list beside the host CPU's model.
func listedFeatures(caps *libvirtxml.Caps) []string {
	if caps.Host.CPU == nil {
		return nil
	}
	var out []string
	for _, f := range caps.Host.CPU.FeatureFlags {
		out = append(out, f.Name)
	}
	return out
}

// expandedFeatures are the features a baseline CPU with its features expanded requires.
func expandedFeatures(doc string) ([]string, error) {
	var cpu libvirtxml.DomainCPU
	if err := cpu.Unmarshal(doc); err != nil {
		return nil, fmt.Errorf("parse the expanded host CPU: %v", err)
	}
	var out []string
	for _, f := range cpu.Features {
		if f.Policy == "" || f.Policy == "require" || f.Policy == "force" {
			out = append(out, f.Name)
		}
	}
	return out, nil
}

// DomainCaps reads what the host offers x86_64 domains of domainType on machine: its machines
// from the host's capabilities, its firmware and CPU modes from the domain capabilities of that
// machine (libvirt's default machine when machine is ""). One read per domain type and machine.
func (b *Backend) DomainCaps(ctx context.Context, domainType, machine string) (backend.DomainCaps, error) {
	host, err := b.hostCaps(ctx)
	if err != nil {
		return backend.DomainCaps{}, err
	}
	key := capsKey{domainType, machine}
	b.caps.mu.Lock()
	cached, ok := b.caps.domain[key]
	b.caps.mu.Unlock()
	if ok {
		return cached, nil
	}
	out := backend.DomainCaps{DomainType: domainType, Machine: machine, KVM: offersKVM(host), Machines: machinesOf(host, domainType)}
	if machine != "" && !slices.Contains(out.Machines, machine) {
		return out, fmt.Errorf("machine %q is not one the host lists for %s domains: %w", machine, domainType, backend.ErrNotFound)
	}
	if domainType == "kvm" && !out.KVM {
		return out, fmt.Errorf("the host offers no kvm domains for %s: %w", guestArch, backend.ErrNotFound)
	}
	err = b.do(ctx, "get domain capabilities", domainType, func(c conn) error {
		var m golibvirt.OptString
		if machine != "" {
			m = golibvirt.OptString{machine}
		}
		doc, err := c.l.ConnectGetDomainCapabilities(nil, golibvirt.OptString{guestArch}, m, golibvirt.OptString{domainType}, 0)
		if err != nil {
			return wrap("get domain capabilities", domainType, err)
		}
		var x libvirtxml.DomainCaps
		if err := x.Unmarshal(doc); err != nil {
			return fmt.Errorf("parse the domain capabilities of %s: %v", c.uri, err)
		}
		c.keep(func() { readDomainCaps(&out, x) })
		return nil
	})
	if err != nil {
		return out, err
	}
	b.caps.mu.Lock()
	if b.caps.domain == nil {
		b.caps.domain = map[capsKey]backend.DomainCaps{}
	}
	b.caps.domain[key] = out
	b.caps.mu.Unlock()
	return out, nil
}

// offersKVM reports whether the host lists kvm among the domain types of its x86_64 guests.
func offersKVM(caps *libvirtxml.Caps) bool {
	for _, g := range caps.Guests {
		if g.OSType != "hvm" || g.Arch.Name != guestArch {
			continue
		}
		for _, d := range g.Arch.Domains {
			if d.Type == "kvm" {
				return true
			}
		}
	}
	return false
}

// machinesOf lists the machine names the host has for x86_64 domains of domainType, aliases
// included, sorted: those of the architecture, and those the domain type adds.
func machinesOf(caps *libvirtxml.Caps, domainType string) []string {
	var out []string
	add := func(ms []libvirtxml.CapsGuestMachine) {
		for _, m := range ms {
			if !slices.Contains(out, m.Name) {
				out = append(out, m.Name)
			}
		}
	}
	for _, g := range caps.Guests {
		if g.OSType != "hvm" || g.Arch.Name != guestArch {
			continue
		}
		add(g.Arch.Machines)
		for _, d := range g.Arch.Domains {
			if d.Type == domainType {
				add(d.Machines)
			}
		}
	}
	slices.Sort(out)
	return out
}

// readDomainCaps fills out from libvirt's domain capabilities: EFI is offered when the firmware
// enum lists efi (libvirt found a firmware descriptor for this machine) or a loader image is
// listed; Secure Boot when the loader's secure enum has yes.
func readDomainCaps(out *backend.DomainCaps, x libvirtxml.DomainCaps) {
	out.CanonicalMachine = x.Machine
	if x.Devices != nil && x.Devices.TPM != nil {
		out.TPM = readTPM(*x.Devices.TPM)
	}
	if x.VCPU != nil {
		out.MaxVCPU = int64(x.VCPU.Max)
	}
	if os := x.OS; os != nil && os.Supported == "yes" {
		if slices.Contains(enum(os.Enums, "firmware"), engine.FirmwareEFI) {
			out.EFI = true
		}
		if l := os.Loader; l != nil && l.Supported == "yes" {
			out.Loaders = slices.Clone(l.Values)
			out.EFI = out.EFI || len(l.Values) > 0
			out.SecureBoot = len(l.Values) > 0 && slices.Contains(enum(l.Enums, "secure"), "yes")
		}
	}
	if x.CPU == nil {
		return
	}
	for _, m := range x.CPU.Modes {
		if m.Supported != "yes" || !slices.Contains(engine.CPUModes, m.Name) {
			continue
		}
		out.CPUModes = append(out.CPUModes, m.Name)
		if m.Name != engine.CPUCustom {
			continue
		}
		for _, model := range m.Models {
			if model.Usable == "no" {
				out.UnusableCPUModels = append(out.UnusableCPUModels, model.Name)
			} else {
				out.CPUModels = append(out.CPUModels, model.Name)
			}
		}
	}
}

// readTPM reads the <tpm> device element: libvirt lists the emulator backend only when it finds
// swtpm, and the backendVersion enum (from swtpm's own capabilities) only since 8.x.
func readTPM(d libvirtxml.DomainCapsDevice) *engine.HostTPM {
	t := &engine.HostTPM{Supported: d.Supported == "yes", Models: enum(d.Enums, "model"), BackendModels: enum(d.Enums, "backendModel")}
	for _, e := range d.Enums {
		if e.Name == "backendVersion" {
			t.Versions, t.VersionsListed = e.Values, true
		}
	}
	return t
}

// enum returns the values of the named enum.
func enum(enums []libvirtxml.DomainCapsEnum, name string) []string {
	for _, e := range enums {
		if e.Name == name {
			return e.Values
		}
	}
	return nil
}
