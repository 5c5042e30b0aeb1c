package provider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

// The examples test runs `terraform validate` on every configuration under examples/, with the
// provider built from this tree, so that an example the docs show cannot drift from the schema.
// It needs no libvirt: validate never configures the provider. It runs in `make unit` as well as
// in the acceptance runs, and under OpenTofu when TF_ACC_TERRAFORM_PATH names a tofu binary.
//
// Examples come in two kinds:
//   - standalone configurations (examples/provider, examples/quickstart, examples/remote-host,
//     examples/guides/...) declare their required_providers and are validated as they are;
//   - fragments, the per-resource and per-data-source examples tfplugindocs shows on each page
//     (examples/resources/<type>, examples/data-sources/<type>), which leave the provider setup
//     to examples/provider/provider.tf and refer to the group "db" of
//     examples/resources/virt_stateful_group/resource.tf. Each is validated together with those
//     two files, in a directory of its own.

// exampleSupport are the files a fragment is completed with, relative to examples/.
const (
	exampleProvider = "provider/provider.tf"
	exampleGroup    = "resources/virt_stateful_group/resource.tf"
)

// exampleREADME are the configurations README.md shows in full: its quick start, and its
// complete configuration for a remote host.
var exampleREADME = []string{"quickstart/main.tf", "remote-host/main.tf"}

// fragmentDirs hold examples that are completed with the provider example before validation.
var fragmentDirs = []string{"resources", "data-sources"}

type exampleDir struct {
	rel      string // relative to examples/, with forward slashes
	files    []string
	fragment bool
	// identity: the resource's import by identity, validated apart from its import by ID (a
	// resource takes one import block), and only by a CLI that has it (identityImport).
	identity bool
}

// The per-resource import examples tfplugindocs shows.
const (
	importByID       = "import-by-string-id.tf"
	importByIdentity = "import-by-identity.tf"
)

func (d exampleDir) name() string {
	if d.identity {
		return d.rel + "/" + strings.TrimSuffix(importByIdentity, ".tf")
	}
	return d.rel
}

func TestExamples(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	examples := filepath.Join(root, "examples")
	dirs := findExamples(t, examples)
	if len(dirs) == 0 {
		t.Fatalf("no examples found under %s", examples)
	}

	for _, ex := range exampleREADME {
		t.Run("README shows "+ex, func(t *testing.T) {
			readme, err := os.ReadFile(filepath.Join(root, "README.md"))
			if err != nil {
				t.Fatal(err)
			}
			want := withoutLeadingComments(t, filepath.Join(examples, ex))
			if !bytes.Contains(readme, want) {
				t.Errorf("README.md does not show examples/%s as it is (from its terraform block on); copy the file into README", ex)
			}
		})
	}

	tf := terraformBinary(t)
	cli := devOverrides(t, buildProvider(t, root))
	for _, d := range dirs {
		t.Run(d.name(), func(t *testing.T) {
			t.Parallel()
			if d.identity {
				if err := identityImport.check(cliVersion(t, tf)); err != nil {
					t.Fatal(err)
				}
			}
			work := t.TempDir()
			for _, f := range d.files {
				copyFile(t, filepath.Join(examples, d.rel, f), filepath.Join(work, f))
			}
			if d.fragment {
				completeFragment(t, examples, d, work)
			}
			validate(t, tf, cli, work)
		})
	}
	// make demo's configuration is no example, but drifts from the schema the same way.
	t.Run("tools/demo", func(t *testing.T) {
		t.Parallel()
		work := t.TempDir()
		copyFile(t, filepath.Join(root, "tools", "demo", "main.tf"), filepath.Join(work, "main.tf"))
		validate(t, tf, cli, work)
	})
}

// findExamples lists every directory under examples/ that holds a .tf file, and refuses a
// standalone one that cannot validate on its own.
func findExamples(t *testing.T, examples string) []exampleDir {
	t.Helper()
	byDir := map[string][]string{}
	err := filepath.WalkDir(examples, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || filepath.Ext(p) != ".tf" {
			return err
		}
		rel, err := filepath.Rel(examples, filepath.Dir(p))
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		byDir[rel] = append(byDir[rel], e.Name())
		return nil
	})
	if err != nil {
		t.Fatalf("list examples: %v", err)
	}
	var out []exampleDir
	for rel, files := range byDir {
		sort.Strings(files)
		d := exampleDir{rel: rel, files: files}
		for _, f := range fragmentDirs {
			if strings.HasPrefix(rel, f+"/") {
				d.fragment = true
			}
		}
		if !d.fragment && !declares(t, filepath.Join(examples, rel), files, "required_providers") {
			t.Errorf("examples/%s declares no required_providers: give it a terraform block with source \"virtfleet/virt\", so that it validates on its own", rel)
		}
		if slices.Contains(files, importByIdentity) {
			out = append(out, exampleDir{rel: rel, files: without(files, importByID), fragment: d.fragment, identity: true})
			d.files = without(files, importByIdentity)
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name() < out[j].name() })
	return out
}

func without(files []string, name string) []string {
	return slices.DeleteFunc(slices.Clone(files), func(f string) bool { return f == name })
}

// completeFragment adds the provider example and, when the fragment uses the group "db" without
// declaring it, the group example.
func completeFragment(t *testing.T, examples string, d exampleDir, work string) {
	t.Helper()
	copyFile(t, filepath.Join(examples, exampleProvider), filepath.Join(work, "zz_provider.tf"))
	dir := filepath.Join(examples, d.rel)
	if declares(t, dir, d.files, "virt_stateful_group.db") && !declares(t, dir, d.files, `resource "virt_stateful_group" "db"`) {
		copyFile(t, filepath.Join(examples, exampleGroup), filepath.Join(work, "zz_group.tf"))
	}
}

