package provider

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

const groupAddr = "virt_stateful_group.test"

// groupConfig renders a group of the test pool with a TCG template; body is added inside the
// template block and extra at the resource's top level. Members power off at once unless extra
// sets shutdown_timeout: a guest with no OS ignores ACPI, and would make every stop wait.
func groupConfig(name string, size int, body, extra string) string {
	if !strings.Contains(body, "vcpu") {
		body = "    vcpu = 1\n" + body
	}
	if !strings.Contains(extra, "shutdown_timeout") {
		extra = "  shutdown_timeout = \"0s\"\n" + extra
	}
	return fmt.Sprintf(`
resource "virt_stateful_group" "test" {
  name        = %q
  pool        = %q
  target_size = %d
%s
  template {
    domain_type = "qemu"
    memory_mib  = 64
%s
  }
}
`, name, testPool(), size, extra, body)
}

// diskBlocks renders template disk blocks of one size, one per device name.
func diskBlocks(sizeMiB int, names ...string) string {
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "\n    disk {\n      device_name = %q\n      size_mib    = %d\n    }", n, sizeMiB)
	}
	return b.String()
}

// members reads the group's member domains straight from libvirt.
func members(t *testing.T, base string) map[string]backend.Domain {
	t.Helper()
	doms, err := testLibvirt(t).ListDomains(context.Background(), base+"-")
	if err != nil {
		t.Fatalf("list domains: %v", err)
	}
	out := map[string]backend.Domain{}
	for _, d := range doms {
		out[d.Name] = d
	}
	return out
}

// checkMembers checks that exactly the named domains exist and have the given status.
func checkMembers(t *testing.T, base string, status engine.Status, names ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		got := members(t, base)
		var gotNames []string
		for n, d := range got {
			gotNames = append(gotNames, n)
			if d.Status != status {
				return fmt.Errorf("domain %s is %s, want %s", n, d.Status, status)
			}
		}
		return sameNames("domains", gotNames, names)
	}
}

// sameNames compares two lists of names as sets.
func sameNames(what string, got, want []string) error {
	got, want = slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		return fmt.Errorf("%s %v, want %v", what, got, want)
	}
	return nil
}

// checkVolumes checks that exactly the named volumes exist in the test pool.
func checkVolumes(t *testing.T, prefix string, names ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		vols, err := testLibvirt(t).ListVolumes(context.Background(), testPool(), prefix)
		if err != nil {
			return err
		}
		var got []string
		for _, v := range vols {
			got = append(got, v.Name)
		}
		return sameNames("volumes", got, names)
	}
}

func instanceNames(names ...string) knownvalue.Check {
	checks := make([]knownvalue.Check, len(names))
	for i, n := range names {
		checks[i] = knownvalue.ObjectPartial(map[string]knownvalue.Check{
			"name":   knownvalue.StringExact(n),
			"status": knownvalue.StringExact("RUNNING"),
		})
	}
	return knownvalue.ListExact(checks)
}

func TestAccStatefulGroup_createAndImport(t *testing.T) {
	name := testPrefix + "create"
	body := `
    disk {
      device_name = "data"
      size_mib    = 8
    }
    metadata = { role = "db" }`
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{
				Config: groupConfig(name, 3, body, ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(groupAddr, tfjsonpath.New("instances"), instanceNames(name+"-1", name+"-2", name+"-3")),
					statecheck.ExpectKnownValue(groupAddr, tfjsonpath.New("base_instance_name"), knownvalue.StringExact(name)),
					statecheck.ExpectKnownValue(groupAddr, tfjsonpath.New("running"), knownvalue.Bool(true)),
				},
				Check: resource.ComposeTestCheckFunc(
					checkMembers(t, name, "RUNNING", name+"-1", name+"-2", name+"-3"),
					checkVolumes(t, name+"-",
						name+"-1-boot.qcow2", name+"-1-data.qcow2",
						name+"-2-boot.qcow2", name+"-2-data.qcow2",
						name+"-3-boot.qcow2", name+"-3-data.qcow2"),
				),
			},
			{
				ResourceName:                         groupAddr,
				ImportState:                          true,
				ImportStateId:                        name,
				ImportStateVerify:                    true,
				ImportStateVerifyIdentifierAttribute: "name",
			},
		},
	})
}

