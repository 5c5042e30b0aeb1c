package provider

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// tofuCached is where `make tofu` (tools/tofu-build.sh) leaves OpenTofu; TOFU_BIN overrides it, as
// it does for make.
const tofuCached = "/var/cache/terraform-provider-virt/tofu-v1.10.7/tofu"

// TestAccQuickstart is what README's quick start tells a user to do, done as a user would: `make
// install` with HOME set to an empty directory (so the provider comes from the filesystem mirror
// make install writes there, with no CLI configuration and no registry), then examples/quickstart
// as it is, in a directory of its own, under the real terraform and, when the harness has built
// it, tofu: init, apply (the pool and a group of three running members), the live change README
// shows (-var role=web: the same domains, not restarted, and a plan with nothing left to do), and
// destroy, after which no domain, volume, group record or pool of it is left. Only the names
// differ from the user's: the example's variable "name" is set to a tfacc- name through
// TF_VAR_name, so that the suite's sweep knows them.
func TestAccQuickstart(t *testing.T) {
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	if os.Getenv("TF_ACC_PROVIDER_HOST") == "registry.opentofu.org" {
		// make testacc-tofu: the Terraform run of the suite runs this test under both CLIs.
		t.Skip("the quick start runs under terraform and tofu in the Terraform run of the suite")
	}
	testAccPreCheck(t)
	accParallel(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	makeInstall(t, root, home)

	clis := map[string]string{}
	tf, err := exec.LookPath("terraform")
	if err != nil {
		t.Fatalf("the quick start runs under terraform, which is not in PATH: %v", err)
	}
	clis["terraform"] = tf
	// make testacc builds OpenTofu and names it in TOFU_BIN: then it must be there. Run by hand
	// without it, the quick start runs under the cached build if there is one.
	tofu, named := os.LookupEnv("TOFU_BIN")
	if !named {
		tofu = tofuCached
	}
	switch _, err := os.Stat(tofu); {
	case err == nil:
		clis["tofu"] = tofu
	case named:
		t.Fatalf("TOFU_BIN=%s: %v", tofu, err)
	default:
		t.Logf("no OpenTofu at %s (make tofu builds it): the quick start runs under terraform only", tofu)
	}
	for _, cli := range []string{"terraform", "tofu"} {
		bin, ok := clis[cli]
		if !ok {
			continue
		}
		t.Run(cli, func(t *testing.T) { runQuickstart(t, root, home, bin, testPrefix+"quickstart-"+cli) })
	}
}

// makeInstall runs `make install` with HOME set to home, and checks that it filed the provider
// under both registries' addresses. Go keeps its build and module caches where they are (they
// live under HOME by default), so that the build costs what `make build` costs.
func makeInstall(t *testing.T, root, home string) {
	t.Helper()
	env := []string{"HOME=" + home}
	for _, v := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOENV"} {
		out, err := exec.Command("go", "env", v).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", v, err)
		}
		env = append(env, v+"="+strings.TrimSpace(string(out)))
	}
	cmd := exec.Command("make", "install")
	cmd.Dir = root
	cmd.Env = append(userEnv(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	for _, reg := range []string{"registry.terraform.io", "registry.opentofu.org"} {
		got, err := filepath.Glob(filepath.Join(home, ".terraform.d", "plugins", reg, "virtfleet", "virt", "*", "*", "terraform-provider-virt_v*"))
		if err != nil || len(got) != 1 {
			t.Fatalf("make install should file one provider binary under %s in ~/.terraform.d/plugins, found %v (%v); its output:\n%s", reg, got, err, out)
		}
	}
}

// userEnv is the environment without what would make the CLIs find the provider other than a
// new user's would: a CLI configuration, a plugin cache, the acceptance framework's settings.
func userEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "HOME" || k == "TF_CLI_CONFIG_FILE" || k == "TF_PLUGIN_CACHE_DIR" || k == "TF_CLI_ARGS" ||
			strings.HasPrefix(k, "TF_ACC") || strings.HasPrefix(k, "TF_VAR_") || strings.HasPrefix(k, "TF_CLI_ARGS_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func runQuickstart(t *testing.T, root, home, cli, name string) {
	work := t.TempDir()
	copyFile(t, filepath.Join(root, "examples", "quickstart", "main.tf"), filepath.Join(work, "main.tf"))
	poolDir := "/var/lib/" + name
	run := func(args ...string) (string, error) {
		cmd := exec.Command(cli, args...)
		cmd.Dir = work
		cmd.Env = append(userEnv(), "HOME="+home, "TF_IN_AUTOMATION=1", "TF_INPUT=0", "CHECKPOINT_DISABLE=1", "TF_VAR_name="+name)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	must := func(args ...string) string {
		t.Helper()
		out, err := run(append(args, "-no-color")...)
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", filepath.Base(cli), strings.Join(args, " "), err, out)
		}
		return out
	}
	destroyed := false
	t.Cleanup(func() {
		if !destroyed {
			if out, err := run("destroy", "-auto-approve", "-no-color"); err != nil {
				t.Logf("cleanup: destroy: %v\n%s", err, out)
			}
		}
		// A failed run may leave the pool defined (the sweep knows volumes, not pools) and its
		// directory: both are this test's own, by name.
		if _, err := testLibvirt(t).LookupPool(context.Background(), name); err == nil {
			_ = exec.Command("virsh", "pool-destroy", name).Run()
			_ = exec.Command("virsh", "pool-undefine", name).Run()
		}
		_ = os.RemoveAll(poolDir)
	})

	out := must("init")
	if !strings.Contains(out, "virtfleet/virt") {
		t.Fatalf("init did not install virtfleet/virt:\n%s", out)
	}
	must("apply", "-auto-approve")
	pool, err := testLibvirt(t).LookupPool(context.Background(), name)
	if err != nil || pool.Path != poolDir || !pool.Active {
		t.Fatalf("after apply, pool %s is %+v (%v), want active at %s", name, pool, err, poolDir)
	}
	before := members(t, name)
	want := []string{name + "-1", name + "-2", name + "-3"}
	if err := sameNames("members", slices.Collect(maps.Keys(before)), want); err != nil {
		t.Fatal(err)
	}
	for n, d := range before {
		if d.ID <= 0 {
			t.Fatalf("%s is not running after apply (%s)", n, d.Status)
		}
	}

	out = must("apply", "-auto-approve", "-var", "role=web")
	if !strings.Contains(out, "REFRESH: metadata role changed") {
		t.Fatalf("the role change was not planned as a live metadata change (REFRESH):\n%s", out)
	}
	after := members(t, name)
	for n, d := range before {
		if a := after[n]; a.ID != d.ID || a.UUID != d.UUID {
			t.Fatalf("the live change restarted or replaced %s: id %d -> %d, uuid %s -> %s", n, d.ID, a.ID, d.UUID, a.UUID)
		}
	}
	if out, err := run("plan", "-detailed-exitcode", "-no-color", "-var", "role=web"); err != nil {
		t.Fatalf("the plan after the live change is not empty (%v):\n%s", err, out)
	}

	must("destroy", "-auto-approve")
	destroyed = true
	left := leftovers(t, name+"-")
	if recs, _ := testLibvirt(t).GroupRecordNames(name); slices.Contains(recs, name) {
		left = append(left, "group record "+name)
	}
	if _, err := testLibvirt(t).LookupPool(context.Background(), name); err == nil {
		left = append(left, "pool "+name)
	}
	// The pool's directory stays (virt_pool never deletes it), empty: every volume went with
	// the members.
	entries, err := os.ReadDir(poolDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	for _, e := range entries {
		left = append(left, "file "+filepath.Join(poolDir, e.Name()))
	}
	if len(left) > 0 {
		t.Fatalf("left after destroy: %s", strings.Join(left, ", "))
	}
}