func declares(t *testing.T, dir string, files []string, text string) bool {
	t.Helper()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(text)) {
			return true
		}
	}
	return false
}

// terraformBinary is TF_ACC_TERRAFORM_PATH, as terraform-plugin-testing reads it, else terraform
// from PATH.
func terraformBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TF_ACC_TERRAFORM_PATH"); p != "" {
		return p
	}
	p, err := exec.LookPath("terraform")
	if err != nil {
		t.Fatalf("the examples are validated with terraform, which is not in PATH: install it, or set TF_ACC_TERRAFORM_PATH to a terraform or tofu binary (%v)", err)
	}
	return p
}

// buildProvider builds the provider from this tree into a scratch directory, once per test
// binary: the tests that drive the terraform CLI (a dozen) share the build, which all of them
// made again before (a link of the whole provider, seconds each). root is the same for all of
// them (the repository), so the build is the same; TestMain removes the directory at the end.
func buildProvider(t *testing.T, root string) string {
	t.Helper()
	providerBuild.once.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			providerBuild.err = fmt.Errorf("go is not in PATH, so the provider cannot be built for the examples: %w", err)
			return
		}
		dir, err := os.MkdirTemp("", "virt-provider-build-") //nolint:usetesting // one build for every test of the binary: t.TempDir would go with the first test
		if err != nil {
			providerBuild.err = err
			return
		}
		providerBuild.dir = dir
		cmd := exec.Command(goBin, "build", "-o", filepath.Join(dir, "terraform-provider-virt"), ".")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			providerBuild.err = fmt.Errorf("go build of the provider: %w\n%s", err, out)
		}
	})
	if providerBuild.err != nil {
		t.Fatal(providerBuild.err)
	}
	return providerBuild.dir
}

// providerBuild is buildProvider's one build of the test binary.
var providerBuild struct {
	once sync.Once
	dir  string
	err  error
}

// removeProviderBuild removes buildProvider's directory, when a test made it (TestMain, after
// the tests).
func removeProviderBuild() {
	if providerBuild.dir != "" {
		_ = os.RemoveAll(providerBuild.dir)
	}
}

// devOverrides writes a CLI configuration that runs the provider in binDir for both registries'
// addresses of virtfleet/virt (terraform's and OpenTofu's), so that validate needs no init and no
// network. It lives in a scratch directory, never in the user's home.
func devOverrides(t *testing.T, binDir string) string {
	t.Helper()
	cfg := fmt.Sprintf(`provider_installation {
  dev_overrides {
    "registry.terraform.io/virtfleet/virt" = %q
    "registry.opentofu.org/virtfleet/virt" = %q
  }
  direct {}
}
`, binDir, binDir)
	p := filepath.Join(t.TempDir(), "cli.tfrc")
	if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

type validateOutput struct {
	Valid       bool `json:"valid"`
	Diagnostics []struct {
		Severity string `json:"severity"`
		Summary  string `json:"summary"`
		Detail   string `json:"detail"`
	} `json:"diagnostics"`
}

// validate runs `terraform validate` in dir and fails on an error or on any warning but the one
// dev_overrides always gives, with terraform's own output.
func validate(t *testing.T, tf, cli, dir string) {
	t.Helper()
	run := func(args ...string) ([]byte, error) {
		cmd := exec.Command(tf, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+cli, "HOME="+dir, "TF_IN_AUTOMATION=1", "TF_INPUT=0", "CHECKPOINT_DISABLE=1")
		var stdout bytes.Buffer
		cmd.Stdout = &stdout
		cmd.Stderr = &stdout
		err := cmd.Run()
		return stdout.Bytes(), err
	}
	out, err := run("validate", "-json", "-no-color")
	var res validateOutput
	if jerr := json.Unmarshal(out, &res); jerr != nil {
		t.Fatalf("terraform validate: %v; output is not JSON (%v):\n%s", err, jerr, out)
	}
	var problems []string
	for _, d := range res.Diagnostics {
		if d.Severity == "warning" && strings.Contains(d.Summary, "development overrides") {
			continue
		}
		problems = append(problems, d.Severity+": "+d.Summary)
	}
	if res.Valid && err == nil && len(problems) == 0 {
		return
	}
	human, _ := run("validate", "-no-color")
	t.Fatalf("terraform validate found %s:\n%s", strings.Join(problems, "; "), human)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// withoutLeadingComments is the file from its first line that is not a comment.
func withoutLeadingComments(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	for len(b) > 0 && bytes.HasPrefix(b, []byte("#")) {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return nil
		}
		b = b[i+1:]
	}
	return b
}

// runTerraform runs tf in dir as a user's automation would, on the provider that the CLI
// configuration cli (devOverrides) points at: HOME in dir (no user's configuration), no input,
// no checkpoint, and env after those. It returns stdout and stderr together.
func runTerraform(tf, cli, dir string, env []string, args ...string) (string, error) {
	cmd := exec.Command(tf, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "TF_CLI_CONFIG_FILE="+cli, "HOME="+dir, "TF_IN_AUTOMATION=1", "TF_INPUT=0", "CHECKPOINT_DISABLE=1"), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// cliWorkdir is what a test that drives the terraform CLI in one working directory needs: the
// provider built from this tree, a CLI configuration that overrides it, a scratch directory and
// a run of terraform there.
func cliWorkdir(t *testing.T) (run func(args ...string) (string, error), dir string) {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	tf, cli, dir := terraformBinary(t), devOverrides(t, buildProvider(t, root)), t.TempDir()
	return func(args ...string) (string, error) { return runTerraform(tf, cli, dir, nil, args...) }, dir
}
