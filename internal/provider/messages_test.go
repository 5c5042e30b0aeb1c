package provider

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/diagnostics"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/config"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/group"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

func TestApplyError_saysWhatWasDoneOnlyWhenSomethingWas(t *testing.T) {
	t.Parallel()
	cause := errors.New("list domains: connection reset")
	cases := map[string]struct {
		err     error
		started bool
		want    string
	}{
		"nothing started": {
			err:  cause,
			want: "list domains: connection reset\n\nNo member was changed; the next apply plans again from what is on the host.",
		},
		"an operation started": {
			err: cause, started: true,
			want: "list domains: connection reset\n\nWhat was done is kept and marked on each instance; the next apply finishes or undoes the rest.",
		},
		"a refusal says only itself": {
			err:  &engine.LeaseError{Group: "db", Lease: engine.Lease{Holder: "h", Since: time.Unix(0, 0), Expires: time.Unix(60, 0)}},
			want: (&engine.LeaseError{Group: "db", Lease: engine.Lease{Holder: "h", Since: time.Unix(0, 0), Expires: time.Unix(60, 0)}}).Error(),
		},
		"a rollout's error says what was done itself": {
			err: &reconcile.RolloutError{Wave: 1, Waves: 1, Done: []string{"db-1"}}, started: true,
			want: (&reconcile.RolloutError{Wave: 1, Waves: 1, Done: []string{"db-1"}}).Error(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, providerdata.ApplyError(tc.err, tc.started)); diff != "" {
				t.Errorf("applyError (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnfinishedCreate_tellsACreationUnderWayFromOneThatStopped(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 11, 28, 22, 0, 0, 0, time.UTC)
	meta := reconcile.Meta{Owner: &engine.Owner{ID: "run-1", Since: since, Creating: true}}
	cases := map[string]struct {
		leaseErr error
		want     diag.Diagnostic
	}{
		"the creating apply holds the lease": {
			leaseErr: &engine.LeaseError{Group: "db", Lease: engine.Lease{Holder: "tf@m1", Since: since, Expires: since.Add(time.Minute)}},
			want: diag.NewAttributeErrorDiagnostic(path.Root("name"), "Group is being created by another apply",
				"Group db is being created by another apply (tf@m1) since 2026-11-28T22:00:00Z. Nothing was changed: wait for that apply to finish, then import the group (terraform import virt_stateful_group.<name> db) to manage it from this state, or choose another name."),
		},
		"no apply holds it: the creation stopped": {
			want: diag.NewWarningDiagnostic("Finishing an unfinished creation",
				"Group db was being created by an earlier apply that did not finish (owner run-1 since 2026-11-28T22:00:00Z); this apply finishes it (or builds it anew, when it replaces the group a failed create left tainted) and takes it as its own."),
		},
		"the lease cannot be judged": {
			leaseErr: errors.New("lease unreadable"),
			want:     diagnostics.GroupLeaseHeld(errors.New("lease unreadable")),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, group.UnfinishedCreate("db", meta, tc.leaseErr)); diff != "" {
				t.Errorf("unfinishedCreate (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConfigNotFound_namesWhoHoldsTheDomain(t *testing.T) {
	t.Parallel()
	head := `Group "a" has no per-instance config for "b-1"`
	cases := map[string]struct {
		who    string
		d      backend.Domain
		exists bool
		want   string
	}{
		"no such domain": {
			want: head + `, and no domain "b-1" exists on the group's hosts. Check the import ID (GROUP/NAME) and the provider's hosts.`,
		},
		"another group's member, as the observation took it": {
			who: `group "b" (domain b-1 on host default carries its record)`, exists: true,
			d:    backend.Domain{Name: "b-1", Record: &backend.Record{Group: "b", Index: 1}},
			want: head + `, and domain "b-1" belongs to group "b" (domain b-1 on host default carries its record), not to a group that may adopt it: a group never takes what is another's. Nothing was imported. Import the config into the group that owns the domain, or name a domain no provider created.`,
		},
		"another group's member, by its record alone": {
			exists: true, d: backend.Domain{Name: "b-1", Record: &backend.Record{Group: "b", Index: 1}},
			want: head + `, and domain "b-1" belongs to group "b" (its member record), not to a group that may adopt it: a group never takes what is another's. Nothing was imported. Import the config into the group that owns the domain, or name a domain no provider created.`,
		},
		"the group's own member": {
			exists: true, d: backend.Domain{Name: "b-1", Record: &backend.Record{Group: "a", Index: 3}},
			want: head + `, and domain "b-1" is already its member (instance 3) with no config: write a virt_per_instance_config for it instead of importing one.`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, config.ConfigNotFound("a", "b-1", tc.who, tc.d, tc.exists)); diff != "" {
				t.Errorf("configNotFound (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGroupRecordLostMessages(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		got, want diag.Diagnostic
	}{
		"a refresh keeps the group and names its members": {
			got: diagnostics.GroupRecordLost("db", []string{"db-1", "db-2"}),
			want: diag.NewWarningDiagnostic("Group record missing",
				"The record of group db is gone from its host (`virsh secret-list` shows group records as \"virt-group:<group>:<generation>\"; none for this group), but its members db-1, db-2 are still there. The group is kept in the state as its configuration has it. The next apply writes the record back from the configuration and creates no member that exists; a destroy deletes the members, their volumes following their delete rules."),
		},
		"the plan says the record is written back": {
			got: diagnostics.GroupRecordWrittenBack("db"),
			want: diag.NewWarningDiagnostic("Group record will be written back",
				"The record of group db is gone from its host. This apply writes it back from the configuration, then plans the members from it: the domains that carry the group's member records are its members and are not created again."),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, tc.got); diff != "" {
				t.Errorf("diagnostic (-want +got):\n%s", diff)
			}
		})
	}
}
