package libvirt

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"libvirt.org/go/libvirtxml"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// TestFirmwareXML builds a member's definition with each firmware, machine and CPU setting and
// reads back the parts libvirt acts on.
func TestFirmwareXML(t *testing.T) {
	t.Parallel()
	nvram := &backend.Disk{Pool: "virt", Volume: "db-1-nvram.fd", Path: "/var/lib/virt/db-1-nvram.fd"}
	type parts struct {
		Machine, Firmware, NVRAM, CPUMode, CPUMatch, CPUModel, Fallback string
		Features                                                        []libvirtxml.DomainOSFirmwareFeature
		SMM                                                             bool
	}
	cases := map[string]struct {
		spec backend.DomainSpec
		want parts
	}{
		"bios and defaults": {spec: backend.DomainSpec{}, want: parts{}},
		"machine q35":       {spec: backend.DomainSpec{Shape: engine.Shape{Hardware: engine.Hardware{Machine: "q35"}}}, want: parts{Machine: "q35"}},
		"efi": {spec: backend.DomainSpec{Shape: engine.Shape{Hardware: engine.Hardware{Firmware: engine.FirmwareEFI}}, NVRAM: nvram},
			want: parts{Firmware: "efi", NVRAM: nvram.Path, Features: []libvirtxml.DomainOSFirmwareFeature{{Name: "secure-boot", Enabled: "no"}}}},
		"efi secure boot on q35": {spec: backend.DomainSpec{Shape: engine.Shape{Hardware: engine.Hardware{Firmware: engine.FirmwareEFI, SecureBoot: true, Machine: "pc-q35-7.2"}}, NVRAM: nvram},
			want: parts{Machine: "pc-q35-7.2", Firmware: "efi", NVRAM: nvram.Path, SMM: true,
				Features: []libvirtxml.DomainOSFirmwareFeature{{Name: "secure-boot", Enabled: "yes"}, {Name: "enrolled-keys", Enabled: "yes"}}}},
		"host-passthrough": {spec: backend.DomainSpec{Shape: engine.Shape{Hardware: engine.Hardware{CPU: &engine.CPU{Mode: engine.CPUHostPassthrough}}}}, want: parts{CPUMode: "host-passthrough"}},
		"host-model":       {spec: backend.DomainSpec{Shape: engine.Shape{Hardware: engine.Hardware{CPU: &engine.CPU{Mode: engine.CPUHostModel}}}}, want: parts{CPUMode: "host-model"}},
		"custom model": {spec: backend.DomainSpec{Shape: engine.Shape{Hardware: engine.Hardware{CPU: &engine.CPU{Mode: engine.CPUCustom, Model: "Westmere"}}}},
			want: parts{CPUMode: "custom", CPUMatch: "exact", CPUModel: "Westmere", Fallback: "forbid"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			spec := tc.spec
			spec.Name, spec.DomainType, spec.VCPU, spec.MemoryMiB = "db-1", "qemu", 1, 64
			doc, err := domainXML(spec)
			if err != nil {
				t.Fatal(err)
			}
			var dom libvirtxml.Domain
			if err := dom.Unmarshal(doc); err != nil {
				t.Fatal(err)
			}
			var got parts
			got.Machine, got.Firmware = dom.OS.Type.Machine, dom.OS.Firmware
			if dom.OS.NVRam != nil {
				got.NVRAM = dom.OS.NVRam.NVRam
			}
			if dom.OS.FirmwareInfo != nil {
				got.Features = dom.OS.FirmwareInfo.Features
			}
			if c := dom.CPU; c != nil {
				got.CPUMode, got.CPUMatch = c.Mode, c.Match
				if c.Model != nil {
					got.CPUModel, got.Fallback = c.Model.Value, c.Model.Fallback
				}
			}
			got.SMM = dom.Features.SMM != nil && dom.Features.SMM.State == "on"
			if dom.OS.Loader != nil {
				t.Errorf("a loader is named (%+v): firmware autoselection picks it", dom.OS.Loader)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("domain XML (-want +got):\n%s\n%s", diff, doc)
			}
		})
	}
}

