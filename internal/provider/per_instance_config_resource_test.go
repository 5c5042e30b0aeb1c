package provider

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

// pic renders a virt_per_instance_config of the test group. disks are "device=source" pairs;
// extra goes at the resource's top level.
func pic(resourceName, instance string, disks []string, meta map[string]string, extra string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nresource \"virt_per_instance_config\" %q {\n  group = virt_stateful_group.test.name\n  name  = %q\n%s\n", resourceName, instance, extra)
	if len(disks) > 0 || meta != nil {
		b.WriteString("  preserved_state {\n")
		for _, d := range disks {
			dev, src, _ := strings.Cut(d, "=")
			fmt.Fprintf(&b, "    disk {\n      device_name = %q\n      source      = %q\n    }\n", dev, src)
		}
		if meta != nil {
			b.WriteString("    metadata = {\n")
			for k, v := range meta {
				fmt.Fprintf(&b, "      %q = %q\n", k, v)
			}
			b.WriteString("    }\n")
		}
		b.WriteString("  }\n")
	}
	b.WriteString("}\n")
	return b.String()
}

// checkVolumeExists fails when the volume is gone from the test pool.
func checkVolumeExists(t *testing.T, name string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		vols, err := testLibvirt(t).ListVolumes(context.Background(), testPool(), name)
		if err != nil {
			return err
		}
		for _, v := range vols {
			if v.Name == name {
				return nil
			}
		}
		return fmt.Errorf("volume %s is gone", name)
	}
}

