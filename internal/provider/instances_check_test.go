package provider

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// The group's `instances` is a map by member name. The checks below read it as the list of its
// members in the provider's order (engine.SortMembers: by index, then named members by name), the
// order tests are written in. The data source's `instances`, a list, passes as it is.

// membersOf is the group's instances, a map as Terraform's JSON gives it, as its members' list in
// the provider's order; a list is given back as it is.
func membersOf(v any) ([]any, error) {
	switch v := v.(type) {
	case []any:
		return v, nil
	case map[string]any:
		out := make([]any, 0, len(v))
		for _, m := range v {
			out = append(out, m)
		}
		slices.SortFunc(out, func(a, b any) int {
			ai, an := memberKey(a)
			bi, bn := memberKey(b)
			return engine.MemberOrder(ai, an, bi, bn)
		})
		return out, nil
	}
	return nil, fmt.Errorf("instances is a %T, want a map of members", v)
}

// memberKey is a member's index and name, for its order.
func memberKey(m any) (int, string) {
	o, _ := m.(map[string]any)
	name, _ := o["name"].(string)
	switch i := o["index"].(type) {
	case json.Number:
		n, _ := i.Int64()
		return int(n), name
	case float64:
		return int(i), name
	}
	return 0, name
}

// inMemberOrder checks instances as the list of its members (membersOf).
type inMemberOrder struct{ list knownvalue.Check }

func (c inMemberOrder) CheckValue(v any) error {
	list, err := membersOf(v)
	if err != nil {
		return err
	}
	return c.list.CheckValue(list)
}

func (c inMemberOrder) String() string { return c.list.String() }

// memberAt checks attribute attr of the i-th member (membersOf), or the whole member when attr
// is "".
type memberAt struct {
	i    int
	attr string
	want knownvalue.Check
}

func (c memberAt) CheckValue(v any) error {
	list, err := membersOf(v)
	if err != nil {
		return err
	}
	if c.i >= len(list) {
		return fmt.Errorf("member %d of %d", c.i, len(list))
	}
	el := list[c.i]
	if c.attr != "" {
		o, ok := el.(map[string]any)
		if !ok {
			return fmt.Errorf("member %d is a %T", c.i, el)
		}
		el = o[c.attr]
	}
	if err := c.want.CheckValue(el); err != nil {
		return fmt.Errorf("member %d %s: %w", c.i, c.attr, err)
	}
	return nil
}

func (c memberAt) String() string { return fmt.Sprintf("member %d %s: %s", c.i, c.attr, c.want) }

// expectMemberPlan checks attribute attr ("" the whole member) of the i-th member of the group at
// addr in the plan.
func expectMemberPlan(addr string, i int, attr string, want knownvalue.Check) plancheck.PlanCheck {
	return plancheck.ExpectKnownValue(addr, tfjsonpath.New("instances"), memberAt{i, attr, want})
}

// expectMemberState is expectMemberPlan in the state.
func expectMemberState(addr string, i int, attr string, want knownvalue.Check) statecheck.StateCheck {
	return statecheck.ExpectKnownValue(addr, tfjsonpath.New("instances"), memberAt{i, attr, want})
}
