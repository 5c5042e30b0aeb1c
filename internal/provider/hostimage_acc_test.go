package provider

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"libvirt.org/go/libvirtxml"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"

	"github.com/virtfleet/terraform-provider-virt/internal/diskdigest"
)

// The security cases of host paths (issue 42): a source_image link swapped for a system file
// after the first apply, and a pool volume swapped for a link. A dummy file stands for
// /etc/shadow: root's, mode 0600, random bytes, in a temporary directory. Every case is judged
// on the host: the dummy's sha256, owner and mode, and the bytes every member's disk shows.

// hostFile is what a test remembers of a host file: its bytes' digest, owner and mode.
type hostFile struct {
	path string
	sum  string
	// digest is diskdigest's of the file's bytes as a raw image: what a volume copied from it
	// digests to.
	digest   string
	uid, gid uint32
	mode     os.FileMode
	bytes    []byte
}

// makeHostFile writes n random bytes to a new file at p, root's with mode, and remembers it.
func makeHostFile(t *testing.T, p string, n int, mode os.FileMode) hostFile {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return statHostFile(t, p)
}

func statHostFile(t *testing.T, p string) hostFile {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	sum := sha256.Sum256(b)
	digest, _, err := diskdigest.Raw(p)
	if err != nil {
		t.Fatal(err)
	}
	return hostFile{path: p, sum: hex.EncodeToString(sum[:]), digest: digest, uid: st.Uid, gid: st.Gid, mode: fi.Mode(), bytes: b}
}

// unchanged fails when the file's bytes, owner or mode changed since it was remembered.
func (f hostFile) unchanged(t *testing.T) resource.TestCheckFunc {
	return func(*terraform.State) error {
		now := statHostFile(t, f.path)
		if now.sum != f.sum || now.uid != f.uid || now.gid != f.gid || now.mode != f.mode {
			return fmt.Errorf("host file %s changed: sha256 %s uid %d gid %d mode %v, was sha256 %s uid %d gid %d mode %v",
				f.path, now.sum, now.uid, now.gid, now.mode, f.sum, f.uid, f.gid, f.mode)
		}
		return nil
	}
}

// noDiskShows fails when any volume of the group shows a guest the secret's bytes.
func noDiskShows(t *testing.T, group string, secret hostFile) resource.TestCheckFunc {
	return func(*terraform.State) error {
		vols, err := testLibvirt(t).ListVolumes(context.Background(), testPool(), group+"-")
		if err != nil {
			return err
		}
		if len(vols) == 0 {
			return fmt.Errorf("the group %s has no volume to look at", group)
		}
		for _, v := range vols {
			raw := filepath.Join(t.TempDir(), "raw")
			if out, err := exec.Command("qemu-img", "convert", "-U", "-O", "raw", v.Path, raw).CombinedOutput(); err != nil {
				return fmt.Errorf("qemu-img convert %s: %v: %s", v.Name, err, out)
			}
			b, err := os.ReadFile(raw)
			if err != nil {
				return err
			}
			if bytes.Contains(b, secret.bytes[:512]) {
				return fmt.Errorf("volume %s shows the bytes of %s", v.Name, secret.path)
			}
		}
		return nil
	}
}

// backsOnto fails unless every member's boot volume is an overlay of the volume named image of
// the group's pool, whose bytes are the image's.
func backsOnto(t *testing.T, group string, members int, image string, img hostFile) resource.TestCheckFunc {
	return func(*terraform.State) error {
		want := volumePath(t, image)
		for i := 1; i <= members; i++ {
			boot := engine.VolumeName(engine.InstanceName(group, i), engine.BootDeviceName)
			out, err := exec.Command("virsh", "-c", connectionURI(providerdata.NullString()), "vol-dumpxml", "--pool", testPool(), boot).CombinedOutput()
			if err != nil {
				return fmt.Errorf("virsh vol-dumpxml %s: %v: %s", boot, err, out)
			}
			var x libvirtxml.StorageVolume
			if err := x.Unmarshal(string(out)); err != nil {
				return err
			}
			if x.BackingStore == nil || x.BackingStore.Path != want {
				return fmt.Errorf("boot volume %s backs onto %+v, want the group's copy %s", boot, x.BackingStore, want)
			}
		}
		sum, _, err := volumeBytes(t, image)
		if err != nil {
			return err
		}
		if sum != img.digest {
			return fmt.Errorf("image volume %s has digest %s, the image %s has %s", image, sum, img.path, img.digest)
		}
		return nil
	}
}

