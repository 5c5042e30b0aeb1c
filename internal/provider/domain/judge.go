package domain

import (
	"fmt"
	"time"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
)

// domainVerdict is what virt_domain may do with the domain it names, from what the host shows
// and what the state holds. The plan and the apply ask the same question (the host may have
// changed between them), so the rule is this one function, with its table test.
type domainVerdict int

const (
	// domainAdoptable: nobody holds the domain, or this state does (or is taking it over after
	// an import): the apply may write its ownership record.
	domainAdoptable domainVerdict = iota
	// domainMissing: there is no domain of that name; virt_domain never defines one.
	domainMissing
	// domainGroupMember: a group's member record is on the domain: it is the group's.
	domainGroupMember
	// domainOtherState: another Terraform state's ownership record is on it.
	domainOtherState
)

// judgeDomain decides: dom is nil when the host has no such domain; rec is its adoption record
// (nil for none); own is this state's ownership (ID empty before the first apply, TakeoverFrom
// the owner an import found and takes over).
func judgeDomain(dom *backend.Domain, rec *backend.Adoption, own providerdata.Ownership) domainVerdict {
	switch {
	case dom == nil:
		return domainMissing
	case dom.Record != nil:
		return domainGroupMember
	case rec == nil || rec.Owner == own.ID || (own.TakeoverFrom != "" && rec.Owner == own.TakeoverFrom):
		return domainAdoptable
	}
	return domainOtherState
}

// domainRefusal is the diagnostic of a verdict other than domainAdoptable: summary and detail.
func domainRefusal(v domainVerdict, host, name string, dom *backend.Domain, rec *backend.Adoption) (string, string) {
	switch v {
	case domainAdoptable:
		return "", ""
	case domainMissing:
		return "No such domain to adopt", fmt.Sprintf("There is no domain named %q on %s. virt_domain adopts a domain that exists (as `virsh list --all` shows it) and never defines one; nothing was changed. Define the domain first, or correct name or host.", name, providerdata.OnHost(host))
	case domainGroupMember:
		return "Domain belongs to a group", fmt.Sprintf("The domain %q on %s carries the member record of the group %q (instance %d): it is that group's, and virt_domain never takes or changes what a group manages; nothing was changed. To manage domains as a group's members, name them in the group's adopt_existing, or import them one at a time as virt_per_instance_config resources.", name, providerdata.OnHost(host), dom.Record.Group, dom.Record.Index)
	case domainOtherState:
		return "Domain adopted by another Terraform state", fmt.Sprintf("The domain %q on %s carries the ownership record of another Terraform state (owner %s, since %s); nothing was changed. A domain has one owner: to move it to this state, import it here (terraform import or an import block; the next apply takes it over), and remove it from the other state (a removed block or terraform state rm), whose plans would refuse it from then on.", name, providerdata.OnHost(host), rec.Owner, time.Unix(rec.Since, 0).UTC().Format(time.RFC3339))
	}
	return "", ""
}
