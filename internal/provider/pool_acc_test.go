package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

// Acceptance tests of virt_pool. Their directories are /var/lib/tfacc-*: the system daemon may
// run with a private /tmp, and a pool's directory must be where libvirtd sees it.

func poolConfig(name, dir string) string {
	return fmt.Sprintf(`
resource "virt_pool" "test" {
  name = %q
  path = %q
}
`, name, dir)
}

// hostPool is the pool of that name as libvirt lists it, nil when there is none.
func hostPool(t *testing.T, name string) *backend.Pool {
	t.Helper()
	pools, err := testLibvirt(t).ListPools(context.Background())
	if err != nil {
		t.Fatalf("list pools: %v", err)
	}
	for i := range pools {
		if pools[i].Name == name {
			return &pools[i]
		}
	}
	return nil
}

// testPoolDir is a fresh directory /var/lib/<name> that the test removes when it ends, with one
// file in it (keep) that the pool's destroy must leave.
func testPoolDir(t *testing.T, name string) (dir, keep string) {
	t.Helper()
	// The directory is made (and removed at the end) before the test's resource.ParallelTest,
	// which is what skips a run without TF_ACC: a unit test run must not touch /var/lib, where
	// it removed an acceptance run's directories under its feet.
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	dir = "/var/lib/" + name
	_ = os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("make the pool's directory: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	keep = filepath.Join(dir, "keep.raw")
	if err := os.WriteFile(keep, []byte("preserved bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, keep
}

// checkPoolGone is a CheckDestroy: the pool is gone from libvirt, and its directory and the
// files named are left with their bytes.
func checkPoolGone(t *testing.T, name, dir string, files map[string]string) func(*terraform.State) error {
	return func(*terraform.State) error {
		if p := hostPool(t, name); p != nil {
			return fmt.Errorf("pool %s is still defined after destroy: %+v", name, *p)
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return fmt.Errorf("the pool's directory %s was not left: %v", dir, err)
		}
		for f, want := range files {
			got, err := os.ReadFile(f)
			if err != nil || string(got) != want {
				return fmt.Errorf("file %s was not left as it was: %q, %v", f, got, err)
			}
		}
		return nil
	}
}

func TestAccPool_createImportDestroy(t *testing.T) {
	name := testPrefix + "pool-basic"
	dir, keep := testPoolDir(t, name)
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkPoolGone(t, name, dir, map[string]string{keep: "preserved bytes"}),
		Steps: []resource.TestStep{
			{
				Config: poolConfig(name, dir),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("virt_pool.test", "name", name),
					resource.TestCheckResourceAttr("virt_pool.test", "path", dir),
					resource.TestCheckResourceAttr("virt_pool.test", "host", "default"),
					func(s *terraform.State) error {
						p := hostPool(t, name)
						if p == nil || !p.Active || !p.Autostart || p.Target != dir {
							return fmt.Errorf("pool on the host: %+v, want active, autostart, target %s", p, dir)
						}
						if id := s.RootModule().Resources["virt_pool.test"].Primary.ID; id != p.UUID {
							return fmt.Errorf("id %s, want the pool's UUID %s", id, p.UUID)
						}
						// The existing directory was used as it is: its file is now a volume.
						if _, err := testLibvirt(t).LookupVolume(context.Background(), name, "keep.raw"); err != nil {
							return fmt.Errorf("the directory's file is not a volume of the pool: %v", err)
						}
						return nil
					},
				),
			},
			{
				ResourceName:      "virt_pool.test",
				ImportState:       true,
				ImportStateId:     name,
				ImportStateVerify: true,
			},
			{
				// Removed behind Terraform's back: the refresh drops it and the plan creates it again.
				PreConfig: func() {
					p := hostPool(t, name)
					if p == nil {
						t.Fatal("pool missing before the out-of-band removal")
					}
					if err := testLibvirt(t).DeletePool(context.Background(), p.UUID); err != nil {
						t.Fatal(err)
					}
				},
				Config: poolConfig(name, dir),
				Check: func(*terraform.State) error {
					if hostPool(t, name) == nil {
						return fmt.Errorf("pool %s was not created again", name)
					}
					return nil
				},
			},
		},
	})
}