func TestAccStatefulGroup_scale(t *testing.T) {
	name := testPrefix + "scale"
	body := `
    disk {
      device_name = "data"
      size_mib    = 8
    }`
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{
				Config: groupConfig(name, 3, body, ""),
				Check:  checkMembers(t, name, "RUNNING", name+"-1", name+"-2", name+"-3"),
			},
			{
				Config: groupConfig(name, 5, body, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(groupAddr, tfjsonpath.New("instances"),
						instanceNames(name+"-1", name+"-2", name+"-3", name+"-4", name+"-5")),
				},
				Check: checkMembers(t, name, "RUNNING", name+"-1", name+"-2", name+"-3", name+"-4", name+"-5"),
			},
			{
				// Scale-in removes the highest indices first, with their volumes.
				Config: groupConfig(name, 2, body, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(groupAddr, tfjsonpath.New("instances"), instanceNames(name+"-1", name+"-2")),
				},
				Check: resource.ComposeTestCheckFunc(
					checkMembers(t, name, "RUNNING", name+"-1", name+"-2"),
					checkVolumes(t, name+"-", name+"-1-boot.qcow2", name+"-1-data.qcow2", name+"-2-boot.qcow2", name+"-2-data.qcow2"),
				),
			},
			{
				// A member deleted behind Terraform's back is drift: the plan shows it and the
				// apply puts it back under the same name, filling the gap.
				PreConfig: func() {
					if err := testLibvirt(t).UndefineDomain(context.Background(), name+"-1"); err != nil {
						t.Fatalf("delete %s-1 out of band: %v", name, err)
					}
				},
				Config: groupConfig(name, 2, body, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
				}},
				Check: checkMembers(t, name, "RUNNING", name+"-1", name+"-2"),
			},
		},
	})
}

// domainIDs remembers the hypervisor ids of the group's running domains, so that a later step can
// tell a live update (same ids) from a restart (new ids).
type domainIDs map[string]int32

func (ids domainIDs) record(t *testing.T, base string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for n, d := range members(t, base) {
			if d.ID <= 0 {
				return fmt.Errorf("domain %s is not running", n)
			}
			ids[n] = d.ID
		}
		return nil
	}
}

func (ids domainIDs) same(t *testing.T, base string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		got := members(t, base)
		if len(got) != len(ids) {
			return fmt.Errorf("%d domains, want %d", len(got), len(ids))
		}
		for n, id := range ids {
			if got[n].ID != id {
				return fmt.Errorf("domain %s has id %d, had %d: it was restarted", n, got[n].ID, id)
			}
		}
		return nil
	}
}

func (ids domainIDs) changed(t *testing.T, base string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		got := members(t, base)
		for n, id := range ids {
			if got[n].ID == id || got[n].ID <= 0 {
				return fmt.Errorf("domain %s has id %d, had %d: it was not restarted", n, got[n].ID, id)
			}
		}
		return nil
	}
}

// checkRecord checks the provider metadata of every member, as libvirt reports it live.
func checkRecord(t *testing.T, base string, check func(rec *backend.Record) error) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for n, d := range members(t, base) {
			if d.Record == nil {
				return fmt.Errorf("domain %s has no provider metadata", n)
			}
			if err := check(d.Record); err != nil {
				return fmt.Errorf("domain %s: %w", n, err)
			}
		}
		return nil
	}
}