// TestAccPerInstanceConfig_configOnly is the reference document's second example: per-instance
// configs and no stateful policy. Each config attaches a disk the template does not have and sets
// metadata, live; a config beyond target_size waits. Then: a change is in place, a new name
// replaces, a change over the allowed action fails at plan, and a config is imported.
func TestAccPerInstanceConfig_configOnly(t *testing.T) {
	name := testPrefix + "pic"
	n1, n2, n3, extra := name+"-1", name+"-2", name+"-3", name+"-extra"
	legacy, logs := testPrefix+"ext-pic-legacy.qcow2", testPrefix+"ext-pic-logs.qcow2"
	ids := domainIDs{}
	configs := func(n1Meta map[string]string, n1Extra, waiting string) string {
		return pic("n1", n1, []string{"legacy-disk=" + legacy}, n1Meta, n1Extra) +
			pic("n2", n2, []string{"logs-disk=" + logs}, map[string]string{"node-id": "pqr851"}, "") +
			pic("waiting", waiting, nil, map[string]string{"node-id": "later"}, "")
	}
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: resource.ComposeTestCheckFunc(
			checkNothingLeft(t, name),
			// The configs' disks are the user's and are never deleted by a destroy.
			checkVolumeExists(t, legacy), checkVolumeExists(t, logs),
		),
		Steps: []resource.TestStep{
			{
				PreConfig: func() { extVolume(t, legacy); extVolume(t, logs) },
				Config:    stack(name, 2, "", "", ""),
				Check:     ids.record(t, name),
			},
			{
				Config: stack(name, 2, "", "", configs(map[string]string{"node-id": "xyz273"}, "", n3)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("virt_per_instance_config.n1", plancheck.ResourceActionCreate),
					plancheck.ExpectResourceAction("virt_per_instance_config.waiting", plancheck.ResourceActionCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("virt_per_instance_config.n1", tfjsonpath.New("status"), knownvalue.StringExact("EFFECTIVE")),
					statecheck.ExpectKnownValue("virt_per_instance_config.n1", tfjsonpath.New("id"), knownvalue.StringExact(name+"/"+n1)),
					statecheck.ExpectKnownValue("virt_per_instance_config.waiting", tfjsonpath.New("status"), knownvalue.StringExact("WAITING")),
					statecheck.ExpectKnownValue(groupAddr, tfjsonpath.New("target_size"), knownvalue.Int64Exact(2)),
				},
				Check: resource.ComposeTestCheckFunc(
					ids.same(t, name),
					checkManaged(map[string]string{
						n1: "policy=[] config=[legacy-disk=" + legacy + "] meta={node-id=xyz273}",
						n2: "policy=[] config=[logs-disk=" + logs + "] meta={node-id=pqr851}",
					}),
					checkDomains(t, name, map[string]string{
						n1: "disks=[legacy-disk=" + legacy + "] meta={node-id=xyz273}",
						n2: "disks=[logs-disk=" + logs + "] meta={node-id=pqr851}",
					}),
				),
			},
			{
				Config: stack(name, 2, "", "", configs(map[string]string{"node-id": "xyz274"}, "", n3)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("virt_per_instance_config.n1", plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction("virt_per_instance_config.n2", plancheck.ResourceActionNoop),
				}},
				Check: resource.ComposeTestCheckFunc(
					ids.same(t, name),
					checkDomains(t, name, map[string]string{
						n1: "disks=[legacy-disk=" + legacy + "] meta={node-id=xyz274}",
						n2: "disks=[logs-disk=" + logs + "] meta={node-id=pqr851}",
					}),
				),
			},
			// A new name is a new config.
			{
				Config: stack(name, 2, "", "", configs(map[string]string{"node-id": "xyz274"}, "", name+"-4")),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("virt_per_instance_config.waiting", plancheck.ResourceActionDestroyBeforeCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("virt_per_instance_config.waiting", tfjsonpath.New("id"), knownvalue.StringExact(name+"/"+name+"-4")),
				},
				Check: checkMembers(t, name, "RUNNING", n1, n2),
			},
			// A name outside the scheme makes one extra member, and target_size stays; with
			// remove_instance_on_destroy, destroying the config deletes that member for good.
			{
				Config: stack(name, 2, "", "", configs(map[string]string{"node-id": "xyz274"}, "", name+"-4")+
					pic("extra", extra, nil, map[string]string{"role": "extra"}, "  remove_instance_on_destroy = true")),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("virt_per_instance_config.extra", tfjsonpath.New("status"), knownvalue.StringExact("EFFECTIVE")),
					statecheck.ExpectKnownValue(groupAddr, tfjsonpath.New("target_size"), knownvalue.Int64Exact(2)),
				},
				Check: resource.ComposeTestCheckFunc(
					checkMembers(t, name, "RUNNING", n1, n2, extra),
					checkDomains(t, name, map[string]string{
						n1:    "disks=[legacy-disk=" + legacy + "] meta={node-id=xyz274}",
						n2:    "disks=[logs-disk=" + logs + "] meta={node-id=pqr851}",
						extra: "disks=[] meta={role=extra}",
					}),
					resource.TestCheckResourceAttr(managedAddr, "instances.2.name", extra),
					resource.TestCheckResourceAttr(managedAddr, "instances.2.index", "0"),
				),
			},
			{
				Config: stack(name, 2, "", "", configs(map[string]string{"node-id": "xyz274"}, "", name+"-4")),
				Check:  resource.ComposeTestCheckFunc(checkMembers(t, name, "RUNNING", n1, n2), checkVolumes(t, extra+"-")),
			},
			// Metadata needs a REFRESH; allowing no action at all refuses it at plan time.
			{
				Config:      stack(name, 2, "", "", configs(map[string]string{"node-id": "xyz275"}, `  most_disruptive_allowed_action = "NONE"`, name+"-4")),
				ExpectError: regexp.MustCompile(`(?s)most disruptive allowed action.*` + n1 + `.*REFRESH`),
			},
			{
				ResourceName:      "virt_per_instance_config.n1",
				ImportState:       true,
				ImportStateId:     name + "/" + n1,
				ImportStateVerify: true,
			},
			{
				ResourceName:  "virt_per_instance_config.n1",
				ImportState:   true,
				ImportStateId: n1,
				ExpectError:   regexp.MustCompile(`(?s)Invalid import ID.*GROUP/NAME`),
			},
		},
	})
}

