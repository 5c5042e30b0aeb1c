package domain

import (
	"testing"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
)

func TestJudgeDomain(t *testing.T) {
	t.Parallel()
	plain := &backend.Domain{Name: "web"}
	member := &backend.Domain{Name: "db-1", Record: &backend.Record{Group: "db", Index: 1}}
	ours := &backend.Adoption{Owner: "mine"}
	theirs := &backend.Adoption{Owner: "theirs"}
	tests := map[string]struct {
		dom  *backend.Domain
		rec  *backend.Adoption
		own  providerdata.Ownership
		want domainVerdict
	}{
		"no such domain":                         {nil, nil, providerdata.Ownership{}, domainMissing},
		"made by hand, create":                   {plain, nil, providerdata.Ownership{}, domainAdoptable},
		"made by hand, after import":             {plain, nil, providerdata.Ownership{ID: "mine"}, domainAdoptable},
		"adopted by this state":                  {plain, ours, providerdata.Ownership{ID: "mine"}, domainAdoptable},
		"adopted by another, create":             {plain, theirs, providerdata.Ownership{}, domainOtherState},
		"adopted by another, this state's after": {plain, theirs, providerdata.Ownership{ID: "mine"}, domainOtherState},
		"adopted by another, imported here":      {plain, theirs, providerdata.Ownership{ID: "mine", TakeoverFrom: "theirs"}, domainAdoptable},
		"a group's member":                       {member, nil, providerdata.Ownership{}, domainGroupMember},
		"a group's member, even with our record": {member, ours, providerdata.Ownership{ID: "mine"}, domainGroupMember},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := judgeDomain(tc.dom, tc.rec, tc.own); got != tc.want {
				t.Errorf("judgeDomain = %d, want %d", got, tc.want)
			}
		})
	}
}