// checkLive checks a member's running vcpu count and memory, as QEMU reports them.
func checkLive(t *testing.T, base string, vcpu uint16, memoryMiB uint64) resource.TestCheckFunc {
	return func(*terraform.State) error {
		l := testLibvirt(t).Raw()
		for n := range members(t, base) {
			dom, err := l.DomainLookupByName(n)
			if err != nil {
				return err
			}
			_, maxMem, _, nrCPU, _, err := l.DomainGetInfo(dom)
			if err != nil {
				return err
			}
			if nrCPU != vcpu || maxMem != memoryMiB*1024 {
				return fmt.Errorf("domain %s runs with %d vcpu and %d KiB, want %d vcpu and %d KiB", n, nrCPU, maxMem, vcpu, memoryMiB*1024)
			}
		}
		return nil
	}
}

func TestAccStatefulGroup_hotUpdate(t *testing.T) {
	name := testPrefix + "hot"
	ids := domainIDs{}
	before := `
    metadata    = { role = "db" }
    labels      = { team = "a" }
    description = "first"`
	after := `
    metadata    = { role = "web", tier = "1" }
    labels      = { team = "b" }
    description = "second"`
	third := strings.Replace(after, `"second"`, `"third"`, 1)
	revisions := map[string]string{} // the members' template_revision in state, by step
	keep := func(step string) resource.TestCheckFunc {
		return func(s *terraform.State) error {
			a := s.RootModule().Resources[groupAddr].Primary.Attributes
			if a["instances.0.template_revision"] == "" || a["instances.0.template_revision"] != a["instances.1.template_revision"] {
				return fmt.Errorf("members on template revisions %q and %q, want one", a["instances.0.template_revision"], a["instances.1.template_revision"])
			}
			revisions[step] = a["instances.0.template_revision"]
			return nil
		}
	}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{
				Config: groupConfig(name, 2, before, ""),
				Check:  ids.record(t, name),
			},
			{
				Config: groupConfig(name, 2, after, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeTestCheckFunc(
					ids.same(t, name),
					checkRecord(t, name, func(rec *backend.Record) error {
						tpl := rec.Instance.Template
						if tpl.Metadata["role"] != "web" || tpl.Metadata["tier"] != "1" || tpl.Labels["team"] != "b" || tpl.Description != "second" {
							return fmt.Errorf("live metadata is %+v", tpl)
						}
						return nil
					}),
					keep("second"),
				),
			},
			{
				// A change of the description alone is written to the domains, in the
				// definition and live, and not to the records: the members are on the new
				// template revision all the same, in state and in the data source, and the plan
				// after it is empty.
				Config: groupConfig(name, 2, third, ""),
				Check: resource.ComposeTestCheckFunc(
					ids.same(t, name),
					checkDescription(t, name, "third"),
					checkRecord(t, name, func(rec *backend.Record) error {
						if d := rec.Instance.Template.Description; d != "second" {
							return fmt.Errorf("the record was written for a description change (its description is %q)", d)
						}
						return nil
					}),
					keep("third"),
					func(*terraform.State) error {
						if revisions["third"] == revisions["second"] {
							return fmt.Errorf("template_revision stayed %s across a description change", revisions["second"])
						}
						return nil
					},
				),
			},
			{
				Config: groupConfig(name, 2, third, "") + fmt.Sprintf(`
data "virt_managed_instances" "now" {
  group = %q
}
`, name),
				Check: resource.ComposeTestCheckFunc(ids.same(t, name), func(s *terraform.State) error {
					a := s.RootModule().Resources["data.virt_managed_instances.now"].Primary.Attributes
					for i := range 2 {
						if got := a[fmt.Sprintf("instances.%d.template_revision", i)]; got != revisions["third"] {
							return fmt.Errorf("the data source shows member %d on revision %q, state on %q", i, got, revisions["third"])
						}
					}
					return nil
				}),
			},
			{
				// The group record keeps the templates the group had: an OPPORTUNISTIC group
				// whose template then changes more leaves the members on the one with the new
				// description (no restart, no description put back), though their records
				// still hold the template from before the description change.
				Config: groupConfig(name, 2, "    vcpu = 2\n"+third, "  update_policy {\n    type = \"OPPORTUNISTIC\"\n  }"),
				Check: resource.ComposeTestCheckFunc(
					ids.same(t, name),
					checkDescription(t, name, "third"),
					checkLive(t, name, 1, 64),
					keep("opportunistic"),
					func(*terraform.State) error {
						if revisions["opportunistic"] != revisions["third"] {
							return fmt.Errorf("members moved from revision %s to %s under OPPORTUNISTIC", revisions["third"], revisions["opportunistic"])
						}
						return nil
					},
				),
			},
		},
	})
}