// TestReadDomainCaps reads libvirt 9.0's domain capabilities as a Debian 12 host gives them. The
// kvm document has no tpm element, as a libvirt older than 7.x gives it.
func TestReadDomainCaps(t *testing.T) {
	t.Parallel()
	const tcgPC = `<domainCapabilities><path>/usr/bin/qemu-system-x86_64</path><domain>qemu</domain><machine>pc-i440fx-7.2</machine><arch>x86_64</arch><vcpu max='255'/>
<os supported='yes'><enum name='firmware'><value>efi</value></enum><loader supported='yes'><value>/usr/share/OVMF/OVMF_CODE_4M.fd</value>
<enum name='type'><value>rom</value><value>pflash</value></enum><enum name='secure'><value>no</value></enum></loader></os>
<cpu><mode name='host-passthrough' supported='no'/><mode name='maximum' supported='yes'/><mode name='host-model' supported='yes'><model fallback='forbid'>EPYC</model></mode>
<mode name='custom' supported='yes'><model usable='yes' vendor='unknown'>qemu64</model><model usable='no' vendor='AMD'>EPYC</model><model usable='yes' vendor='Intel'>Westmere</model></mode></cpu>
<devices><tpm supported='yes'><enum name='model'><value>tpm-tis</value><value>tpm-crb</value></enum><enum name='backendModel'><value>passthrough</value><value>emulator</value><value>external</value></enum>
<enum name='backendVersion'><value>1.2</value><value>2.0</value></enum></tpm></devices></domainCapabilities>`
	const kvmQ35 = `<domainCapabilities><domain>kvm</domain><machine>pc-q35-7.2</machine><arch>x86_64</arch><vcpu max='288'/>
<os supported='yes'><enum name='firmware'><value>efi</value></enum><loader supported='yes'><value>/usr/share/OVMF/OVMF_CODE_4M.secboot.fd</value><value>/usr/share/OVMF/OVMF_CODE_4M.fd</value>
<enum name='secure'><value>yes</value><value>no</value></enum></loader></os>
<cpu><mode name='host-passthrough' supported='yes'/><mode name='host-model' supported='yes'/><mode name='custom' supported='yes'><model usable='yes'>qemu64</model></mode></cpu></domainCapabilities>`
	// Without the ovmf package libvirt finds no firmware descriptor: the enum and the loader
	// list are empty. Without swtpm it lists no emulator backend and no versions.
	const noOVMF = `<domainCapabilities><domain>qemu</domain><machine>pc-i440fx-7.2</machine><arch>x86_64</arch>
<os supported='yes'><enum name='firmware'/><loader supported='yes'><enum name='type'><value>rom</value><value>pflash</value></enum><enum name='secure'><value>no</value></enum></loader></os>
<cpu><mode name='custom' supported='yes'><model usable='yes'>qemu64</model></mode></cpu>
<devices><tpm supported='yes'><enum name='model'><value>tpm-tis</value><value>tpm-crb</value></enum><enum name='backendModel'><value>passthrough</value><value>external</value></enum>
<enum name='backendVersion'/></tpm></devices></domainCapabilities>`
	const noTPM = `<domainCapabilities><domain>qemu</domain><machine>pc-i440fx-7.2</machine><arch>x86_64</arch><devices><tpm supported='no'/></devices></domainCapabilities>`
	cases := map[string]struct {
		doc  string
		want backend.DomainCaps
	}{
		"tcg on pc": {doc: tcgPC, want: backend.DomainCaps{CanonicalMachine: "pc-i440fx-7.2", MaxVCPU: 255, EFI: true, Loaders: []string{"/usr/share/OVMF/OVMF_CODE_4M.fd"},
			CPUModes: []string{"host-model", "custom"}, CPUModels: []string{"qemu64", "Westmere"}, UnusableCPUModels: []string{"EPYC"},
			TPM: &engine.HostTPM{Supported: true, Models: []string{"tpm-tis", "tpm-crb"}, BackendModels: []string{"passthrough", "emulator", "external"}, Versions: []string{"1.2", "2.0"}, VersionsListed: true}}},
		"kvm on q35": {doc: kvmQ35, want: backend.DomainCaps{CanonicalMachine: "pc-q35-7.2", MaxVCPU: 288, EFI: true, SecureBoot: true,
			Loaders:  []string{"/usr/share/OVMF/OVMF_CODE_4M.secboot.fd", "/usr/share/OVMF/OVMF_CODE_4M.fd"},
			CPUModes: []string{"host-passthrough", "host-model", "custom"}, CPUModels: []string{"qemu64"}}},
		"no ovmf, no swtpm": {doc: noOVMF, want: backend.DomainCaps{CanonicalMachine: "pc-i440fx-7.2", CPUModes: []string{"custom"}, CPUModels: []string{"qemu64"},
			TPM: &engine.HostTPM{Supported: true, Models: []string{"tpm-tis", "tpm-crb"}, BackendModels: []string{"passthrough", "external"}, VersionsListed: true}}},
		"no tpm": {doc: noTPM, want: backend.DomainCaps{CanonicalMachine: "pc-i440fx-7.2", TPM: &engine.HostTPM{}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var x libvirtxml.DomainCaps
			if err := x.Unmarshal(tc.doc); err != nil {
				t.Fatal(err)
			}
			var got backend.DomainCaps
			readDomainCaps(&got, x)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestMachinesOf lists the x86_64 machines of a domain type, aliases included, and tells kvm.
func TestMachinesOf(t *testing.T) {
	t.Parallel()
	const doc = `<capabilities><host><uuid>00000000-0000-0000-0000-000000000000</uuid></host>
<guest><os_type>hvm</os_type><arch name='i686'><machine>pc-i440fx-7.2</machine><machine canonical='pc-i440fx-7.2'>pc</machine><machine>isapc</machine><domain type='qemu'/></arch></guest>
<guest><os_type>hvm</os_type><arch name='x86_64'><machine>pc-i440fx-7.2</machine><machine canonical='pc-i440fx-7.2'>pc</machine><machine>pc-q35-7.2</machine><machine canonical='pc-q35-7.2'>q35</machine>
<domain type='qemu'/><domain type='kvm'><machine>pc-kvm-only</machine></domain></arch></guest></capabilities>`
	var caps libvirtxml.Caps
	if err := caps.Unmarshal(doc); err != nil {
		t.Fatal(err)
	}
	cases := map[string][]string{
		"qemu": {"pc", "pc-i440fx-7.2", "pc-q35-7.2", "q35"},
		"kvm":  {"pc", "pc-i440fx-7.2", "pc-kvm-only", "pc-q35-7.2", "q35"},
	}
	for typ, want := range cases {
		if diff := cmp.Diff(want, machinesOf(&caps, typ)); diff != "" {
			t.Errorf("%s machines (-want +got):\n%s", typ, diff)
		}
	}
	if !offersKVM(&caps) {
		t.Error("kvm is offered for x86_64, offersKVM says not")
	}
	caps.Guests[1].Arch.Domains = caps.Guests[1].Arch.Domains[:1]
	if offersKVM(&caps) {
		t.Error("no kvm domain is listed, offersKVM says there is")
	}
}
