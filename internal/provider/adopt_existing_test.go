package provider

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	grouppkg "github.com/virtfleet/terraform-provider-virt/internal/provider/group"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"

	tfresource "github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// TestAccStatefulGroup_adoptExisting: two VMs made by hand under the names a new group's members
// would get. Without adopt_existing the plan fails with one error naming both domains and the
// two ways in (no import of a group that does not exist); with it, the group takes them as
// members 1 and 2, keeping their UUIDs, running state and disk bytes, and the next plan is
// empty. The group's destroy deletes the adopted domains and keeps their disks, bytes intact.
func TestAccStatefulGroup_adoptExisting(t *testing.T) {
	name := testPrefix + "adx"
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	// The volumes are named outside the group's "<base>-" volumes: they are the user's.
	first := createLegacyDomain(t, name+"-1", testPrefix+"ext-adx-1.img")
	second := createLegacyDomain(t, name+"-2", testPrefix+"ext-adx-2.img")
	adopting := groupConfig(name, 2, "", "  adopt_existing = true\n")
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(s *terraform.State) error {
			for _, d := range []*legacyDomain{first, second} {
				if doms, err := testLibvirt(t).ListDomains(context.Background(), d.name); err != nil || len(doms) > 0 {
					return fmt.Errorf("the adopted member %s was left behind (%v)", d.name, err)
				}
				sum, _, err := volumeBytes(t, d.volume)
				if err != nil {
					return fmt.Errorf("the adopted member's disk %s: %w", d.volume, err)
				}
				if sum != d.sum {
					return fmt.Errorf("volume %s has checksum %s after the destroy, had %s", d.volume, sum, d.sum)
				}
			}
			return checkNothingLeft(t, name)(s)
		},
		Steps: []resource.TestStep{
			{
				Config:      groupConfig(name, 2, "", ""),
				ExpectError: regexp.MustCompile(`(?s)Member names taken by existing domains.*tfacc-adx-1,\s+tfacc-adx-2.*adopt_existing\s+=\s+true.*another\s+base_instance_name`),
			},
			{
				// The plan of the new group says which domains it adopts, read from the host.
				PreConfig: func() {
					checkCreateWarns(t, name, 2, "tfacc-adx-1: ADOPT: adopted existing domain (adopt_existing)\ntfacc-adx-2: ADOPT:")
				},
				Config: adopting,
				Check: resource.ComposeTestCheckFunc(
					first.check(t, true), second.check(t, true),
					checkRecordedMembers(t, name, name+"-1", name+"-2"),
					checkDestroyWarning(t, name,
						`Members deleted (shutdown_timeout "0s": domain powered off at once and undefined): tfacc-adx-1 (adopted), tfacc-adx-2 (adopted).`,
						"tfacc-ext-adx-1.img (of tfacc-adx-1 (adopted))", "tfacc-ext-adx-2.img (of tfacc-adx-2 (adopted))"),
				),
			},
			{Config: adopting, PlanOnly: true},
		},
	})
}

// TestAccStatefulGroup_abandon: a member abandoned with the group lowered to one leaves the
// group with its domain (same UUID, its power state) and volumes (same bytes) as they were and
// no provider record; the next plan is empty; the group's destroy leaves it all as it is.
func TestAccStatefulGroup_abandon(t *testing.T) {
	name := testPrefix + "aband"
	gone := name + "-2"
	boot := engine.VolumeName(gone, engine.BootDeviceName)
	data := engine.VolumeName(gone, "data")
	sums := checksums{}
	var uuid string
	t.Cleanup(func() {
		// The abandoned domain is the test's to clean up: no group deletes it.
		ctx := context.Background()
		_ = testLibvirt(t).UndefineDomain(ctx, gone)
		for _, v := range []string{boot, data, engine.SeedVolumeName(gone)} {
			_ = testLibvirt(t).DeleteVolume(ctx, testPool(), v)
		}
	})
	body := diskBlocks(8, "data")
	stopped := "  running = false\n"
	abandoning := groupConfig(name, 1, body, stopped+fmt.Sprintf("  abandon = [%q]\n", gone))
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(s *terraform.State) error {
			if err := checkAbandoned(t, gone, &uuid)(s); err != nil {
				return err
			}
			for _, v := range []string{boot, data} {
				if err := sums.same(t, v)(s); err != nil {
					return fmt.Errorf("after the group's destroy: %w", err)
				}
			}
			left := leftovers(t, name+"-")
			want := []string{"domain " + gone, "volume " + boot, "volume " + data}
			slices.Sort(left)
			slices.Sort(want)
			if !slices.Equal(left, want) {
				return fmt.Errorf("after the destroy there are %s, want only the abandoned member's %s", strings.Join(left, ", "), strings.Join(want, ", "))
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config: groupConfig(name, 2, body, stopped),
				Check: func(*terraform.State) error {
					uuid = members(t, name)[gone].UUID
					sums.write(t, boot, 0x5a)
					sums.write(t, data, 0x3c)
					return nil
				},
			},
			{
				Config: abandoning,
				Check: resource.ComposeTestCheckFunc(
					checkAbandoned(t, gone, &uuid),
					sums.same(t, boot), sums.same(t, data),
					checkRecordedMembers(t, name, name+"-1"),
					checkDestroyWarning(t, name, "Members deleted (domain already stopped: undefined): tfacc-aband-1.",
						"Abandoned, left as they are: tfacc-aband-2."),
				),
			},
			{Config: abandoning, PlanOnly: true},
		},
	})
}