// checkDescription checks every member's description, in its definition and live.
func checkDescription(t *testing.T, base, want string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for n := range members(t, base) {
			for _, flag := range []string{"--config", "--live"} {
				if out := strings.TrimSpace(virshOut(t, "desc", n, flag)); out != want {
					return fmt.Errorf("%s description (%s) is %q, want %q", n, flag, out, want)
				}
			}
		}
		return nil
	}
}

func TestAccStatefulGroup_restart(t *testing.T) {
	name := testPrefix + "restart"
	ids := domainIDs{}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{
				Config: groupConfig(name, 2, "    vcpu = 1", ""),
				Check:  resource.ComposeTestCheckFunc(ids.record(t, name), checkLive(t, name, 1, 64)),
			},
			{
				Config: groupConfig(name, 2, "    vcpu = 2", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeTestCheckFunc(ids.changed(t, name), checkLive(t, name, 2, 64), ids.record(t, name)),
			},
			{
				Config: strings.Replace(groupConfig(name, 2, "    vcpu = 2", ""), "memory_mib  = 64", "memory_mib  = 96", 1),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeTestCheckFunc(ids.changed(t, name), checkLive(t, name, 2, 96)),
			},
		},
	})
}

// checkUntouched is a PreConfig that fails when a rejected plan left anything on the host.
func checkUntouched(t *testing.T, prefix string) func() {
	return func() {
		if left := leftovers(t, prefix); len(left) > 0 {
			t.Fatalf("a rejected configuration changed libvirt: %s", strings.Join(left, ", "))
		}
	}
}

func TestAccStatefulGroup_badInput(t *testing.T) {
	name := testPrefix + "bad"
	ok := "    vcpu = 1"
	steps := []struct {
		config string
		err    string
	}{
		{groupConfig("Bad_Name", 1, ok, ""), `must be a DNS label`},
		{groupConfig(name, -1, ok, ""), `value must be between 0 and 10000, got: -1`},
		{groupConfig(name, 1, "    vcpu = 0", ""), `value must be at least 1, got: 0`},
		{strings.Replace(groupConfig(name, 1, ok, ""), "memory_mib  = 64", "memory_mib  = 8", 1), `value must be at least 16, got: 8`},
		{strings.Replace(groupConfig(name, 1, ok, ""), `domain_type = "qemu"`, `domain_type = "xen"`, 1), `must be one of: \["kvm" "qemu"\]`},
		{groupConfig(name, 1, ok, `  update_policy {
    minimal_action = "REBOOT"
  }`), `"RESTART" "REPLACE"\], got: "REBOOT"`},
		{groupConfig(name, 1, ok+`
    disk {
      device_name = "data"
      size_mib    = 8
    }
    disk {
      device_name = "data"
      size_mib    = 16
    }`, ""), `device_name "data" appears in more than one block`},
		{groupConfig(name, 1, ok+`
    disk {
      device_name = "boot"
      size_mib    = 8
    }`, ""), `must be none of: \["boot"\]`},
		{groupConfig(name, 1, ok+`
    network_interface {
      type = "network"
    }`, ""), `needs\s+network,\s+the\s+name`},
	}
	var ts []resource.TestStep
	for _, s := range steps {
		ts = append(ts, resource.TestStep{
			PreConfig:   checkUntouched(t, name),
			Config:      s.config,
			ExpectError: regexp.MustCompile(s.err),
		})
	}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps:                    ts,
	})
}

