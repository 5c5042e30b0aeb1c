package provider

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/seed"
)

// wo is one write-only user data of TestAccCLI_userDataWO: a token no other file of the test holds.
type wo struct{ token, userData string }

func newWO(t *testing.T) wo {
	t.Helper()
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	token := "udwo" + hex.EncodeToString(b)
	return wo{token: token, userData: "#cloud-config\n# " + token + "\nchpasswd: { expire: false }\n"}
}

// traces are the forms the user data could be stored in: itself, its token, base64 and its
// SHA-256 (nothing derived from it may be kept either).
func (w wo) traces() []string {
	sum := sha256.Sum256([]byte(w.userData))
	return []string{w.token, base64.StdEncoding.EncodeToString([]byte(w.userData)), hex.EncodeToString(sum[:])}
}

// holdsNo fails when b holds a trace of any of the user data.
func holdsNo(what string, b []byte, ws ...wo) error {
	for _, w := range ws {
		for _, tr := range w.traces() {
			if bytes.Contains(b, []byte(tr)) {
				return fmt.Errorf("%s holds the write-only user data (%q)", what, tr)
			}
		}
	}
	return nil
}

// planFileHoldsNo opens a saved plan (a zip archive) and looks into every file it holds.
func planFileHoldsNo(path string, ws ...wo) error {
	z, err := zip.OpenReader(path)
	if err != nil {
		return err
	}
	defer z.Close()
	for _, f := range z.File {
		r, err := f.Open()
		if err != nil {
			return err
		}
		b, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			return err
		}
		if err := holdsNo("the saved plan's "+f.Name, b, ws...); err != nil {
			return err
		}
	}
	return nil
}

// guestHas asks the member's guest, through its agent, whether the user-data file it read from
// its seed holds the token. The agent answers some seconds after the guest printed that it is
// ready; the wait is bounded, the condition is the guest's answer.
func guestHas(t *testing.T, member, token string) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		r, err := testLibvirt(t).Probe(context.Background(), member, backend.ProbeSpec{
			Kind: "exec", Command: []string{"/bin/grep", "-q", token, "/run/seed/user-data"}, Timeout: 20 * time.Second,
		})
		if err == nil && r.OK {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s's guest does not have the user data in /run/seed/user-data (probe: %v, %+v)", member, err, r)
		}
		time.Sleep(time.Second)
	}
}

// seedUserData is the user-data of the member's seed volume on the host.
func seedUserData(t *testing.T, member string) (string, error) {
	img, err := testLibvirt(t).ReadSeed(context.Background(), testPool(), engine.SeedVolumeName(member))
	if err != nil {
		return "", err
	}
	return seed.UserData(img)
}

