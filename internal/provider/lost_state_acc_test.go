package provider

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// lostState is a user's working directories around a lost Terraform state, for the tests that
// rebuild one with `terraform query -generate-config-out` through the real CLI: made is where
// the group was applied, lost keeps that state aside (only a failed test's cleanup uses it
// again), rebuilt is the new directory the query writes into.
type lostState struct {
	t                   *testing.T
	tf, cli             string
	made, rebuilt, lost string
	// before is hostView of the group just after the first apply, for the import's apply to
	// be compared with.
	before string
}

// cliHeader is the required_providers block of every configuration the CLI tests write.
const cliHeader = "terraform {\n  required_providers {\n    virt = { source = \"virtfleet/virt\" }\n  }\n}\n"

// loseState applies config (without the header) for group name in one directory, then puts its
// state aside, as a user who lost it would have nothing; the rebuilt directory holds the header
// alone. Its cleanup destroys the group from whichever state holds it and checks nothing is left.
func loseState(t *testing.T, name, config string) *lostState {
	t.Helper()
	tf := requireQueryTerraform(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	ls := &lostState{t: t, tf: tf, cli: devOverrides(t, buildProvider(t, root)),
		made: t.TempDir(), rebuilt: t.TempDir(), lost: t.TempDir()}
	ls.write(ls.made, "main.tf", cliHeader+config)
	t.Cleanup(func() {
		// The rebuilt state destroys the group once it holds it; before, the lost state does.
		dir := ls.rebuilt
		if _, err := os.Stat(filepath.Join(ls.rebuilt, "terraform.tfstate")); err != nil {
			dir = ls.made
			_ = os.Rename(filepath.Join(ls.lost, "terraform.tfstate"), filepath.Join(ls.made, "terraform.tfstate"))
		}
		if out, err := ls.run(dir, "destroy", "-auto-approve", "-no-color"); err != nil {
			t.Errorf("cleanup: terraform destroy: %v\n%s", err, out)
		}
		if err := checkNothingLeft(t, name)(nil); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	if out, err := ls.run(ls.made, "apply", "-auto-approve", "-no-color"); err != nil {
		t.Fatalf("terraform apply: %v\n%s", err, out)
	}
	ls.before = hostView(t, name)
	if err := os.Rename(filepath.Join(ls.made, "terraform.tfstate"), filepath.Join(ls.lost, "terraform.tfstate")); err != nil {
		t.Fatal(err)
	}
	ls.write(ls.rebuilt, "main.tf", cliHeader)
	return ls
}

// run runs the CLI in dir with the provider under test.
func (ls *lostState) run(dir string, args ...string) (string, error) {
	return runTerraform(ls.tf, ls.cli, dir, nil, args...)
}

func (ls *lostState) write(dir, file, text string) {
	ls.t.Helper()
	if err := os.WriteFile(filepath.Join(dir, file), []byte(text), 0o644); err != nil {
		ls.t.Fatal(err)
	}
}

// generate writes query as the rebuilt directory's lost.tfquery.hcl, runs `terraform query
// -generate-config-out=generated.tf` and returns what it generated.
func (ls *lostState) generate(query string) []byte {
	ls.t.Helper()
	ls.write(ls.rebuilt, "lost.tfquery.hcl", query)
	out, err := ls.run(ls.rebuilt, "query", "-generate-config-out=generated.tf", "-no-color")
	if err != nil {
		ls.t.Fatalf("terraform query -generate-config-out: %v\n%s", err, out)
	}
	ls.t.Logf("terraform query:\n%s", out)
	gen, err := os.ReadFile(filepath.Join(ls.rebuilt, "generated.tf"))
	if err != nil {
		ls.t.Fatal(err)
	}
	ls.t.Logf("generated:\n%s", gen)
	return gen
}

// showChange is one resource change of `terraform show -json` of a plan.
type showChange struct {
	Address string `json:"address"`
	Type    string `json:"type"`
	Change  struct {
		Actions   []string                   `json:"actions"`
		Importing json.RawMessage            `json:"importing"`
		Before    map[string]json.RawMessage `json:"before"`
		After     map[string]json.RawMessage `json:"after"`
	} `json:"change"`
}

// plan runs `terraform plan -out=tfplan` in the rebuilt directory and returns its changes as
// `terraform show -json` gives them, and the show's text for failure messages.
func (ls *lostState) plan() ([]showChange, string) {
	ls.t.Helper()
	out, err := ls.run(ls.rebuilt, "plan", "-out=tfplan", "-no-color")
	if err != nil {
		ls.t.Fatalf("terraform plan with the generated configuration: %v\n%s", err, out)
	}
	ls.t.Logf("terraform plan:\n%s", out)
	show, err := ls.run(ls.rebuilt, "show", "-json", "tfplan")
	if err != nil {
		ls.t.Fatalf("terraform show -json: %v\n%s", err, show)
	}
	var plan struct {
		ResourceChanges []showChange `json:"resource_changes"`
	}
	if err := json.Unmarshal([]byte(show), &plan); err != nil {
		ls.t.Fatalf("read the plan: %v\n%s", err, show)
	}
	return plan.ResourceChanges, show
}

// applyPlanChangesNothing applies the saved plan, checks the host is as it was after the first
// apply (hostView of group name), and that the next plan is empty.
func (ls *lostState) applyPlanChangesNothing(name string) {
	ls.t.Helper()
	if out, err := ls.run(ls.rebuilt, "apply", "-no-color", "tfplan"); err != nil {
		ls.t.Fatalf("terraform apply of the imports: %v\n%s", err, out)
	}
	if after := hostView(ls.t, name); after != ls.before {
		ls.t.Errorf("the import apply changed the host:\nbefore: %s\nafter:  %s", ls.before, after)
	}
	if out, err := ls.run(ls.rebuilt, "plan", "-detailed-exitcode", "-no-color"); err != nil {
		ls.t.Errorf("the plan after the import apply is not empty: %v\n%s", err, out)
	}
}
