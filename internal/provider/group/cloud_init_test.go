package group

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

const woSecret = "#cloud-config\npassword: wo-s3cret\n"

func withCloudInit(c *cloudInitModel) StatefulGroupModel {
	m := planGroupModel("m1")
	m.Template.CloudInit = c
	return m
}

func woCloudInit(value attr.Value, version types.Int64) *cloudInitModel {
	v, _ := value.(types.String)
	return &cloudInitModel{UserData: types.StringNull(), NetworkConfig: types.StringNull(), UserDataWO: v, UserDataWOVersion: version}
}

func groupConfigOf(t *testing.T, m StatefulGroupModel) tfsdk.Config {
	t.Helper()
	return tfsdk.Config{Schema: StatefulGroupSchema(), Raw: groupPlanOf(t, m).Raw}
}

// The group's apply hands the executor the write-only user data of its configuration with its
// version, and nothing when there is none.
func TestApplySecrets_userData(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		cloudInit *cloudInitModel
		want      reconcile.Secrets
	}{
		"write-only user data": {woCloudInit(types.StringValue(woSecret), types.Int64Value(3)), reconcile.Secrets{UserData: woSecret, UserDataVersion: 3}},
		"empty write-only":     {woCloudInit(types.StringValue(""), types.Int64Value(1)), reconcile.Secrets{UserData: "", UserDataVersion: 1}},
		"user_data only":       {&cloudInitModel{UserData: types.StringValue("#cloud-config\n"), NetworkConfig: types.StringNull(), UserDataWO: types.StringNull(), UserDataWOVersion: types.Int64Null()}, reconcile.Secrets{}},
		"no cloud_init":        {nil, reconcile.Secrets{}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var d diag.Diagnostics
			got := applySecrets(context.Background(), groupConfigOf(t, withCloudInit(c.cloudInit)), &d)
			if d.HasError() {
				t.Fatal(d)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("secrets (-want +got):\n%s", diff)
			}
		})
	}
}

// The group record's copy of the configuration keeps the version and never the value; read
// back (import, refresh), the value is null, as Terraform keeps a write-only attribute.
func TestGroupSpec_userDataWOKeepsTheVersionOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var d diag.Diagnostics
	m := withCloudInit(woCloudInit(types.StringValue(woSecret), types.Int64Value(2)))
	raw := m.encodeGroupSpec(ctx, &d)
	if d.HasError() {
		t.Fatal(d)
	}
	if strings.Contains(raw, "wo-s3cret") || !strings.Contains(raw, `"user_data_wo_version":2`) {
		t.Fatalf("the record's configuration is %s: want the version and never the value", raw)
	}
	var back StatefulGroupModel
	back.decodeGroupSpec(raw, &d)
	if d.HasError() {
		t.Fatal(d)
	}
	want := woCloudInit(types.StringNull(), types.Int64Value(2))
	if diff := cmp.Diff(want, back.Template.CloudInit); diff != "" {
		t.Errorf("cloud_init read back (-want +got):\n%s", diff)
	}
	if got := back.Template.CloudInit.engineCloudInit(); got.UserDataWOVersion != 2 || got.UserData != "" {
		t.Errorf("engine cloud-init %+v, want version 2 and no user data", got)
	}
}

// The schema's rules for the pair: user_data_wo is write-only and sensitive, conflicts with
// user_data and needs its version; the version is at least 1 (whether it needs the value is the
// plan's to say, TestCheckWriteOnlyValues).
func TestCloudInitSchema_userDataWO(t *testing.T) {
	t.Parallel()
	wo, ok := attributeAt(t, "template", "cloud_init", "user_data_wo").(schema.StringAttribute)
	if !ok || !wo.WriteOnly || !wo.Sensitive || !wo.Optional {
		t.Fatalf("user_data_wo is %+v, want optional, sensitive and write-only", wo)
	}
	cases := map[string]struct {
		cloudInit *cloudInitModel
		attribute string
		want      string // a part of the one diagnostic's detail; "" for none
	}{
		"both set":                  {woCloudInit(types.StringValue(woSecret), types.Int64Value(1)), "user_data_wo", ""},
		"conflicts with user_data":  {&cloudInitModel{UserData: types.StringValue("#cloud-config\n"), NetworkConfig: types.StringNull(), UserDataWO: types.StringValue(woSecret), UserDataWOVersion: types.Int64Value(1)}, "user_data_wo", `"template.cloud_init.user_data" cannot be specified when "template.cloud_init.user_data_wo" is specified`},
		"value without its version": {woCloudInit(types.StringValue(woSecret), types.Int64Null()), "user_data_wo", `"template.cloud_init.user_data_wo_version" must be specified when "template.cloud_init.user_data_wo" is specified`},
		// The plan decides, with the state (checkWriteOnlyValues): the version the group has may stand alone.
		"version without the value": {woCloudInit(types.StringNull(), types.Int64Value(1)), "user_data_wo_version", ""},
		"version 0":                 {woCloudInit(types.StringValue(woSecret), types.Int64Value(0)), "user_data_wo_version", `must be at least 1`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := groupConfigOf(t, withCloudInit(c.cloudInit))
			at := pathCloudInit.AtName(c.attribute)
			ctx := context.Background()
			var d diag.Diagnostics
			switch a := attributeAt(t, "template", "cloud_init", c.attribute).(type) {
			case schema.StringAttribute:
				var v types.String
				d.Append(cfg.GetAttribute(ctx, at, &v)...)
				for _, val := range a.Validators {
					resp := &validator.StringResponse{}
					val.ValidateString(ctx, validator.StringRequest{Path: at, PathExpression: at.Expression(), ConfigValue: v, Config: cfg}, resp)
					d.Append(resp.Diagnostics...)
				}
			case schema.Int64Attribute:
				var v types.Int64
				d.Append(cfg.GetAttribute(ctx, at, &v)...)
				for _, val := range a.Validators {
					resp := &validator.Int64Response{}
					val.ValidateInt64(ctx, validator.Int64Request{Path: at, PathExpression: at.Expression(), ConfigValue: v, Config: cfg}, resp)
					d.Append(resp.Diagnostics...)
				}
			}
			switch {
			case c.want == "" && len(d) > 0:
				t.Fatalf("diagnostics %v, want none", d)
			case c.want != "" && (len(d) != 1 || !strings.Contains(d[0].Detail(), c.want)):
				t.Fatalf("diagnostics %v, want one saying %q", d, c.want)
			}
		})
	}
}
