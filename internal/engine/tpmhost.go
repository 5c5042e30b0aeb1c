package engine

import (
	"fmt"
	"slices"
	"strings"
)

// HostTPM is what a host offers a domain's TPM, from the <tpm> element of libvirt's domain
// capabilities for the domain type and machine.
type HostTPM struct {
	// Supported is the element's supported="yes": QEMU there has TPM devices.
	Supported bool
	// Models are the TPM interfaces (the model enum: tpm-tis, tpm-crb).
	Models []string
	// BackendModels are the backends (the backendModel enum): libvirt lists "emulator" only
	// when it finds swtpm on the host.
	BackendModels []string
	// Versions are the emulator's TPM versions (the backendVersion enum), as swtpm reports
	// them; VersionsListed is false when libvirt lists no such enum (libvirt before 8.x), and
	// then the version is not judged.
	Versions       []string
	VersionsListed bool
}

// TPMBackendEmulator is the TPM backend the provider defines: swtpm, run by libvirt.
const TPMBackendEmulator = "emulator"

// TPMProblems checks a template's TPM against what host (a phrase naming it, as `host "h2"`)
// offers domains of domainType. offered nil is a host whose capabilities do not mention the TPM
// (a libvirt older than 7.x): it is not judged, and the start of a member there says what is
// missing. Without TPM support or without swtpm only that is said, on the block (Field "tpm"):
// the model and version enums say nothing more then.
func TPMProblems(t TPM, offered *HostTPM, host, domainType string) []FieldProblem {
	if offered == nil {
		return nil
	}
	if !offered.Supported {
		return []FieldProblem{{"tpm", fmt.Sprintf("%s offers no TPM devices for %s domains (its QEMU has none). Leave the tpm block out, or put the members on a host that offers them", host, domainType)}}
	}
	if !slices.Contains(offered.BackendModels, TPMBackendEmulator) {
		return []FieldProblem{{"tpm", fmt.Sprintf("the tpm block needs an emulated TPM (swtpm), and %s offers no emulator backend for %s domains (it offers %s): libvirt lists it only when it finds swtpm. Install swtpm there (Debian and Ubuntu: `apt-get install swtpm swtpm-tools`) and restart libvirtd, or leave the tpm block out", host, domainType, listOrNone(offered.BackendModels))}}
	}
	var out []FieldProblem
	if !slices.Contains(offered.Models, t.Model) {
		out = append(out, FieldProblem{"tpm.model", fmt.Sprintf("tpm model = %q is not offered for %s domains on %s, which offers %s", t.Model, domainType, host, listOrNone(offered.Models))})
	}
	if offered.VersionsListed && !slices.Contains(offered.Versions, t.Version) {
		out = append(out, FieldProblem{"tpm.version", fmt.Sprintf("tpm version = %q is not one the TPM emulator (swtpm) on %s offers, which is %s. Install a swtpm that does TPM %s there and restart libvirtd", t.Version, host, listOrNone(offered.Versions), t.Version)})
	}
	return out
}

func listOrNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}
