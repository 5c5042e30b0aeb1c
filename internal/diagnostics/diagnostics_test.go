package diagnostics

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
)

func TestConstructors(t *testing.T) {
	t.Parallel()
	down := errors.New("connection refused")
	cases := map[string]struct {
		got  diag.Diagnostic
		want diag.Diagnostic
	}{
		"group read says what to do next": {
			got:  GroupRead("db", down),
			want: diag.NewErrorDiagnostic("Cannot read group db", "connection refused.\n\nCheck that the group's hosts answer (virsh -c <uri> list), then run the command again."),
		},
		"group plan changes nothing": {
			got:  GroupPlan("db", errors.New("list domains: timeout.")),
			want: diag.NewErrorDiagnostic("Cannot plan group db", "list domains: timeout.\n\nNothing was changed. Check that the group's hosts answer, then plan again."),
		},
		"group not found on an attribute": {
			got: GroupNotFound(path.Root("group"), "db"),
			want: diag.NewAttributeErrorDiagnostic(path.Root("group"), "Group not found",
				"This libvirt host has no record of group \"db\" (`virsh secret-list` shows group records as \"virt-group:<group>:<generation>\"). Create it with a virt_stateful_group first (and refer to it: group = virt_stateful_group.<name>.name, so that Terraform creates it first), or check the group's name."),
		},
		"group not found without an attribute": {
			got: GroupNotFound(path.Empty(), "db"),
			want: diag.NewErrorDiagnostic("Group not found",
				"This libvirt host has no record of group \"db\" (`virsh secret-list` shows group records as \"virt-group:<group>:<generation>\"). Create it with a virt_stateful_group first (and refer to it: group = virt_stateful_group.<name>.name, so that Terraform creates it first), or check the group's name."),
		},
		"lease held keeps the holder's text": {
			got:  GroupLeaseHeld(errors.New("group db is being changed by another apply")),
			want: diag.NewErrorDiagnostic("Group is being changed by another apply", "group db is being changed by another apply"),
		},
		"member names taken points at the attribute to change": {
			got: MemberNamesTaken(path.Root("target_size"), errors.New("the plan creates members under names that other domains have: db-3 (a member of group web)")),
			want: diag.NewAttributeErrorDiagnostic(path.Root("target_size"), "Member names taken",
				"the plan creates members under names that other domains have: db-3 (a member of group web)"),
		},
		"provider not configured names what ran and what to check": {
			got: ProviderNotConfigured("virt_pool"),
			want: diag.NewErrorDiagnostic("Provider not configured",
				"The virt provider was not configured before virt_pool ran, so it has no host to ask. Check the provider block for errors reported with this one; if there are none, this is a bug in the provider: please report it."),
		},
		"domain read names the domain and its host": {
			got:  DomainRead("web-1", `host "h2"`, down),
			want: diag.NewErrorDiagnostic("Cannot read domain web-1", `host "h2": connection refused`),
		},
		"unchecked network names the network, the host and libvirt's message": {
			got: NetworkUnchecked(path.Root("template").AtName("network_interface").AtListIndex(0).AtName("network"), "default", `host "h2"`, down),
			want: diag.NewAttributeErrorDiagnostic(path.Root("template").AtName("network_interface").AtListIndex(0).AtName("network"), "Cannot check the network",
				`network "default" on host "h2": connection refused`),
		},
		"unchecked network on the default host": {
			got: NetworkUnchecked(path.Root("template").AtName("network_interface").AtListIndex(1).AtName("address"), "lan", `host "default" (the provider's uri)`, errors.New("Network not found: no network with matching name 'lan'")),
			want: diag.NewAttributeErrorDiagnostic(path.Root("template").AtName("network_interface").AtListIndex(1).AtName("address"), "Cannot check the network",
				`network "lan" on host "default" (the provider's uri): Network not found: no network with matching name 'lan'`),
		},
		"an address on a user-mode interface names the interface and what is allowed": {
			got: UserModeAddress(path.Root("template").AtName("network_interface").AtListIndex(1).AtName("address"), `network_interface[1].address = "192.168.122.50"`,
				"network_interface[1]", `address on an interface with type = "network", or leave address unset`),
			want: diag.NewAttributeErrorDiagnostic(path.Root("template").AtName("network_interface").AtListIndex(1).AtName("address"), "Address on a user-mode interface",
				`network_interface[1].address = "192.168.122.50", but network_interface[1] is a type = "user" interface, which has no libvirt network whose DHCP could reserve an address. Allowed: address on an interface with type = "network", or leave address unset.`),
		},
		"an argument its block needs names the attribute and what to give": {
			got: RequiredInBlock(path.Root("template").AtName("graphics").AtName("type"), `"vnc" or "spice"`),
			want: diag.NewAttributeErrorDiagnostic(path.Root("template").AtName("graphics").AtName("type"), "Missing required argument",
				`template.graphics.type is required in its block: give "vnc" or "spice".`),
		},
		"an import ID of the wrong form says what it must be": {
			got:  InvalidImportID("db-1", "GROUP/NAME: the group's name and the instance's name, both DNS labels, such as db/db-1"),
			want: diag.NewErrorDiagnostic("Invalid import ID", `The import ID "db-1" must be GROUP/NAME: the group's name and the instance's name, both DNS labels, such as db/db-1.`),
		},
		"instances that cannot be rendered keep the error's text": {
			got:  InstancesUnrendered(errors.New("json: unsupported value: NaN")),
			want: diag.NewErrorDiagnostic("Cannot render the group's instances", "json: unsupported value: NaN"),
		},
		"unreachable record refuses a change": {
			got:  RecordUnreachable("db", errors.New("host h2 cannot be reached")),
			want: diag.NewErrorDiagnostic("Cannot plan a change to group db", "host h2 cannot be reached. Apply this change once it answers."),
		},
		"unreachable record warns on a read": {
			got:  RecordUnreachableWarning(errors.New("host h2 cannot be reached"), "What the state has is kept."),
			want: diag.NewWarningDiagnostic("Group record not reachable", "host h2 cannot be reached. What the state has is kept."),
		},
		"unknown host names the provider's hosts": {
			got: UnknownHost(path.Root("distribution_policy").AtName("hosts").AtListIndex(1), "distribution_policy.hosts[1]", "h9", []string{"default", "h2"}),
			want: diag.NewAttributeErrorDiagnostic(path.Root("distribution_policy").AtName("hosts").AtListIndex(1), "Unknown host",
				"distribution_policy.hosts[1] = \"h9\", but the provider has no host of that name. The provider's hosts: default, h2 (default is its own uri). Add a host block named \"h9\" to the provider, or name one of these."),
		},
		"a host a list could not read is a warning saying what is missing": {
			got: HostNotListed("h2", errors.New("connection refused")),
			want: diag.NewWarningDiagnostic("Host not listed",
				"host \"h2\": connection refused.\n\nThe groups whose records are on it are missing from these results. Check that the host answers (virsh -c <uri> secret-list), then run the query again."),
		},
		"existing pool says how to import it": {
			got: PoolExists(path.Root("name"), `host "default"`, "data", "/srv/data"),
			want: diag.NewAttributeErrorDiagnostic(path.Root("name"), "Storage pool already exists",
				"name = \"data\", but host \"default\" already has a storage pool of that name (target \"/srv/data\"). To manage it with this resource, import it: terraform import virt_pool.<name> data (`virsh pool-list --all` lists the pools). Or choose another name."),
		},
		"a directory reached through a link names where it leads": {
			got: PoolPathTaken(path.Root("path"), `host "default"`, "/data/link", "/srv/data", "data", "/srv/data"),
			want: diag.NewAttributeErrorDiagnostic(path.Root("path"), "Directory belongs to another storage pool",
				"path = \"/data/link\" (it resolves to \"/srv/data\") is the target of storage pool \"data\" (\"/srv/data\") on host \"default\": two pools must not share a directory. Use that pool (pool = \"data\") or import it (terraform import virt_pool.<name> data), or choose another directory."),
		},
		"the same directory as written": {
			got: PoolPathTaken(path.Root("path"), `host "default"`, "/srv/data", "/srv/data", "data", "/srv/data"),
			want: diag.NewAttributeErrorDiagnostic(path.Root("path"), "Directory belongs to another storage pool",
				"path = \"/srv/data\" is the target of storage pool \"data\" (\"/srv/data\") on host \"default\": two pools must not share a directory. Use that pool (pool = \"data\") or import it (terraform import virt_pool.<name> data), or choose another directory."),
		},
		"pools that cannot be listed change nothing": {
			got:  PoolsUnreadable(`host "h2"`, down),
			want: diag.NewErrorDiagnostic("Cannot list the storage pools", "host \"h2\": connection refused.\n\nNothing was changed. Check that the host answers (virsh -c <uri> pool-list --all), then run the command again."),
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(diag.Diagnostics{c.want}, diag.Diagnostics{c.got}); diff != "" {
				t.Errorf("diagnostic (-want +got):\n%s", diff)
			}
		})
	}
}