// TestAccPerInstanceConfig_overridesPolicyAndTemplate is the reference document's third example,
// then its removal examples that involve the policy: a config's disk and metadata win over the
// policy's disk and the template's metadata; removing the disk from the policy keeps it preserved
// by the config; removing it from the config falls back to the policy.
func TestAccPerInstanceConfig_overridesPolicyAndTemplate(t *testing.T) {
	name := testPrefix + "ovr"
	n1, n2 := name+"-1", name+"-2"
	vol := func(instance, dev string) string { return instance + "-" + dev + ".qcow2" }
	feb := testPrefix + "ext-ovr-logs-feb.qcow2"
	body := twoDataDisks + "\n    metadata = { logmonth = \"jan\" }"
	ids := domainIDs{}
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: resource.ComposeTestCheckFunc(
			checkKeptAfterDestroy(t, name, nil, vol(n1, "data"), vol(n1, "logs"), vol(n2, "data"), vol(n2, "logs")),
			checkVolumeExists(t, feb)),
		Steps: []resource.TestStep{
			{
				PreConfig: func() { extVolume(t, feb) },
				Config:    stack(name, 2, body, "", ""),
				Check:     ids.record(t, name),
			},
			{
				Config: stack(name, 2, body, "", policyConfig("data", "logs")+
					pic("n1", n1, []string{"logs=" + feb}, map[string]string{"logmonth": "feb"}, "")),
				Check: resource.ComposeTestCheckFunc(
					ids.same(t, name),
					checkManaged(map[string]string{
						n1: fmt.Sprintf("policy=[data=%s] config=[logs=%s] meta={logmonth=feb}", vol(n1, "data"), feb),
						n2: fmt.Sprintf("policy=[data=%s logs=%s] config=[] meta={}", vol(n2, "data"), vol(n2, "logs")),
					}),
					checkDomains(t, name, map[string]string{
						n1: fmt.Sprintf("disks=[data=%s logs=%s] meta={logmonth=feb}", vol(n1, "data"), feb),
						n2: fmt.Sprintf("disks=[data=%s logs=%s] meta={logmonth=jan}", vol(n2, "data"), vol(n2, "logs")),
					}),
				),
			},
			// Removal from the policy only: the config still preserves n1's logs disk.
			{
				Config: stack(name, 2, body, "", policyConfig("data")+
					pic("n1", n1, []string{"logs=" + feb}, map[string]string{"logmonth": "feb"}, "")),
				Check: resource.ComposeTestCheckFunc(
					ids.same(t, name),
					checkManaged(map[string]string{
						n1: fmt.Sprintf("policy=[data=%s] config=[logs=%s] meta={logmonth=feb}", vol(n1, "data"), feb),
						n2: fmt.Sprintf("policy=[data=%s] config=[] meta={}", vol(n2, "data")),
					}),
					checkDomains(t, name, map[string]string{
						n1: fmt.Sprintf("disks=[data=%s logs=%s] meta={logmonth=feb}", vol(n1, "data"), feb),
						n2: fmt.Sprintf("disks=[data=%s logs=%s] meta={logmonth=jan}", vol(n2, "data"), vol(n2, "logs")),
					}),
				),
			},
			// Removal from the config with the policy defining the disk: it falls back to the
			// policy, which preserves the template's logs disk again.
			{
				Config: stack(name, 2, body, "", policyConfig("data", "logs")+
					pic("n1", n1, nil, map[string]string{"logmonth": "feb"}, "")),
				Check: resource.ComposeTestCheckFunc(
					ids.same(t, name),
					checkManaged(map[string]string{
						n1: fmt.Sprintf("policy=[data=%s logs=%s] config=[] meta={logmonth=feb}", vol(n1, "data"), vol(n1, "logs")),
						n2: fmt.Sprintf("policy=[data=%s logs=%s] config=[] meta={}", vol(n2, "data"), vol(n2, "logs")),
					}),
					checkDomains(t, name, map[string]string{
						n1: fmt.Sprintf("disks=[data=%s logs=%s] meta={logmonth=feb}", vol(n1, "data"), vol(n1, "logs")),
						n2: fmt.Sprintf("disks=[data=%s logs=%s] meta={logmonth=jan}", vol(n2, "data"), vol(n2, "logs")),
					}),
					checkVolumeExists(t, feb),
				),
			},
		},
	})
}