func TestAccStatefulGroup_shrinkRefused(t *testing.T) {
	name := testPrefix + "shrink"
	disk := func(size int) string {
		return fmt.Sprintf(`
    vcpu = 1
    disk {
      device_name = "data"
      size_mib    = %d
    }`, size)
	}
	ids := domainIDs{}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{Config: groupConfig(name, 1, disk(16), ""), Check: ids.record(t, name)},
			{Config: groupConfig(name, 1, disk(8), ""), ExpectError: regexp.MustCompile(`template disk "data": size_mib 8 is smaller than the\s+current 16`)},
			{
				// Growing is live: the domain keeps running with the same id.
				Config: groupConfig(name, 1, disk(32), ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeTestCheckFunc(ids.same(t, name), checkVolumeSize(t, name+"-1-data.qcow2", 32)),
			},
		},
	})
}

func checkVolumeSize(t *testing.T, volume string, mib uint64) resource.TestCheckFunc {
	return func(*terraform.State) error {
		vols, err := testLibvirt(t).ListVolumes(context.Background(), testPool(), volume)
		if err != nil {
			return err
		}
		if len(vols) != 1 || vols[0].CapacityBytes != mib<<20 {
			return fmt.Errorf("volume %s: %+v, want %d MiB", volume, vols, mib)
		}
		return nil
	}
}

// faultyBackend is the real libvirt backend with faults to inject once armed: attaching a disk
// to domain does attach it and then reports a failure, as when the provider dies after libvirt
// acted and before the provider recorded it; creating the volume named volume fails before
// libvirt is asked, as a bad image or a full pool would make it fail.
type faultyBackend struct {
	backend.Backend
	mu     sync.Mutex
	armed  bool
	domain string
	volume string
	hits   int
	// defining fails the defineAt-th definition of that domain after arming, before libvirt is
	// asked.
	defining string
	defineAt int
	defines  int
	// undefining fails every removal of that domain's definition while armed, and recording
	// every write of that domain's record, before libvirt is asked.
	undefining string
	recording  string
}

func (f *faultyBackend) SetRecord(ctx context.Context, name string, rec backend.Record) error {
	if f.trip(f.recording, name) {
		return fmt.Errorf("injected fault writing the record of %s", name)
	}
	return f.Backend.SetRecord(ctx, name, rec)
}

func (f *faultyBackend) UndefineDomain(ctx context.Context, name string) error {
	if f.trip(f.undefining, name) {
		return fmt.Errorf("injected fault undefining %s", name)
	}
	return f.Backend.UndefineDomain(ctx, name)
}

// trip reports whether a fault aimed at target fires for name (armed, and name is target), and
// counts it.
func (f *faultyBackend) trip(target, name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.armed && target != "" && name == target {
		f.hits++
		return true
	}
	return false
}

func (f *faultyBackend) DefineDomain(ctx context.Context, spec backend.DomainSpec) error {
	f.mu.Lock()
	fail := false
	if f.armed && spec.Name == f.defining {
		f.defines++
		fail = f.defines == f.defineAt
		if fail {
			f.hits++
		}
	}
	f.mu.Unlock()
	if fail {
		return fmt.Errorf("injected fault defining %s", spec.Name)
	}
	return f.Backend.DefineDomain(ctx, spec)
}

// factories serve a provider on this backend.
func (f *faultyBackend) factories() map[string]func() (tfprotov6.ProviderServer, error) {
	return map[string]func() (tfprotov6.ProviderServer, error){
		"virt": func() (tfprotov6.ProviderServer, error) {
			return NewProtocol6(NewTestProvider(f))()
		},
	}
}

