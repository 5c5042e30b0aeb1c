package group

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// stringList is a list of strings as the framework holds it.
func stringList(items ...string) types.List {
	vals := make([]attr.Value, len(items))
	for i, s := range items {
		vals[i] = types.StringValue(s)
	}
	return types.ListValueMust(types.StringType, vals)
}

// TestCheckDrain: a drain name must be a host of the provider, said as for hosts, and at least
// one host of hosts must stay undrained; each refusal names the attribute, the value and what is
// allowed.
func TestCheckDrain(t *testing.T) {
	t.Parallel()
	names := []string{"default", "h2", "h3"}
	cases := map[string]struct {
		hosts, drain []string
		want         []string // each error as "path: summary: detail", in order
	}{
		"no drain":                         {hosts: []string{"default", "h2"}},
		"one host of two drained":          {hosts: []string{"default", "h2"}, drain: []string{"h2"}},
		"a host outside hosts is no drain": {hosts: []string{"default", "h2"}, drain: []string{"h3"}},
		"the default host, without hosts":  {drain: []string{"h2"}},
		"a name the provider does not have": {hosts: []string{"default", "h2"}, drain: []string{"h2", "h9"},
			want: []string{`distribution_policy.drain[1]: Unknown host: distribution_policy.drain[1] = "h9", but the provider has no host of that name. The provider's hosts: default, h2, h3 (default is its own uri). Add a host block named "h9" to the provider, or name one of these.`}},
		"every host of hosts drained": {hosts: []string{"default", "h2"}, drain: []string{"h2", "default"},
			want: []string{`distribution_policy.drain: Every host of the group drained: distribution_policy.drain = ["h2", "default"] drains every host of distribution_policy.hosts (["default", "h2"]): its members would have no host to move to. At least one host of hosts must stay undrained: take a host out of drain, or add a host to hosts.`}},
		"the default host drained, without hosts": {drain: []string{"default"},
			want: []string{`distribution_policy.drain: Every host of the group drained: distribution_policy.drain = ["default"] drains every host of distribution_policy.hosts (left out: "default" alone): its members would have no host to move to. At least one host of hosts must stay undrained: take a host out of drain, or add a host to hosts.`}},
		"an unknown name and every host drained": {hosts: []string{"h2"}, drain: []string{"h2", "nope"},
			want: []string{
				`distribution_policy.drain[1]: Unknown host: distribution_policy.drain[1] = "nope", but the provider has no host of that name. The provider's hosts: default, h2, h3 (default is its own uri). Add a host block named "nope" to the provider, or name one of these.`,
				`distribution_policy.drain: Every host of the group drained: distribution_policy.drain = ["h2", "nope"] drains every host of distribution_policy.hosts (["h2"]): its members would have no host to move to. At least one host of hosts must stay undrained: take a host out of drain, or add a host to hosts.`,
			}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var diags diag.Diagnostics
			ok := checkDrain(&diags, c.hosts, c.drain, names)
			var got []string
			for _, d := range diags {
				p := ""
				if wp, isAttr := d.(diag.DiagnosticWithPath); isAttr {
					p = wp.Path().String()
				}
				got = append(got, p+": "+d.Summary()+": "+d.Detail())
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s", diff)
			}
			if ok != (len(c.want) == 0) {
				t.Errorf("checkDrain = %v with %d errors", ok, len(got))
			}
		})
	}
}

// TestDrainValidators: the schema's own validators of drain refuse a name twice and a name that
// is no host name, before any plan.
func TestDrainValidators(t *testing.T) {
	t.Parallel()
	block := StatefulGroupSchema().Blocks["distribution_policy"].(schema.SingleNestedBlock)
	drain := block.Attributes["drain"].(schema.ListAttribute)
	cases := map[string]struct {
		drain []string
		want  string // a part of the error; "" for none
	}{
		"distinct names":  {drain: []string{"h2", "default"}},
		"none":            {drain: []string{}},
		"a name twice":    {drain: []string{"h2", "h3", "h2"}, want: `This attribute contains duplicate values of: "h2"`},
		"not a host name": {drain: []string{"H_2"}, want: "H_2"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var diags diag.Diagnostics
			for _, v := range drain.Validators {
				resp := &validator.ListResponse{}
				v.ValidateList(context.Background(), validator.ListRequest{Path: path.Root("distribution_policy").AtName("drain"), ConfigValue: stringList(c.drain...)}, resp)
				diags.Append(resp.Diagnostics...)
			}
			var got []string
			for _, d := range diags.Errors() {
				got = append(got, d.Summary()+": "+d.Detail())
			}
			all := strings.Join(got, "; ")
			switch {
			case c.want == "" && all != "":
				t.Errorf("refused: %s", all)
			case c.want != "" && !strings.Contains(all, c.want):
				t.Errorf("errors %q do not say %q", all, c.want)
			}
		})
	}
}