// TestAccPerInstanceConfig_removal is the reference document's removal examples without a
// policy: of the config's disks, the one the template defines stays attached and becomes stateless,
// the other is detached; of its metadata, the key the template defines falls back to the
// template's value and the other is removed. All of it live. Then a config destroyed with
// remove_instance_state_on_destroy takes its state away at once.
func TestAccPerInstanceConfig_removal(t *testing.T) {
	name := testPrefix + "rm"
	n1 := name + "-1"
	blue := n1 + "-blue.qcow2"
	green := testPrefix + "ext-rm-green.qcow2"
	body := diskBlocks(8, "blue") + `
    metadata = { mode = "test" }`
	full := func(extra string) string {
		return pic("n1", n1, []string{"blue=" + blue, "green=" + green}, map[string]string{"mode": "dev", "id": "xyz273"}, extra)
	}
	stateful := map[string]string{n1: "disks=[blue=" + blue + " green=" + green + "] meta={id=xyz273 mode=dev}"}
	stateless := map[string]string{n1: "disks=[blue=" + blue + "] meta={mode=test}"}
	ids := domainIDs{}
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             resource.ComposeTestCheckFunc(checkNothingLeft(t, name), checkVolumeExists(t, green)),
		Steps: []resource.TestStep{
			{
				PreConfig: func() { extVolume(t, green) },
				Config:    stack(name, 1, body, "", full("")),
				Check: resource.ComposeTestCheckFunc(
					ids.record(t, name),
					checkManaged(map[string]string{n1: "policy=[] config=[blue=" + blue + " green=" + green + "] meta={id=xyz273 mode=dev}"}),
					checkDomains(t, name, stateful),
				),
			},
			{
				Config: stack(name, 1, body, "", pic("n1", n1, nil, nil, "")),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("virt_per_instance_config.n1", plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeTestCheckFunc(
					ids.same(t, name),
					checkManaged(map[string]string{n1: "policy=[] config=[] meta={}"}),
					checkDomains(t, name, stateless),
					checkVolumeExists(t, green),
				),
			},
			{
				Config: stack(name, 1, body, "", full("  remove_instance_state_on_destroy = true")),
				Check:  resource.ComposeTestCheckFunc(ids.same(t, name), checkDomains(t, name, stateful)),
			},
			{
				Config: stack(name, 1, body, "", ""),
				Check:  resource.ComposeTestCheckFunc(ids.same(t, name), checkDomains(t, name, stateless)),
			},
			// With nothing left to depend on, the data source is read while planning: this step
			// reads it after the destroy above.
			{
				Config: stack(name, 1, body, "", ""),
				Check:  checkManaged(map[string]string{n1: "policy=[] config=[] meta={}"}),
			},
		},
	})
}

// legacyDomain is a VM made the way a user of plain libvirt makes one, with go-libvirt calls and
// no provider involved: a raw volume with known bytes on virtio-scsi, metadata of another tool,
// running.
type legacyDomain struct {
	name, volume, path, uuid string
	sum                      string
}

func createLegacyDomain(t *testing.T, name, volume string) *legacyDomain {
	t.Helper()
	l, path := handMadeVolume(t, name, volume, 0x6b)
	dom, err := l.DomainDefineXML(fmt.Sprintf(`<domain type="qemu">
  <name>%s</name>
  <memory unit="MiB">64</memory>
  <vcpu>1</vcpu>
  <metadata><app:owner xmlns:app="https://example.com/app">ops</app:owner></metadata>
  <os><type arch="x86_64">hvm</type></os>
  <devices>
    <controller type="scsi" model="virtio-scsi"/>
    <disk type="file" device="disk">
      <driver name="qemu" type="raw"/>
      <source file="%s"/>
      <target dev="sda" bus="scsi"/>
    </disk>
  </devices>
</domain>`, name, path))
	if err != nil {
		t.Fatalf("define domain %s: %v", name, err)
	}
	if err := l.DomainCreate(dom); err != nil {
		t.Fatalf("start domain %s: %v", name, err)
	}
	sum, _, err := volumeBytes(t, volume)
	if err != nil {
		t.Fatal(err)
	}
	return &legacyDomain{name: name, volume: volume, path: path, uuid: uuidString(dom.UUID), sum: sum}
}

