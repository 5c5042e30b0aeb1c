package group

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// A write-only version without its value plans only where the group already has that version
// (the configuration -generate-config-out writes); a new group or a new version needs the value.
func TestCheckWriteOnlyValues(t *testing.T) {
	t.Parallel()
	withGraphics := func(value types.String, version types.Int64) StatefulGroupModel {
		m := planGroupModel("m1")
		m.Template.Graphics = &graphicsModel{Type: types.StringValue("vnc"), Listen: types.StringNull(), PasswordWO: value, PasswordWOVersion: version}
		return m
	}
	none := StatefulGroupModel{}
	cases := map[string]struct {
		config, state StatefulGroupModel // a zero state is a new group
		want          []string           // the paths of the errors
	}{
		"value and version, new group":          {config: withCloudInit(woCloudInit(types.StringValue(woSecret), types.Int64Value(1))), state: none},
		"version alone, new group":              {config: withCloudInit(woCloudInit(types.StringNull(), types.Int64Value(1))), state: none, want: []string{"template.cloud_init.user_data_wo"}},
		"version alone, the group's version":    {config: withCloudInit(woCloudInit(types.StringNull(), types.Int64Value(2))), state: withCloudInit(woCloudInit(types.StringNull(), types.Int64Value(2)))},
		"version alone, a new version":          {config: withCloudInit(woCloudInit(types.StringNull(), types.Int64Value(3))), state: withCloudInit(woCloudInit(types.StringNull(), types.Int64Value(2))), want: []string{"template.cloud_init.user_data_wo"}},
		"version alone, group had none":         {config: withCloudInit(woCloudInit(types.StringNull(), types.Int64Value(1))), state: planGroupModel("m1"), want: []string{"template.cloud_init.user_data_wo"}},
		"value and a new version":               {config: withCloudInit(woCloudInit(types.StringValue(woSecret), types.Int64Value(3))), state: withCloudInit(woCloudInit(types.StringNull(), types.Int64Value(2)))},
		"no cloud-init":                         {config: planGroupModel("m1"), state: planGroupModel("m1")},
		"password version alone, the group's":   {config: withGraphics(types.StringNull(), types.Int64Value(4)), state: withGraphics(types.StringNull(), types.Int64Value(4))},
		"password version alone, a new version": {config: withGraphics(types.StringNull(), types.Int64Value(5)), state: withGraphics(types.StringNull(), types.Int64Value(4)), want: []string{"template.graphics.password_wo"}},
		"password version alone, new group":     {config: withGraphics(types.StringNull(), types.Int64Value(1)), state: none, want: []string{"template.graphics.password_wo"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			state := tfsdk.State{Schema: StatefulGroupSchema(), Raw: tftypes.NewValue(StatefulGroupSchema().Type().TerraformType(context.Background()), nil)}
			if c.state.Template != nil {
				state.Raw = groupPlanOf(t, c.state).Raw
			}
			var d diag.Diagnostics
			checkWriteOnlyValues(context.Background(), groupConfigOf(t, c.config), state, &d)
			var got []string
			for _, x := range d {
				p, ok := x.(diag.DiagnosticWithPath)
				if !ok || x.Severity() != diag.SeverityError || !strings.Contains(x.Detail(), "Set "+p.Path().String()+" to its value") {
					t.Errorf("diagnostic %q: %s, want an error on its attribute that says to set it", x.Summary(), x.Detail())
					continue
				}
				got = append(got, p.Path().String())
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("errors on (-want +got):\n%s", diff)
			}
		})
	}
}