// TestAccCLI_userDataWO drives the terraform binary (1.11 or later: write-only attributes) with the
// provider built from this tree, as users run it, the user data in an ephemeral variable: neither
// the saved plan (its files and `terraform show -json`), nor terraform.tfstate, nor the group
// record, nor the members' definitions hold any trace of it, while the seed volumes and the guests
// have it; a new user_data_wo_version replaces both members (new UUIDs) and their preserved data
// disks go on (the boot counter the guest keeps on them); a per-instance config's apply, which has
// not got the value, swaps the member's seed live for a new metadata and keeps its user data; the
// provider's TRACE log holds no trace of it either.
func TestAccCLI_userDataWO(t *testing.T) {
	name := testPrefix + "udwo"
	names := []string{name + "-1", name + "-2"}
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	// Serial: run in parallel on a loaded machine, its first member's console stayed empty for the
	// whole 3-minute wait (cause not found); it is 37 s of CI's run.
	testAccPreCheck(t)
	image := tinyGuestImage(t, testPrefix+"image-udwo.qcow2")
	for _, m := range names {
		logFile := filepath.Join(consoleLogDir, m+".console.log")
		_ = os.Remove(logFile) // a log an earlier run left would be appended to
		t.Cleanup(func() { _ = os.Remove(logFile) })
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	tf, cli, dir := terraformBinary(t), devOverrides(t, buildProvider(t, root)), t.TempDir()
	one, two := newWO(t), newWO(t)

	config := func(version int, extra string) string {
		body := fmt.Sprintf(`    memory_mib = 128
    boot_disk {
      source_image = %q
      size_mib     = 64
    }
    disk {
      device_name = "data"
      size_mib    = 8
    }
    network_interface {
      type = "user"
    }
    metadata        = { role = "db" }
    console_log_dir = %q
    cloud_init {
      user_data_wo         = var.user_data
      user_data_wo_version = %d
    }
`, image, consoleLogDir, version)
		return cliHeader +
			"variable \"user_data\" {\n  type      = string\n  ephemeral = true\n}\n" +
			strings.Replace(groupConfig(name, len(names), body, "  update_policy {\n    max_unavailable = 2\n  }\n"), "memory_mib  = 64\n", "", 1) +
			dataPolicyAndInstances + extra
	}
	write := func(cfg string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The provider's own log, at its most verbose, for every command but the cleanup.
	providerLog := filepath.Join(dir, "provider.log")
	run := func(userData string, args ...string) string {
		t.Helper()
		out, err := runTerraform(tf, cli, dir, []string{"TF_VAR_user_data=" + userData, "TF_LOG_PROVIDER=TRACE", "TF_LOG_PATH=" + providerLog}, args...)
		if err != nil {
			t.Fatalf("terraform %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	t.Cleanup(func() {
		// Whatever the test found, the group does not outlive it.
		if out, err := runTerraform(tf, cli, dir, []string{"TF_VAR_user_data=" + two.userData}, "destroy", "-refresh=false", "-auto-approve", "-no-color"); err != nil {
			t.Errorf("cleanup: terraform destroy -refresh=false: %v\n%s", err, out)
		}
		if err := checkNothingLeft(t, name)(nil); err != nil {
			t.Errorf("after terraform destroy: %v", err)
		}
	})
	// plan saves a plan with the user data and checks it holds none of it: its files and its
	// JSON; the JSON is returned.
	plan := func(userData, file string, ws ...wo) string {
		t.Helper()
		run(userData, "plan", "-no-color", "-out="+file)
		if err := planFileHoldsNo(filepath.Join(dir, file), ws...); err != nil {
			t.Fatal(err)
		}
		js := run(userData, "show", "-json", file)
		if err := holdsNo("terraform show -json "+file, []byte(js), ws...); err != nil {
			t.Fatal(err)
		}
		return js
	}
	// stored checks that neither the state file, nor the group record, nor the members'
	// definitions (with their records in the metadata) hold the user data.
	stored := func(ws ...wo) {
		t.Helper()
		st, err := os.ReadFile(filepath.Join(dir, "terraform.tfstate"))
		if err != nil {
			t.Fatal(err)
		}
		if err := holdsNo("terraform.tfstate", st, ws...); err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(st, []byte(`"user_data_wo_version": `)) {
			t.Fatalf("terraform.tfstate has no user_data_wo_version:\n%s", st)
		}
		for _, w := range ws {
			if err := checkGroupRecordHasNo(t, name, w.token)(nil); err != nil {
				t.Fatal(err)
			}
		}
		for _, m := range names {
			_, doc, err := domainDef(t, m, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := holdsNo(m+"'s definition", []byte(doc), ws...); err != nil {
				t.Fatal(err)
			}
		}
	}
	// delivered checks that each member's seed volume holds w's user data and that the guest read
	// it, after its boot number boot.
	delivered := func(w wo, boot int) {
		t.Helper()
		for _, m := range names {
			if err := waitConsole(m, regexp.MustCompile(fmt.Sprintf(`TINYGUEST boot=%d `, boot))); err != nil {
				t.Fatal(err)
			}
			got, err := seedUserData(t, m)
			if err != nil {
				t.Fatalf("%s's seed: %v", m, err)
			}
			if got != w.userData {
				t.Fatalf("%s's seed volume has user-data %q, want %q", m, got, w.userData)
			}
			if err := guestHas(t, m, w.token); err != nil {
				t.Fatal(err)
			}
		}
	}
	uuids := func() map[string]string {
		out := map[string]string{}
		for n, d := range members(t, name) {
			out[n] = d.UUID
		}
		return out
	}

	// 1. Created with version 1.
	write(config(1, ""))
	plan(one.userData, "create.tfplan", one)
	run(one.userData, "apply", "-no-color", "create.tfplan")
	stored(one)
	delivered(one, 1)
	before := uuids()

	// 2. A new version: both members replaced, in the plan's words, with the new user data; their
	// data disks go on (boot 2).
	write(config(2, ""))
	js := plan(two.userData, "bump.tfplan", one, two)
	var p struct {
		ResourceChanges []struct {
			Address string `json:"address"`
			Change  struct {
				Actions []string `json:"actions"`
				After   struct {
					Instances map[string]struct {
						Name          string `json:"name"`
						PlannedAction string `json:"planned_action"`
					} `json:"instances"`
				} `json:"after"`
			} `json:"change"`
		} `json:"resource_changes"`
	}
	if err := json.Unmarshal([]byte(js), &p); err != nil {
		t.Fatal(err)
	}
	planned := map[string]string{}
	for _, rc := range p.ResourceChanges {
		if rc.Address != groupAddr {
			continue
		}
		if len(rc.Change.Actions) != 1 || rc.Change.Actions[0] != "update" {
			t.Fatalf("the group's plan is %v, want an update in place", rc.Change.Actions)
		}
		for _, in := range rc.Change.After.Instances {
			planned[in.Name] = in.PlannedAction
		}
	}
	for _, m := range names {
		if want := "REPLACE: cloud_init user_data_wo_version 1 -> 2"; planned[m] != want {
			t.Fatalf("%s planned %q, want %q; the plan:\n%s", m, planned[m], want, js)
		}
	}
	run(two.userData, "apply", "-no-color", "bump.tfplan")
	after := uuids()
	for _, m := range names {
		if after[m] == "" || after[m] == before[m] {
			t.Fatalf("%s has UUID %q, had %q: the new version did not replace it", m, after[m], before[m])
		}
	}
	stored(one, two)
	delivered(two, 2)
	if out := run(two.userData, "plan", "-no-color", "-detailed-exitcode"); !strings.Contains(out, "No changes") {
		t.Fatalf("the plan after the new version is not empty:\n%s", out)
	}

	// 3. A per-instance config's apply writes the member's seed for a new metadata key without
	// the write-only value (the group is unchanged): the seed keeps its user data, swapped live.
	m := names[0]
	id := members(t, name)[m].ID
	write(config(2, pic("m1", m, nil, map[string]string{"node": "a"}, "")))
	plan(two.userData, "config.tfplan", one, two)
	run(two.userData, "apply", "-no-color", "config.tfplan")
	if err := waitConsole(m, regexp.MustCompile(`TINYGUEST reread\n(TINYGUEST .*\n)*TINYGUEST meta node=a\n`)); err != nil {
		t.Fatal(err)
	}
	if d := members(t, name)[m]; d.ID != id || d.UUID != after[m] {
		t.Fatalf("the config's metadata restarted or replaced %s: id %d -> %d, uuid %s -> %s", m, id, d.ID, after[m], d.UUID)
	}
	if got, err := seedUserData(t, m); err != nil || got != two.userData {
		t.Fatalf("%s's seed after the config's apply: user-data %q (%v), want the member's own", m, got, err)
	}
	if err := guestHas(t, m, two.token); err != nil {
		t.Fatal(err)
	}
	stored(one, two)

	// Nothing the provider logged, at TRACE, holds the user data.
	lg, err := os.ReadFile(providerLog)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(lg, []byte("cloud-init user data kept from the member's seed")) {
		t.Fatalf("the provider's log (%d bytes) does not show the config's apply keeping the seed's user data", len(lg))
	}
	if err := holdsNo("the provider's TRACE log", lg, one, two); err != nil {
		t.Fatal(err)
	}
}
