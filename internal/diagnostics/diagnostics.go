// Package diagnostics holds the provider's named diagnostics: one constructor per kind of error,
// so that the same failure reads the same wherever it happens, and each says what happened, to
// which object, and what to do next (in the spirit of terraform-provider-random's
// internal/diagnostics). The summaries are stable: users and tests match them.
package diagnostics

import (
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
)

// recordHint tells where group records are on a host, for the person looking for one.
const recordHint = "`virsh secret-list` shows group records as \"virt-group:<group>:<generation>\""

// GroupRead is a group whose record or members could not be read from its hosts.
func GroupRead(group string, err error) diag.Diagnostic {
	return diag.NewErrorDiagnostic("Cannot read group "+group,
		withNext(err.Error(), "Check that the group's hosts answer (virsh -c <uri> list), then run the command again."))
}

// GroupNotFound is a group that the host has no record of, for a resource or data source that
// refers to it (at, when not empty, is the attribute naming it).
func GroupNotFound(at path.Path, group string) diag.Diagnostic {
	detail := fmt.Sprintf("This libvirt host has no record of group %q (%s). Create it with a virt_stateful_group first (and refer to it: group = virt_stateful_group.<name>.name, so that Terraform creates it first), or check the group's name.", group, recordHint)
	if at.Equal(path.Empty()) {
		return diag.NewErrorDiagnostic("Group not found", detail)
	}
	return diag.NewAttributeErrorDiagnostic(at, "Group not found", detail)
}

// GroupNotFoundToImport is an import of a group that the host has no record of.
func GroupNotFoundToImport(group string) diag.Diagnostic {
	return diag.NewErrorDiagnostic("Group not found",
		fmt.Sprintf("This libvirt host has no record of group %q (%s), so there is nothing to import. Check the import ID (the group's name) and the provider's uri.", group, recordHint))
}

// GroupPlan is a group that could not be planned: its members could not be read.
func GroupPlan(group string, err error) diag.Diagnostic {
	return diag.NewErrorDiagnostic("Cannot plan group "+group,
		withNext(err.Error(), "Nothing was changed. Check that the group's hosts answer, then plan again."))
}

// GroupLeaseHeld is a group that another apply is changing (err is the lease's holder, as
// engine.LeaseError tells it: who, since when, until when).
func GroupLeaseHeld(err error) diag.Diagnostic {
	return diag.NewErrorDiagnostic("Group is being changed by another apply", err.Error())
}

// GroupCreateUnderWay is the create of a group whose record another apply wrote as creating it
// and whose lease that apply still holds (holder, since): it is being created, not left
// unfinished, and this apply changes nothing. at is the attribute naming the group.
func GroupCreateUnderWay(at path.Path, group, holder string, since time.Time) diag.Diagnostic {
	return diag.NewAttributeErrorDiagnostic(at, "Group is being created by another apply",
		fmt.Sprintf("Group %s is being created by another apply (%s) since %s. Nothing was changed: wait for that apply to finish, then import the group (terraform import virt_stateful_group.<name> %s) to manage it from this state, or choose another name.",
			group, holder, since.UTC().Format(time.RFC3339), group))
}

// GroupCreateUnfinished is the create of a group whose record an earlier apply wrote as creating
// it and whose lease no apply holds any more: that apply stopped part-way (owner, since), and
// this one finishes the creation.
func GroupCreateUnfinished(group, owner string, since time.Time) diag.Diagnostic {
	return diag.NewWarningDiagnostic("Finishing an unfinished creation",
		fmt.Sprintf("Group %s was being created by an earlier apply that did not finish (owner %s since %s); this apply finishes it (or builds it anew, when it replaces the group a failed create left tainted) and takes it as its own.",
			group, owner, since.UTC().Format(time.RFC3339)))
}

