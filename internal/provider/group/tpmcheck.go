package group

import (
	"context"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
)

// tpmDue reports whether the template's TPM is to be checked against a host the group already
// uses: when the block, or the domain type or machine it is offered for, changed.
func tpmDue(t, prior *TemplateModel) bool {
	if t.TPM == nil || !providerdata.Known(t.TPM.Model, t.TPM.Version, t.Machine, t.DomainType) {
		return false
	}
	if prior == nil || prior.TPM == nil {
		return true
	}
	return !t.TPM.Model.Equal(prior.TPM.Model) || !t.TPM.Version.Equal(prior.TPM.Version) ||
		!t.Machine.Equal(prior.Machine) || !t.DomainType.Equal(prior.DomainType)
}

// checkHostTPM checks the template's TPM against what host offers a domain of domainType on
// machine (engine.TPMProblems), from the same domain capabilities, and their cache, as the
// firmware check. A host whose capabilities cannot be read is not judged here: an unknown
// machine is refused by the firmware check, a host that does not answer by the checks that
// read it first (limits), and a group's host that does not answer is not checked at all.
func checkHostTPM(ctx context.Context, diags *diag.Diagnostics, b backend.Host, host, domainType, machine string, tpm engine.TPM) {
	caps, err := b.DomainCaps(ctx, domainType, machine)
	if err != nil {
		return
	}
	for _, p := range engine.TPMProblems(tpm, caps.TPM, providerdata.OnHost(host), domainType) {
		at := path.Root("template")
		for _, part := range strings.Split(p.Field, ".") {
			at = at.AtName(part)
		}
		summary := "TPM not offered by the host"
		switch {
		case p.Field == "tpm.model":
			summary = "TPM model not offered by the host"
		case p.Field == "tpm.version":
			summary = "TPM version not offered by the host"
		case caps.TPM.Supported:
			summary = "No TPM emulator (swtpm) on the host"
		}
		diags.AddAttributeError(at, summary, p.Problem+".")
	}
}