// handMadeVolume makes, as a user would with virsh and qemu-io (no provider involved), an 8 MiB
// raw volume in the test pool whose first MiB is the byte pattern, for the hand-made domain name;
// the cleanup undefines that domain and deletes the volume (normally whatever the test does has
// left neither to clean; after a failure it may have). It returns a connection, closed at the
// test's end, and the volume's path.
func handMadeVolume(t *testing.T, name, volume string, pattern byte) (*golibvirt.Libvirt, string) {
	t.Helper()
	u, _ := url.Parse(connectionURI(providerdata.NullString()))
	l, err := golibvirt.ConnectToURI(u)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = l.Disconnect() })
	pool, err := l.StoragePoolLookupByName(testPool())
	if err != nil {
		t.Fatalf("look up pool: %v", err)
	}
	vol, err := l.StorageVolCreateXML(pool, fmt.Sprintf(`<volume><name>%s</name><capacity unit="MiB">8</capacity><target><format type="raw"/></target></volume>`, volume), 0)
	if err != nil {
		t.Fatalf("create volume %s: %v", volume, err)
	}
	t.Cleanup(func() {
		_ = testLibvirt(t).UndefineDomain(context.Background(), name)
		_ = testLibvirt(t).DeleteVolume(context.Background(), testPool(), volume)
	})
	path, err := l.StorageVolGetPath(vol)
	if err != nil {
		t.Fatalf("volume path: %v", err)
	}
	if out, err := exec.Command("qemu-io", "-f", "raw", "-c", fmt.Sprintf("write -P 0x%02x 0 1M", pattern), path).CombinedOutput(); err != nil {
		t.Fatalf("qemu-io: %v: %s", err, out)
	}
	return l, path
}