// GroupRecordLost is a refresh of a group whose record is gone from its host while domains are
// still its members (they carry its member records, or stand where the state placed them):
// the group is kept in the state, and what the next apply and a destroy do is said.
func GroupRecordLost(group string, members []string) diag.Diagnostic {
	return diag.NewWarningDiagnostic("Group record missing",
		fmt.Sprintf("The record of group %s is gone from its host (%s; none for this group), but its members %s are still there. The group is kept in the state as its configuration has it. The next apply writes the record back from the configuration and creates no member that exists; a destroy deletes the members, their volumes following their delete rules.",
			group, recordHint, strings.Join(members, ", ")))
}

// GroupRecordWrittenBack is the plan of a group whose record is gone while its members are
// there (see GroupRecordLost): the apply writes the record back.
func GroupRecordWrittenBack(group string) diag.Diagnostic {
	return diag.NewWarningDiagnostic("Group record will be written back",
		fmt.Sprintf("The record of group %s is gone from its host. This apply writes it back from the configuration, then plans the members from it: the domains that carry the group's member records are its members and are not created again.", group))
}

// GroupOwnedElsewhere is a group that another Terraform state owns (err: engine.OwnerError).
func GroupOwnedElsewhere(err error) diag.Diagnostic {
	return diag.NewErrorDiagnostic("Group belongs to another Terraform state", err.Error())
}

// GroupExists is a create of a group that is already there (err: engine.ExistsError, which
// says how to import it); at is the attribute that names what is taken.
func GroupExists(at path.Path, err error) diag.Diagnostic {
	return diag.NewAttributeErrorDiagnostic(at, "Group already exists", err.Error())
}

// MemberNamesHeld is a group whose members' names domains no provider created hold (err:
// engine.NamesHeldError, which names them and both ways in: adopt_existing, or other names); at
// is the attribute the names come from.
func MemberNamesHeld(at path.Path, err error) diag.Diagnostic {
	return diag.NewAttributeErrorDiagnostic(at, "Member names taken by existing domains", err.Error())
}

// MemberNamesTaken is a plan that would create members under names other domains have: other
// groups' members, or domains a virt_domain resource adopted (err names them and what to change:
// engine.NamesTakenError at create); at is the attribute to change.
func MemberNamesTaken(at path.Path, err error) diag.Diagnostic {
	return diag.NewAttributeErrorDiagnostic(at, "Member names taken", err.Error())
}

// NetworkUnchecked is a plan-time check of a libvirt network (that it runs, that it has DHCP
// for a reserved address or a pinned one) that could not read it: the plan cannot say whether
// the configuration fits the host, so it refuses rather than guess. host is as onHost writes it;
// at is the attribute that names the network.
func NetworkUnchecked(at path.Path, network, host string, err error) diag.Diagnostic {
	return diag.NewAttributeErrorDiagnostic(at, "Cannot check the network", fmt.Sprintf("network %q on %s: %s", network, host, err))
}

// UserModeAddress is an address given for a network interface of type = "user", which has no
// libvirt network whose DHCP could reserve it: given is the attribute and value at fault (as the
// configuration writes them), nic the interface as the person knows it, allowed what is allowed
// instead; at is the attribute at fault.
func UserModeAddress(at path.Path, given, nic, allowed string) diag.Diagnostic {
	return diag.NewAttributeErrorDiagnostic(at, "Address on a user-mode interface",
		fmt.Sprintf("%s, but %s is a type = \"user\" interface, which has no libvirt network whose DHCP could reserve an address. Allowed: %s.", given, nic, allowed))
}

// RequiredInBlock is an attribute that its block needs but the schema cannot require (the block
// is optional, or one of several kinds); give says what to set it to.
func RequiredInBlock(at path.Path, give string) diag.Diagnostic {
	return diag.NewAttributeErrorDiagnostic(at, "Missing required argument",
		fmt.Sprintf("%s is required in its block: give %s.", at, give))
}

// RecordUnreachable is a change to a group whose record's host does not answer (err:
// reconcile.RecordHostError, naming the host).
func RecordUnreachable(group string, err error) diag.Diagnostic {
	return diag.NewErrorDiagnostic("Cannot plan a change to group "+group, err.Error()+". Apply this change once it answers.")
}

