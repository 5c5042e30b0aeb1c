package config

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// TestPerInstanceConfig_checkSourcesPointsAtTheSource: a disk source the host does not have is
// refused on that disk block's source attribute, not on the whole preserved_state.disk set.
func TestPerInstanceConfig_checkSourcesPointsAtTheSource(t *testing.T) {
	t.Parallel()
	r := &PerInstanceConfigResource{Data: &providerdata.ProviderData{Reconciler: reconcile.New(fake.New())}}
	disk := func(dev, src string) configDiskModel {
		return configDiskModel{DeviceName: types.StringValue(dev), Source: types.StringValue(src), Mode: types.StringValue("READ_WRITE"), DeleteRule: types.StringValue("NEVER")}
	}
	plan := PerInstanceConfigModel{Name: types.StringValue("db-1"), PreservedState: &PreservedStateModel{
		Disk: []configDiskModel{disk("logs", "gone.qcow2")},
	}}
	var diags diag.Diagnostics
	r.checkSources(context.Background(), resource.ModifyPlanRequest{}, plan, "virt", []string{engine.DefaultHost}, nil, &diags)
	if len(diags) != 1 {
		t.Fatalf("diagnostics %v, want one", diags)
	}
	got := diags[0].(diag.DiagnosticWithPath).Path().String()
	if !strings.HasPrefix(got, "preserved_state.disk[") || !strings.HasSuffix(got, "].source") || !strings.Contains(got, `"logs"`) {
		t.Errorf("path %s, want the source of preserved_state.disk \"logs\"", got)
	}
}