func TestAccPool_refusesTakenNameAndDirectory(t *testing.T) {
	ctx := context.Background()
	taken := testPrefix + "pool-taken"
	takenDir, _ := testPoolDir(t, taken)
	p, err := testLibvirt(t).CreatePool(ctx, taken, takenDir)
	if err != nil {
		t.Fatalf("make the pool the test takes the name of: %v", err)
	}
	t.Cleanup(func() { _ = testLibvirt(t).DeletePool(ctx, p.UUID) })
	harness, err := testLibvirt(t).LookupPool(ctx, testPool())
	if err != nil || harness.Path == "" {
		t.Fatalf("the harness pool %s: %+v %v", testPool(), harness, err)
	}
	link := "/var/lib/" + testPrefix + "pool-link"
	_ = os.Remove(link)
	if err := os.Symlink(harness.Path, link); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(link) })
	name := testPrefix + "pool-refused"
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(*terraform.State) error {
			if hostPool(t, name) != nil {
				return fmt.Errorf("refused pool %s was created", name)
			}
			if q := hostPool(t, taken); q == nil || q.UUID != p.UUID {
				return fmt.Errorf("the pool whose name was taken changed: %+v", q)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config:      poolConfig(taken, "/var/lib/"+name),
				ExpectError: regexp.MustCompile(`(?s)Storage pool already exists.*terraform\s+import\s+virt_pool.<name>\s+` + taken),
			},
			{
				Config:      poolConfig(name, harness.Path),
				ExpectError: regexp.MustCompile(`(?s)Directory belongs to another storage pool.*` + regexp.QuoteMeta(testPool())),
			},
			{
				Config:      poolConfig(name, link),
				ExpectError: regexp.MustCompile(`(?s)Directory belongs to another storage pool.*resolves\s+to`),
			},
		},
	})
}

// A group on a pool of the same configuration plans and applies in one apply, though the pool
// does not exist when the group is planned.
func TestAccPool_groupOnNewPool(t *testing.T) {
	name := testPrefix + "pool-group"
	group := testPrefix + "poolgrp"
	dir, keep := testPoolDir(t, name)
	config := poolConfig(name, dir) + fmt.Sprintf(`
resource "virt_stateful_group" "test" {
  name             = %q
  pool             = virt_pool.test.name
  target_size      = 1
  shutdown_timeout = "0s"
  template {
    domain_type = "qemu"
    vcpu        = 1
    memory_mib  = 64
    boot_disk {
      size_mib = 16
    }
    network_interface {
      type = "user"
    }
  }
}
`, group)
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(
			checkNothingLeft(t, group),
			checkPoolGone(t, name, dir, map[string]string{keep: "preserved bytes"}),
			func(*terraform.State) error {
				// The group's destroy deleted its volumes; the pool's left the rest.
				left, err := filepath.Glob(filepath.Join(dir, "*"))
				if err != nil || len(left) != 1 || left[0] != keep {
					return fmt.Errorf("files in %s after destroy: %v (%v), want only %s", dir, left, err, keep)
				}
				return nil
			},
		),
		Steps: []resource.TestStep{{
			Config: config,
			Check: func(*terraform.State) error {
				if _, ok := members(t, group)[group+"-1"]; !ok {
					return fmt.Errorf("member %s-1 was not created", group)
				}
				vols, err := testLibvirt(t).ListVolumeNames(context.Background(), name, group+"-")
				if err != nil || len(vols) == 0 {
					return fmt.Errorf("the member's volumes are not in pool %s: %v %v", name, vols, err)
				}
				return nil
			},
		}},
	})
}