func hostImageConfig(name string, size int, source, extra string) string {
	return "\nprovider \"virt\" {\n  allow_host_paths = true\n}\n" + groupConfig(name, size, fmt.Sprintf(`
    boot_disk {
      source_image = %q
    }
    metadata = { role = "db" }`, source), extra)
}

// TestAccHostImage_linkSwapped: a source_image that is a link to a harmless file is copied into
// the group's pool at the first apply, and members back onto the copy. The link then swapped for
// a root-only file, a scale-out and a REPLACE use the copy: no disk shows the file's bytes, and
// neither file's bytes, owner or mode change, through the destroy, which deletes the copy.
func TestAccHostImage_linkSwapped(t *testing.T) {
	name := testPrefix + "imglink"
	dir := t.TempDir()
	image := makeHostFile(t, filepath.Join(dir, "harmless.img"), 1<<20, 0o644)
	secret := makeHostFile(t, filepath.Join(dir, "shadow"), 4096, 0o600)
	link := filepath.Join(dir, "link.img")
	if err := os.Symlink(image.path, link); err != nil {
		t.Fatal(err)
	}
	copyName := engine.ImageVolumeName(name, image.sum, "raw")
	files := func() resource.TestCheckFunc {
		return resource.ComposeTestCheckFunc(image.unchanged(t), secret.unchanged(t), noDiskShows(t, name, secret))
	}
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(s *terraform.State) error {
			if err := checkNothingLeft(t, name)(s); err != nil {
				return err
			}
			return resource.ComposeTestCheckFunc(image.unchanged(t), secret.unchanged(t))(s)
		},
		Steps: []resource.TestStep{
			{
				Config: hostImageConfig(name, 1, link, ""),
				Check:  resource.ComposeTestCheckFunc(backsOnto(t, name, 1, copyName, image), files()),
			},
			{
				PreConfig: func() {
					if err := os.Remove(link); err != nil {
						t.Fatal(err)
					}
					if err := os.Symlink(secret.path, link); err != nil {
						t.Fatal(err)
					}
				},
				Config: hostImageConfig(name, 2, link, ""),
				Check:  resource.ComposeTestCheckFunc(backsOnto(t, name, 2, copyName, image), files()),
			},
			{
				// A metadata change that the policy makes a REPLACE of both members.
				Config: strings.Replace(hostImageConfig(name, 2, link, "  update_policy {\n    minimal_action = \"REPLACE\"\n  }"), `role = "db"`, `role = "web"`, 1),
				Check:  resource.ComposeTestCheckFunc(backsOnto(t, name, 2, copyName, image), files()),
			},
		},
	})
}

// TestAccHostImage_notSelfContained: a qcow2 source_image with a backing file of its own is not
// copied (the file it names would be opened by name, unjudged): the apply is refused, naming the
// image and how to flatten it, and nothing is made.
func TestAccHostImage_notSelfContained(t *testing.T) {
	name := testPrefix + "imgback"
	dir := t.TempDir()
	base := filepath.Join(dir, "base.qcow2")
	top := filepath.Join(dir, "top.qcow2")
	for _, args := range [][]string{
		{"create", "-f", "qcow2", base, "1M"},
		{"create", "-f", "qcow2", "-F", "qcow2", "-b", base, top},
	} {
		if out, err := exec.Command("qemu-img", args...).CombinedOutput(); err != nil {
			t.Fatalf("qemu-img %v: %v: %s", args, err, out)
		}
	}
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{{
			Config:      hostImageConfig(name, 1, top, ""),
			ExpectError: regexp.MustCompile(`(?s)` + regexp.QuoteMeta(name) + `-1: source_image.*` + regexp.QuoteMeta(top) + `.*cannot\s+be\s+copied.*backing\s+file\s+of\s+its\s+own.*flatten\s+it\s+first`),
		}},
	})
}