// NewGroupHostsDown is the plan of a new group none of whose hosts answered the reading of its
// members (why: each host and its error, as the plan's host warnings render them): nothing can be
// created, and a plan that showed the members as "known after apply" here would contradict the
// plan made moments before, when the hosts answered (Terraform's "Provider produced inconsistent
// final plan"). A daemon busy with thousands of domains can take longer than the provider's
// host_timeout.
func NewGroupHostsDown(group string, why []string) diag.Diagnostic {
	return diag.NewErrorDiagnostic("Cannot plan the members of new group "+group,
		fmt.Sprintf("No host of the group answered the reading of its members (%s). Nothing was changed. Plan again once the hosts answer; a daemon that is only slow answers within a longer host_timeout in the provider's configuration.", strings.Join(why, "; ")))
}

// RecordUnreachableWarning is a read or an unchanged plan of a group whose record's host does
// not answer: kept tells what is shown instead.
func RecordUnreachableWarning(err error, kept string) diag.Diagnostic {
	return diag.NewWarningDiagnostic("Group record not reachable", err.Error()+". "+kept)
}

// HostDomainType is a host that could not tell which domain type it runs (kvm or qemu), which a
// group whose template leaves domain_type unset needs.
func HostDomainType(err error) diag.Diagnostic {
	return diag.NewErrorDiagnostic("Cannot tell whether the host runs KVM",
		withNext(err.Error(), "Check that the provider's host answers (virsh -c <uri> domcapabilities), or set template.domain_type."))
}

// kvmCannotRunWhy says what a host that lists kvm on a CPU without VMX or SVM does to a kvm guest.
const kvmCannotRunWhy = "lists kvm domains (its /dev/kvm opens), but its CPU, as libvirt reports it, has neither VMX (Intel) nor SVM (AMD): a KVM there cannot run an ordinary guest, which QEMU pauses at its first instruction (`virsh domstate <member> --reason` says paused, its QEMU log \"KVM internal error\"), seconds after an apply that succeeded"

// KVMDefaultedToQEMU is a template that leaves domain_type unset on a host (host, as onHost
// writes it) whose KVM cannot run guests: the default is qemu there, and the plan says why.
func KVMDefaultedToQEMU(at path.Path, host string) diag.Diagnostic {
	return diag.NewAttributeWarningDiagnostic(at, "domain_type defaults to qemu: this host's KVM cannot run guests",
		fmt.Sprintf("domain_type is not set, and %s %s. The members run under TCG (domain_type = \"qemu\"): slower, but they run. Set domain_type = \"qemu\" to say so and no longer see this warning; for KVM, use a host whose CPU exposes VMX or SVM (in a virtual machine: nested virtualisation turned on).", host, kvmCannotRunWhy))
}

// KVMCannotRunGuests is domain_type = "kvm" (set, or resolved at the group's first plan) for
// members on a host (as onHost writes it) whose KVM cannot run guests. It is a warning, not an
// error: the judgement comes from the CPU's features, and such a KVM (a PVM-style one) can run
// guests built for it, which the person who set kvm may have.
func KVMCannotRunGuests(at path.Path, host string) diag.Diagnostic {
	return diag.NewAttributeWarningDiagnostic(at, "KVM on this host cannot run ordinary guests",
		fmt.Sprintf("domain_type = \"kvm\", but %s %s. Unless the members' image is built for this host's KVM, set domain_type = \"qemu\" (TCG; a change replaces the members, keeping their preserved disks), or leave the group's members off this host.", host, kvmCannotRunWhy))
}

// UnknownHost is a host name the provider has no host block for; at is where the name is given.
func UnknownHost(at path.Path, what, name string, known []string) diag.Diagnostic {
	return diag.NewAttributeErrorDiagnostic(at, "Unknown host",
		fmt.Sprintf("%s = %q, but the provider has no host of that name. The provider's hosts: %s (default is its own uri). Add a host block named %q to the provider, or name one of these.", what, name, strings.Join(known, ", "), name))
}