// TestDistributionPolicy_engineAndRecord: drain, rebalance and live reach the engine's group as
// Drain, Rebalance and ColdMoves (= !live), and the resource's configuration on the host keeps
// them: read back they are what was applied, and a configuration written before them (hosts
// only) is the same as one with their defaults, so an upgraded provider sees no change.
func TestDistributionPolicy_engineAndRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	type engineView struct {
		Hosts, Drain         []string
		Rebalance, ColdMoves bool
	}
	cases := map[string]struct {
		policy *DistributionModel
		want   engineView
	}{
		"no block": {},
		"the defaults": {policy: &DistributionModel{Hosts: stringList("default", "h2"), Drain: stringList(), Rebalance: types.BoolValue(false), Live: types.BoolValue(true)},
			want: engineView{Hosts: []string{"default", "h2"}}},
		"drain, rebalance, cold": {policy: &DistributionModel{Hosts: stringList("default", "h2", "h3"), Drain: stringList("h2"), Rebalance: types.BoolValue(true), Live: types.BoolValue(false)},
			want: engineView{Hosts: []string{"default", "h2", "h3"}, Drain: []string{"h2"}, Rebalance: true, ColdMoves: true}},
		// State read before its upgrade: null is the default.
		"null values": {policy: &DistributionModel{Hosts: stringList("h2"), Drain: types.ListNull(types.StringType), Rebalance: types.BoolNull(), Live: types.BoolNull()},
			want: engineView{Hosts: []string{"h2"}}},
		// A plan whose live is not known yet moves live where it can, as the default.
		"live not known yet": {policy: &DistributionModel{Hosts: stringList("h2"), Drain: types.ListUnknown(types.StringType), Rebalance: types.BoolValue(false), Live: types.BoolUnknown()},
			want: engineView{Hosts: []string{"h2"}}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m := planGroupModel("a")
			m.Distribution = c.policy
			var diags diag.Diagnostics
			g := m.engineGroup(ctx, &diags)
			if diags.HasError() {
				t.Fatal(diags)
			}
			if diff := cmp.Diff(c.want, engineView{g.Hosts, g.Drain, g.Rebalance, g.ColdMoves}); diff != "" {
				t.Errorf("engine group (-want +got):\n%s", diff)
			}
			if name == "live not known yet" {
				return // not a configuration that is applied, nor written on a host
			}
			spec := m.encodeGroupSpec(ctx, &diags)
			var back StatefulGroupModel
			back.decodeGroupSpec(spec, &diags)
			if diags.HasError() {
				t.Fatal(diags)
			}
			bg := back.engineGroup(ctx, &diags)
			if diff := cmp.Diff(c.want, engineView{bg.Hosts, bg.Drain, bg.Rebalance, bg.ColdMoves}); diff != "" {
				t.Errorf("read back from the host (-want +got):\n%s", diff)
			}
			if !sameGroupSpec(spec, back.encodeGroupSpec(ctx, &diags)) {
				t.Errorf("written again differently")
			}
		})
	}

	t.Run("written before drain, rebalance and live", func(t *testing.T) {
		t.Parallel()
		m := planGroupModel("a")
		m.Distribution = &DistributionModel{Hosts: stringList("default", "h2"), Drain: stringList(), Rebalance: types.BoolValue(false), Live: types.BoolValue(true)}
		var diags diag.Diagnostics
		now := m.encodeGroupSpec(ctx, &diags)
		var raw map[string]any
		if err := json.Unmarshal([]byte(now), &raw); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"drain", "rebalance", "cold_moves"} {
			if _, has := raw[k]; has {
				t.Errorf("the default %s is written (%s): a record of an earlier release would read as a change", k, now)
			}
		}
		// An earlier release wrote the same configuration without them.
		for _, k := range []string{"drain", "rebalance", "cold_moves"} {
			delete(raw, k)
		}
		old := mustJSON(t, raw)
		if !sameGroupSpec(old, now) {
			t.Errorf("a configuration from before drain, rebalance and live differs from one with their defaults:\n%s\n%s", old, now)
		}
		var back StatefulGroupModel
		back.decodeGroupSpec(old, &diags)
		if diff := cmp.Diff(m.Distribution, back.Distribution); diff != "" || diags.HasError() {
			t.Errorf("imported distribution_policy (-want +got):\n%s %v", diff, diags)
		}
		for what, change := range map[string]func(*DistributionModel){
			"drain":      func(d *DistributionModel) { d.Drain = stringList("h2") },
			"rebalance":  func(d *DistributionModel) { d.Rebalance = types.BoolValue(true) },
			"live false": func(d *DistributionModel) { d.Live = types.BoolValue(false) },
		} {
			changed := m
			d := *m.Distribution
			change(&d)
			changed.Distribution = &d
			if sameGroupSpec(old, changed.encodeGroupSpec(ctx, &diags)) {
				t.Errorf("%s reads the same as the default", what)
			}
		}
	})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