// TestAccHostImage_poolVolumeSwapped: a source_image that is a pool volume, swapped for a link to
// a root-only file after the first apply, is refused at the scale-out's volume creation, naming
// the volume, its path and where it points; nothing is started on it, and the file is unchanged.
func TestAccHostImage_poolVolumeSwapped(t *testing.T) {
	name := testPrefix + "imgpool"
	ctx := context.Background()
	pool, err := testLibvirt(t).LookupPool(ctx, testPool())
	if err != nil {
		t.Fatal(err)
	}
	if pool.Path == "" {
		t.Skipf("pool %s is not a directory pool", testPool())
	}
	secret := makeHostFile(t, filepath.Join(t.TempDir(), "shadow"), 4096, 0o600)
	baseName := testPrefix + "imgpoolbase.raw"
	base := filepath.Join(pool.Path, baseName)
	makeHostFile(t, base, 1<<20, 0o644)
	t.Cleanup(func() {
		_ = testLibvirt(t).DeleteVolume(ctx, testPool(), baseName)
		_ = os.Remove(base)
		_ = testLibvirt(t).RefreshPool(ctx, testPool())
	})
	if err := testLibvirt(t).RefreshPool(ctx, testPool()); err != nil {
		t.Fatal(err)
	}
	cfg := func(size int) string {
		return groupConfig(name, size, fmt.Sprintf("\n    boot_disk {\n      source_image = %q\n    }", base), "")
	}
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(s *terraform.State) error {
			if err := checkNothingLeft(t, name)(s); err != nil {
				return err
			}
			return secret.unchanged(t)(s)
		},
		Steps: []resource.TestStep{
			{Config: cfg(1), Check: secret.unchanged(t)},
			{
				PreConfig: func() {
					if err := os.Remove(base); err != nil {
						t.Fatal(err)
					}
					if err := os.Symlink(secret.path, base); err != nil {
						t.Fatal(err)
					}
				},
				Config:      cfg(2),
				ExpectError: regexp.MustCompile(`(?s)` + regexp.QuoteMeta(base) + `.*is a symbolic link\s+\(to\s+"` + regexp.QuoteMeta(secret.path) + `"\)`),
			},
			{
				// Nothing started on it: the file is as it was, and the new member has no domain
				// running.
				RefreshState:       true,
				ExpectNonEmptyPlan: true,
				Check: resource.ComposeTestCheckFunc(secret.unchanged(t), func(*terraform.State) error {
					if d, ok := members(t, name)[engine.InstanceName(name, 2)]; ok && d.ID > 0 {
						return fmt.Errorf("%s runs (domain id %d) on a swapped volume", d.Name, d.ID)
					}
					return nil
				}),
			},
			{
				PreConfig: func() {
					// The pool volume as it was, for the group's destroy.
					_ = os.Remove(base)
					makeHostFile(t, base, 1<<20, 0o644)
				},
				Config: cfg(1),
			},
		},
	})
}