// ProviderNotConfigured is a resource, data source, list or action (what) that ran before the
// provider was configured, with no host to ask.
func ProviderNotConfigured(what string) diag.Diagnostic {
	return diag.NewErrorDiagnostic("Provider not configured",
		fmt.Sprintf("The virt provider was not configured before %s ran, so it has no host to ask. Check the provider block for errors reported with this one; if there are none, this is a bug in the provider: please report it.", what))
}

// DomainRead is a domain that could not be read from its host (host, as onHost writes it).
func DomainRead(name, host string, err error) diag.Diagnostic {
	return diag.NewErrorDiagnostic("Cannot read domain "+name, fmt.Sprintf("%s: %s", host, err))
}

// InvalidImportID is a string import ID of the wrong form; want says what it must be.
func InvalidImportID(id, want string) diag.Diagnostic {
	return diag.NewErrorDiagnostic("Invalid import ID", fmt.Sprintf("The import ID %q must be %s.", id, want))
}

// InstancesUnrendered is a group's instances list that could not be written as JSON.
func InstancesUnrendered(err error) diag.Diagnostic {
	return diag.NewErrorDiagnostic("Cannot render the group's instances", err.Error())
}

// withNext adds what to do next to an error's text, once.
func withNext(text, next string) string {
	text = strings.TrimRight(text, ". ")
	return text + ".\n\n" + next
}

// PoolExists is a create of a storage pool whose name a pool on the host already has (at: the
// name attribute). The provider never takes a pool it did not create without an import.
func PoolExists(at path.Path, host, pool, target string) diag.Diagnostic {
	return diag.NewAttributeErrorDiagnostic(at, "Storage pool already exists",
		fmt.Sprintf("name = %q, but %s already has a storage pool of that name (target %q). To manage it with this resource, import it: terraform import virt_pool.<name> %s (`virsh pool-list --all` lists the pools). Or choose another name.", pool, host, target, pool))
}

// PoolPathTaken is a create of a storage pool whose directory is, once links are followed,
// another pool's target (at: the path attribute). Two pools on one directory would each list and
// delete the other's volumes.
func PoolPathTaken(at path.Path, host, dir, resolved, other, otherTarget string) diag.Diagnostic {
	via := ""
	if resolved != "" && resolved != dir {
		via = fmt.Sprintf(" (it resolves to %q)", resolved)
	}
	return diag.NewAttributeErrorDiagnostic(at, "Directory belongs to another storage pool",
		fmt.Sprintf("path = %q%s is the target of storage pool %q (%q) on %s: two pools must not share a directory. Use that pool (pool = %q) or import it (terraform import virt_pool.<name> %s), or choose another directory.", dir, via, other, otherTarget, host, other, other))
}

// PoolNotFoundToImport is an import of a storage pool the host does not have.
func PoolNotFoundToImport(host, pool string) diag.Diagnostic {
	return diag.NewErrorDiagnostic("Storage pool not found",
		fmt.Sprintf("%s has no storage pool %q, so there is nothing to import (`virsh pool-list --all` lists them). Check the import ID: the pool's name, or <host>/<name> for a pool on one of the provider's host blocks.", host, pool))
}

// PoolsUnreadable is a storage pool plan or create that could not list the host's pools, which
// it must to know that the name and the directory are free.
func PoolsUnreadable(host string, err error) diag.Diagnostic {
	return diag.NewErrorDiagnostic("Cannot list the storage pools",
		withNext(host+": "+err.Error(), "Nothing was changed. Check that the host answers (virsh -c <uri> pool-list --all), then run the command again."))
}

// HostNotListed is a host whose group records a list resource could not list: what it keeps is
// missing from the results, which still hold the other hosts'.
func HostNotListed(host string, err error) diag.Diagnostic {
	return diag.NewWarningDiagnostic("Host not listed",
		withNext(fmt.Sprintf("host %q: %v", host, err), "The groups whose records are on it are missing from these results. Check that the host answers (virsh -c <uri> secret-list), then run the query again."))
}
