package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/virtfleet/terraform-provider-virt/internal/provider/lists"
)

// The list's filters, alone and combined, over the hand-made host (tfacc-a and -b stopped,
// tfacc-c running, db-1 a group's member, tfacc-other adopted by another state), as terraform
// query sends them; results in name order, identities {host, name}.
func TestDomainList_filters(t *testing.T) {
	t.Parallel()
	b := handMade(t)
	p := newDomainProto(t, b)
	str := func(s string) tftypes.Value { return tftypes.NewValue(tftypes.String, s) }
	boolean := func(v bool) tftypes.Value { return tftypes.NewValue(tftypes.Bool, v) }
	tests := map[string]struct {
		config map[string]tftypes.Value
		want   []string
	}{
		"all":             {nil, []string{"db-1", "tfacc-a", "tfacc-b", "tfacc-c", "tfacc-other"}},
		"host default":    {map[string]tftypes.Value{"host": str("default")}, []string{"db-1", "tfacc-a", "tfacc-b", "tfacc-c", "tfacc-other"}},
		"name_prefix":     {map[string]tftypes.Value{"name_prefix": str("tfacc-")}, []string{"tfacc-a", "tfacc-b", "tfacc-c", "tfacc-other"}},
		"name_regex":      {map[string]tftypes.Value{"name_regex": str(`^tfacc-[ab]$`)}, []string{"tfacc-a", "tfacc-b"}},
		"state RUNNING":   {map[string]tftypes.Value{"state": str("RUNNING")}, []string{"tfacc-c"}},
		"state STOPPED":   {map[string]tftypes.Value{"state": str("STOPPED"), "name_prefix": str("tfacc-")}, []string{"tfacc-a", "tfacc-b", "tfacc-other"}},
		"managed true":    {map[string]tftypes.Value{"managed": boolean(true)}, []string{"db-1", "tfacc-other"}},
		"managed false":   {map[string]tftypes.Value{"managed": boolean(false)}, []string{"tfacc-a", "tfacc-b", "tfacc-c"}},
		"combined":        {map[string]tftypes.Value{"managed": boolean(false), "state": str("STOPPED"), "name_regex": str("b$")}, []string{"tfacc-b"}},
		"nothing matches": {map[string]tftypes.Value{"name_prefix": str("zz")}, nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			found, errs := p.list(tc.config, false)
			if errs != "" {
				t.Fatal(errs)
			}
			var got []string
			for _, f := range found {
				m := map[string]tftypes.Value{}
				_ = f.identity.As(&m)
				var host, n string
				_ = m["host"].As(&host)
				_ = m["name"].As(&n)
				if host != "default" || !strings.HasPrefix(f.name, n+" (") || !f.resource.IsNull() {
					t.Errorf("result %q: identity %s/%s, resource %v", f.name, host, n, f.resource)
				}
				got = append(got, n)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("listed (-want +got):\n%s", diff)
			}
		})
	}
}

// Bad filter values are refused when the list block is validated, naming the attribute, and a
// host the provider does not have is refused by the listing.
func TestDomainList_badInput(t *testing.T) {
	t.Parallel()
	p := newDomainProto(t, handMade(t))
	if _, errs := p.list(map[string]tftypes.Value{"host": tftypes.NewValue(tftypes.String, "h9")}, false); !strings.Contains(errs, `host = "h9", but the provider has no host of that name`) {
		t.Errorf("unknown host: %q", errs)
	}
	for attr, v := range map[string]tftypes.Value{
		"name_regex": tftypes.NewValue(tftypes.String, "(["),
		"state":      tftypes.NewValue(tftypes.String, "shut off"),
	} {
		ds := p.validateList(map[string]tftypes.Value{attr: v})
		if len(ds) != 1 || ds[0].Attribute == nil || ds[0].Attribute.String() != tftypes.NewAttributePath().WithAttributeName(attr).String() {
			t.Errorf("%s: want one error on the attribute, got %v", attr, ds)
		}
	}
}

// The list resource's page is written by hand (templates/list-resources/domain.md, see its
// comment): it must give each argument with the schema's own description.
func TestDomainListDoc(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "templates", "list-resources", "domain.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := lists.DomainListSchema()
	if !strings.Contains(string(doc), s.MarkdownDescription) {
		t.Errorf("the page does not give the list resource's description as the schema has it:\n%s", s.MarkdownDescription)
	}
	for name, a := range s.Attributes {
		kind := map[bool]string{true: "Boolean", false: "String"}[name == "managed"]
		if line := fmt.Sprintf("- %#q (%s) %s\n", name, kind, a.GetMarkdownDescription()); !strings.Contains(string(doc), line) {
			t.Errorf("the page lacks the argument as the schema has it:\n%s", line)
		}
	}
}