// preCheck checks libvirt and puts the real backend under the faults.
func (f *faultyBackend) preCheck(t *testing.T) {
	testAccPreCheck(t)
	f.Backend = testLibvirt(t)
}

func (f *faultyBackend) EnsureVolume(ctx context.Context, spec backend.VolumeSpec) (bool, error) {
	if f.trip(f.volume, spec.Name) {
		return false, fmt.Errorf("injected fault creating volume %s", spec.Name)
	}
	return f.Backend.EnsureVolume(ctx, spec)
}

func (f *faultyBackend) arm(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.armed = on
}

func (f *faultyBackend) AttachDisk(ctx context.Context, name string, disk backend.Disk) error {
	err := f.Backend.AttachDisk(ctx, name, disk)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil && f.armed && name == f.domain {
		f.hits++
		return fmt.Errorf("injected fault after attaching %s to %s", disk.DeviceName, name)
	}
	return err
}

// TestAccStatefulGroup_interruptedUpdateReverted is the race of the hot-update reference
// document: a live change to three instances fails on the second after libvirt already attached
// its disk; the configuration is reverted; the next apply must put every instance back, the
// interrupted one included, although its last-applied spec says it never had the change.
func TestAccStatefulGroup_interruptedUpdateReverted(t *testing.T) {
	name := testPrefix + "fault"
	n1, n2, n3 := name+"-1", name+"-2", name+"-3"
	fb := &faultyBackend{domain: n2}
	before := `
    metadata = { rev = "1" }`
	after := `
    metadata = { rev = "2" }` + diskBlocks(8, "extra")
	reverted := map[string]string{n1: "disks=[] meta={rev=1}", n2: "disks=[] meta={rev=1}", n3: "disks=[] meta={rev=1}"}
	ids := domainIDs{}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { fb.preCheck(t) },
		ProtoV6ProviderFactories: fb.factories(),
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{
				Config: groupConfig(name, 3, before, ""),
				Check:  resource.ComposeTestCheckFunc(ids.record(t, name), checkDomains(t, name, reverted)),
			},
			{
				PreConfig:   func() { fb.arm(true) },
				Config:      groupConfig(name, 3, after, ""),
				ExpectError: regexp.MustCompile(`injected fault after attaching extra to\s+` + n2),
			},
			{
				// The interrupted instance has the disk while its record still says it has not,
				// with the change marked in flight: what a naive "desired equals last-applied"
				// check would miss after the revert.
				PreConfig: func() {
					fb.arm(false)
					if fb.hits != 1 {
						t.Fatalf("the fault fired %d times, want 1", fb.hits)
					}
					d := members(t, name)[n2]
					if got := domainView(d, testPool()); !strings.Contains(got, "extra=") {
						t.Fatalf("%s after the fault: %s, want the extra disk attached", n2, got)
					}
					if d.Record == nil || d.Record.Instance.InFlight == nil {
						t.Fatalf("%s after the fault has no in-flight marker", n2)
					}
					if _, ok := d.Record.Instance.Current.DiskByName("extra"); ok {
						t.Fatalf("%s after the fault records the extra disk as applied", n2)
					}
				},
				Config: groupConfig(name, 3, before, ""),
				Check: resource.ComposeTestCheckFunc(
					ids.same(t, name),
					checkDomains(t, name, reverted),
					checkRecord(t, name, func(rec *backend.Record) error {
						if rec.Instance.InFlight != nil {
							return fmt.Errorf("still in flight: %s", rec.Instance.InFlightAction)
						}
						return nil
					}),
					checkVolumes(t, name+"-", n1+"-boot.qcow2", n2+"-boot.qcow2", n3+"-boot.qcow2"),
				),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(groupAddr, tfjsonpath.New("instances").AtSliceIndex(1).AtMapKey("current_action"), knownvalue.StringExact("NONE")),
				},
			},
		},
	})
}