// TestAccHostPaths_configSourceAtEachUse: a per-instance config's host file, which libvirt opens
// in place, keeps its owner and mode through create, REPLACE and destroy (relabel="no"), and is
// judged again at each use: its link swapped for a system file after the first applies, the
// next REPLACE is refused, naming the file it now reaches, and that file is unchanged.
func TestAccHostPaths_configSourceAtEachUse(t *testing.T) {
	name := testPrefix + "cfgpath"
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	qemu, err := user.Lookup("libvirt-qemu")
	if err != nil {
		t.Skipf("no libvirt-qemu user: %v", err)
	}
	uid, _ := strconv.Atoi(qemu.Uid)
	gid, _ := strconv.Atoi(qemu.Gid)
	// Under /srv, which QEMU's user can reach (a test's temporary directory is root's only).
	dir, err := os.MkdirTemp("/srv", testPrefix+"cfgpath-") //nolint:usetesting // t.TempDir is under root's private /tmp directory, which QEMU's user cannot reach
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data.img")
	makeHostFile(t, data, 1<<20, 0o600)
	if err := os.Chown(data, uid, gid); err != nil {
		t.Fatal(err)
	}
	file := statHostFile(t, data)
	system := statHostFile(t, "/etc/hostname")
	link := filepath.Join(dir, "link.img")
	if err := os.Symlink(data, link); err != nil {
		t.Fatal(err)
	}
	relink := func(to string) func() {
		return func() {
			if err := os.Remove(link); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(to, link); err != nil {
				t.Fatal(err)
			}
		}
	}
	cfg := func(role string) string {
		return "\nprovider \"virt\" {\n  allow_host_paths = true\n}\n" +
			groupConfig(name, 1, fmt.Sprintf("    metadata = { role = %q }", role), "  update_policy {\n    minimal_action = \"REPLACE\"\n  }") + fmt.Sprintf(`
resource "virt_per_instance_config" "one" {
  group = virt_stateful_group.test.name
  name  = "%s-1"
  preserved_state {
    disk {
      device_name = "host"
      source      = %q
    }
  }
}
`, name, link)
	}
	files := resource.ComposeTestCheckFunc(file.unchanged(t), system.unchanged(t))
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             resource.ComposeTestCheckFunc(checkNothingLeft(t, name), files),
		Steps: []resource.TestStep{
			{Config: cfg("a"), Check: resource.ComposeTestCheckFunc(checkMembers(t, name, "RUNNING", name+"-1"), files)},
			{Config: cfg("b"), Check: resource.ComposeTestCheckFunc(checkMembers(t, name, "RUNNING", name+"-1"), files)},
			{
				PreConfig:   relink("/etc/hostname"),
				Config:      cfg("c"),
				ExpectError: regexp.MustCompile(`(?s)disk\s+host\s+of\s+domain\s+` + regexp.QuoteMeta(name) + `-1.*` + regexp.QuoteMeta(link) + `.*now\s+resolves\s+to\s+/etc/hostname`),
			},
			{
				PreConfig: relink(data),
				Config:    cfg("c"),
				Check:     resource.ComposeTestCheckFunc(checkMembers(t, name, "RUNNING", name+"-1"), files),
			},
		},
	})
}

// TestAccHostImage_autohealUsesCopy: a member healed (REPLACE) after its source_image link was
// swapped for a root-only file backs onto the group's copy; the file is unchanged and no disk
// shows its bytes.
func TestAccHostImage_autohealUsesCopy(t *testing.T) {
	name := testPrefix + "imgheal"
	m1 := name + "-1"
	dir := t.TempDir()
	image := makeHostFile(t, filepath.Join(dir, "harmless.img"), 1<<20, 0o644)
	secret := makeHostFile(t, filepath.Join(dir, "shadow"), 4096, 0o600)
	link := filepath.Join(dir, "link.img")
	if err := os.Symlink(image.path, link); err != nil {
		t.Fatal(err)
	}
	copyName := engine.ImageVolumeName(name, image.sum, "raw")
	cfg := hostImageConfig(name, 1, link, "  auto_healing {\n    initial_delay = \"0s\"\n    backoff       = \"0s\"\n  }")
	files := resource.ComposeTestCheckFunc(image.unchanged(t), secret.unchanged(t), noDiskShows(t, name, secret))
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(s *terraform.State) error {
			if err := checkNothingLeft(t, name)(s); err != nil {
				return err
			}
			return resource.ComposeTestCheckFunc(image.unchanged(t), secret.unchanged(t))(s)
		},
		Steps: []resource.TestStep{
			{Config: cfg, Check: resource.ComposeTestCheckFunc(backsOnto(t, name, 1, copyName, image), files)},
			{
				PreConfig: func() {
					if err := os.Remove(link); err != nil {
						t.Fatal(err)
					}
					if err := os.Symlink(secret.path, link); err != nil {
						t.Fatal(err)
					}
					killQEMU(t, m1)
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plannedPrefix(0, "REPLACE: autoheal"),
				}},
				Check: resource.ComposeTestCheckFunc(checkMembers(t, name, "RUNNING", m1), backsOnto(t, name, 1, copyName, image), files),
			},
		},
	})
}