// checkAbandoned checks that the domain is there as the group left it: the same UUID (*uuid, read
// when the check runs), stopped,
// and without the provider's record.
func checkAbandoned(t *testing.T, name string, uuid *string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		doms, err := testLibvirt(t).ListDomains(context.Background(), name)
		if err != nil {
			return err
		}
		if len(doms) != 1 {
			return fmt.Errorf("%d domains named %s, want the abandoned one", len(doms), name)
		}
		switch d := doms[0]; {
		case d.UUID != *uuid:
			return fmt.Errorf("abandoned %s has UUID %s, had %s", name, d.UUID, *uuid)
		case d.Record != nil:
			return fmt.Errorf("abandoned %s still carries the provider's record (group %s)", name, d.Record.Group)
		case d.Status != engine.StatusStopped:
			return fmt.Errorf("abandoned %s is %s, was STOPPED", name, d.Status)
		}
		return nil
	}
}

// checkRecordedMembers checks which domains under the group's names carry its member record.
func checkRecordedMembers(t *testing.T, group string, names ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		var got []string
		for n, d := range members(t, group) {
			if d.Record != nil && d.Record.Group == group {
				got = append(got, n)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, names) {
			return fmt.Errorf("members of %s by their records: %v, want %v", group, got, names)
		}
		return nil
	}
}

// checkDestroyWarning checks the warning a destroy plan of the group shows, made from the real
// host as the group's ModifyPlan makes it: it says each of wants.
func checkDestroyWarning(t *testing.T, group string, wants ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		detail, err := destroyWarning(t, group)
		if err != nil {
			return err
		}
		for _, want := range wants {
			if !strings.Contains(detail, want) {
				return fmt.Errorf("the destroy warning %q does not say %q", detail, want)
			}
		}
		return nil
	}
}

// checkDestroyWarningLacks checks that the group's destroy warning (see checkDestroyWarning)
// says none of unwanted.
func checkDestroyWarningLacks(t *testing.T, group string, unwanted ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		detail, err := destroyWarning(t, group)
		if err != nil {
			return err
		}
		for _, u := range unwanted {
			if strings.Contains(detail, u) {
				return fmt.Errorf("the destroy warning %q says %q", detail, u)
			}
		}
		return nil
	}
}

// destroyWarning is the detail of the one warning a destroy plan of the group shows, made from
// the real host as the group's ModifyPlan makes it.
func destroyWarning(t *testing.T, group string) (string, error) {
	r := &grouppkg.StatefulGroupResource{Data: &providerdata.ProviderData{Reconciler: reconcile.New(testLibvirt(t))}}
	m := planGroupModel("")
	m.Name, m.ID, m.BaseInstanceName = types.StringValue(group), types.StringValue(group), types.StringValue(group)
	var diags diag.Diagnostics
	r.WarnDestroy(context.Background(), tfresource.ModifyPlanRequest{State: groupStateOf(t, &m)}, &diags)
	if len(diags) != 1 || diags[0].Severity() != diag.SeverityWarning {
		return "", fmt.Errorf("destroy plan diagnostics: %v, want one warning", diags)
	}
	t.Logf("destroy plan warning: %s: %s", diags[0].Summary(), diags[0].Detail())
	return diags[0].Detail(), nil
}

// checkCreateWarns checks the warning the plan of a new group with adopt_existing shows, made
// from the real host as the group's ModifyPlan makes it: it says want.
func checkCreateWarns(t *testing.T, group string, size int64, want string) {
	t.Helper()
	r := &grouppkg.StatefulGroupResource{Data: &providerdata.ProviderData{Reconciler: reconcile.New(testLibvirt(t))}}
	m := planGroupModel("")
	m.Name, m.BaseInstanceName, m.Pool = types.StringValue(group), types.StringValue(group), types.StringValue(testPool())
	m.TargetSize, m.AdoptExisting = types.Int64Value(size), types.BoolValue(true)
	var diags diag.Diagnostics
	r.CheckCreate(context.Background(), m, &diags)
	if len(diags) != 1 || diags[0].Severity() != diag.SeverityWarning || !strings.Contains(diags[0].Detail(), want) {
		t.Fatalf("create plan diagnostics: %v, want one warning saying %q", diags, want)
	}
	t.Logf("create plan warning: %s: %s", diags[0].Summary(), diags[0].Detail())
}
