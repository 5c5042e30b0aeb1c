package group

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
)

// TestPlanBootDiskSize: the group's ModifyPlan fills an unset template.boot_disk.size_mib from
// the image's virtual size on the host, 1024 without an image, and never plans a boot disk
// smaller than the state's (a state from the flat 1024 default plans no change of it).
func TestPlanBootDiskSize(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	withImage := func(image string, size types.Int64) StatefulGroupModel {
		m := planGroupModel("m1")
		m.Template.BootDisk = &BootDiskModel{SourceImage: types.StringNull(), SizeMiB: size}
		if image != "" {
			m.Template.BootDisk.SourceImage = types.StringValue(image)
		}
		return m
	}
	cases := map[string]struct {
		prior  *StatefulGroupModel // the state's group, created on the fake host first
		image  string
		config types.Int64 // size_mib in the configuration
		want   types.Int64
	}{
		"create with an image of 64 MiB":         {image: "small.qcow2", config: types.Int64Null(), want: types.Int64Value(64)},
		"create with an image of 3000 MiB":       {image: "/fake/virt/big.qcow2", config: types.Int64Null(), want: types.Int64Value(3000)},
		"create without an image":                {config: types.Int64Null(), want: types.Int64Value(1024)},
		"create with the size set":               {image: "small.qcow2", config: types.Int64Value(100), want: types.Int64Value(100)},
		"create with a missing image":            {image: "gone.qcow2", config: types.Int64Null(), want: types.Int64Value(1024)},
		"a state from the 1024 default keeps it": {prior: ptr(withImage("small.qcow2", types.Int64Value(1024))), image: "small.qcow2", config: types.Int64Null(), want: types.Int64Value(1024)},
		"a new larger image grows the disks":     {prior: ptr(withImage("small.qcow2", types.Int64Value(1024))), image: "big.qcow2", config: types.Int64Null(), want: types.Int64Value(3000)},
		"a new smaller image keeps the size":     {prior: ptr(withImage("big.qcow2", types.Int64Value(3000))), image: "small.qcow2", config: types.Int64Null(), want: types.Int64Value(3000)},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r, b := newPlanResource(t)
			b.Volumes["virt/small.qcow2"] = &fake.Volume{SizeMiB: 64}
			b.Volumes["virt/big.qcow2"] = &fake.Volume{SizeMiB: 3000}
			var state *StatefulGroupModel
			if c.prior != nil {
				s := createdGroup(t, r, *c.prior)
				state = &s
			}
			config := withImage(c.image, c.config)
			plan := withImage(c.image, c.config)
			if c.config.IsNull() {
				plan.Template.BootDisk.SizeMiB = types.Int64Unknown() // the framework's plan of an unset computed value
			}
			if state != nil {
				plan.ID, plan.Instances = state.ID, state.Instances
				plan.Template.Metadata = types.MapNull(types.StringType) // a change besides the image
			}
			req := resource.ModifyPlanRequest{Plan: groupPlanOf(t, plan), State: groupStateOf(t, state), Config: tfsdk.Config{Schema: StatefulGroupSchema(), Raw: groupPlanOf(t, config).Raw}}
			resp := resource.ModifyPlanResponse{Plan: req.Plan}
			r.ModifyPlan(ctx, req, &resp)
			var got types.Int64
			if d := resp.Plan.GetAttribute(ctx, bootSizePath, &got); d.HasError() {
				t.Fatal(d)
			}
			if !got.Equal(c.want) {
				t.Fatalf("size_mib planned %v, want %v (diagnostics %v)", got, c.want, resp.Diagnostics)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestLocalImageBytes: a host file's virtual size, from a qcow2 header or a raw file's length.
func TestLocalImageBytes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	qcow := make([]byte, 512)
	copy(qcow, qcow2Magic)
	binary.BigEndian.PutUint64(qcow[24:32], 5<<30)
	files := map[string][]byte{"a.qcow2": qcow, "a.raw": make([]byte, 3<<20+1), "short": []byte("QFI")}
	for n, b := range files {
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := map[string]uint64{"a.qcow2": 5 << 30, "a.raw": 3<<20 + 1, "short": 3, "missing": 0}
	for n, want := range tests {
		if got := localImageBytes(filepath.Join(dir, n)); got != want {
			t.Errorf("localImageBytes(%s) = %d, want %d", n, got, want)
		}
	}
	if got := localImageBytes(dir); got != 0 {
		t.Errorf("a directory: %d, want 0", got)
	}
}