func uuidString(u golibvirt.UUID) string {
	h := hex.EncodeToString(u[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// check compares the domain with what it was when created: same UUID, same disk bytes, and
// whether it carries the provider's record.
func (d *legacyDomain) check(t *testing.T, member bool) resource.TestCheckFunc {
	return func(*terraform.State) error {
		doms, err := testLibvirt(t).ListDomains(context.Background(), d.name)
		if err != nil {
			return err
		}
		if len(doms) != 1 {
			return fmt.Errorf("%d domains named %s", len(doms), d.name)
		}
		got := doms[0]
		switch {
		case got.UUID != d.uuid:
			return fmt.Errorf("domain %s has UUID %s, had %s: it was recreated", d.name, got.UUID, d.uuid)
		case got.Status != "RUNNING":
			return fmt.Errorf("domain %s is %s", d.name, got.Status)
		case member && got.Record == nil:
			return fmt.Errorf("domain %s carries no provider record: it was not adopted", d.name)
		case !member && got.Record != nil:
			return fmt.Errorf("domain %s carries a provider record: the import changed it", d.name)
		}
		sum, _, err := volumeBytes(t, d.volume)
		if err != nil {
			return err
		}
		if sum != d.sum {
			return fmt.Errorf("volume %s has checksum %s, had %s", d.volume, sum, d.sum)
		}
		return nil
	}
}

// TestAccPerInstanceConfig_adopt imports a domain no provider created: an import block with
// generated configuration plans no change, `terraform import` reads its disk into
// preserved_state without touching it, and the next apply adopts it as a named member without
// recreating or restarting it or touching its disk. Its name is outside the group's scheme, as
// a domain made by hand has: once its config is destroyed, the group still finds it among the
// host's domains (its listing reads only those that can be members), and its destroy deletes it.
func TestAccPerInstanceConfig_adopt(t *testing.T) {
	name := testPrefix + "adopt"
	legacyName := testPrefix + "adoptee-legacy"
	volume := testPrefix + "ext-adopt-legacy.img"
	addr := "virt_per_instance_config.adopt"
	if os.Getenv(resource.EnvTfAcc) == "" {
		// resource.ParallelTest skips the same way; the domain must exist before the steps are built.
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	legacy := createLegacyDomain(t, legacyName, volume)
	var legacyID int32
	group := stack(name, 1, "", "", "")
	// The config is written with the disk's path, not the volume name the import reads: a config
	// that names the path keeps it, and the adoption swaps nothing (reconcile.Spelled).
	withConfig := stack(name, 1, "", "", pic("adopt", legacyName, []string{"sda=" + legacy.path}, nil, ""))
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(s *terraform.State) error {
			if err := checkNothingLeft(t, name)(s); err != nil {
				return err
			}
			// The adopted member went with its group; the disk it came with is the user's.
			if doms, err := testLibvirt(t).ListDomains(context.Background(), legacyName); err != nil || len(doms) > 0 {
				return fmt.Errorf("the adopted member %s was left behind (%v)", legacyName, err)
			}
			sum, _, err := volumeBytes(t, volume)
			if err != nil {
				return err
			}
			if sum != legacy.sum {
				return fmt.Errorf("volume %s changed after destroy", volume)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config: group,
				Check:  checkMembers(t, name, "RUNNING", name+"-1"),
			},
			{
				ResourceName:    addr,
				ImportState:     true,
				ImportStateKind: resource.ImportBlockWithID,
				ImportStateIdFunc: func(*terraform.State) (string, error) {
					return name + "/" + legacyName, nil
				},
				GenerateConfig: true,
				Config:         group,
			},
			{
				ResourceName: addr,
				ImportState:  true,
				ImportStateIdFunc: func(*terraform.State) (string, error) {
					return name + "/" + legacyName, nil
				},
				ImportStatePersist: true,
				Config:             withConfig,
				ImportStateCheck: func(states []*terraform.InstanceState) error {
					var a map[string]string
					for _, st := range states {
						if st.ID == name+"/"+legacyName {
							a = st.Attributes
						}
					}
					if a == nil {
						return fmt.Errorf("no imported state with id %s/%s among %d", name, legacyName, len(states))
					}
					want := map[string]string{
						"status": "UNAPPLIED", "preserved_state.disk.#": "1", "minimal_action": "NONE", "most_disruptive_allowed_action": "REFRESH",
					}
					for k, v := range want {
						if a[k] != v {
							return fmt.Errorf("imported %s = %q, want %q (all: %v)", k, a[k], v, a)
						}
					}
					for k, v := range a {
						// A file of the group's pool is read as its volume, by name.
						if strings.HasPrefix(k, "preserved_state.disk.") && strings.HasSuffix(k, ".source") && v != volume {
							return fmt.Errorf("imported disk source %q, want %q", v, volume)
						}
					}
					return legacy.check(t, false)(nil)
				},
			},
			{
				PreConfig: func() {
					doms, err := testLibvirt(t).ListDomains(context.Background(), legacyName)
					if err != nil || len(doms) != 1 {
						t.Fatalf("list %s: %v", legacyName, err)
					}
					legacyID = doms[0].ID
				},
				Config: withConfig,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("status"), knownvalue.StringExact("EFFECTIVE")),
				},
				Check: resource.ComposeTestCheckFunc(
					legacy.check(t, true),
					func(*terraform.State) error {
						doms, err := testLibvirt(t).ListDomains(context.Background(), legacyName)
						if err != nil || len(doms) != 1 || doms[0].ID != legacyID {
							return fmt.Errorf("domain %s was restarted or is gone (%v)", legacyName, err)
						}
						return nil
					},
					checkManaged(map[string]string{
						name + "-1": "policy=[] config=[] meta={}",
						legacyName:  "policy=[] config=[sda=" + legacy.path + "] meta={}",
					}),
				),
			},
			{
				// The config destroyed, the adopted member stays as it is: its disk, the one it
				// came with, is not detached from the running domain, and nothing restarts it.
				Config: group,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionDestroy),
				}},
				Check: resource.ComposeTestCheckFunc(
					legacy.check(t, true),
					func(*terraform.State) error {
						doms, err := testLibvirt(t).ListDomains(context.Background(), legacyName)
						if err != nil || len(doms) != 1 || doms[0].ID != legacyID {
							return fmt.Errorf("domain %s was restarted or is gone (%v)", legacyName, err)
						}
						if len(doms[0].Disks) != 1 || doms[0].Disks[0].Path != legacy.path {
							return fmt.Errorf("domain %s has disks %+v, want its own %s still attached", legacyName, doms[0].Disks, legacy.path)
						}
						return nil
					},
				),
			},
			{
				// Read again with its config gone, the group still has the member, with the
				// state the config left it (remove_instance_state_on_destroy is false): retained,
				// no longer preserved by a config.
				Config: group,
				Check: checkManaged(map[string]string{
					name + "-1": "policy=[] config=[] meta={}",
					legacyName:  "policy=[] config=[] meta={} retained=[sda=" + legacy.path + "] {}",
				}),
			},
		},
	})
}
