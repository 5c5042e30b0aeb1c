package provider

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
)

// planDiagnostics is a provider server that keeps the texts of the diagnostics its plans return
// ("summary: detail"), which Terraform shows the user: what a destroy says it keeps.
type planDiagnostics struct {
	tfprotov6.ProviderServer
	mu    *sync.Mutex
	texts *[]string
}

func (p planDiagnostics) PlanResourceChange(ctx context.Context, req *tfprotov6.PlanResourceChangeRequest) (*tfprotov6.PlanResourceChangeResponse, error) {
	resp, err := p.ProviderServer.PlanResourceChange(ctx, req)
	if resp != nil {
		p.mu.Lock()
		for _, d := range resp.Diagnostics {
			*p.texts = append(*p.texts, d.Summary+": "+d.Detail)
		}
		p.mu.Unlock()
	}
	return resp, err
}

// recordingProviders are the acceptance tests' providers, whose plans' diagnostics go to texts.
func recordingProviders(mu *sync.Mutex, texts *[]string) map[string]func() (tfprotov6.ProviderServer, error) {
	return map[string]func() (tfprotov6.ProviderServer, error){
		"virt": func() (tfprotov6.ProviderServer, error) {
			s, err := testAccProviders["virt"]()
			if err != nil {
				return nil, err
			}
			return planDiagnostics{ProviderServer: s, mu: mu, texts: texts}, nil
		},
	}
}

// makeRandomVolume makes a raw volume in the default host's pool holding 1 MiB of random bytes,
// as a user would by hand, and returns the sha256 of its bytes. The test removes it when it ends
// (CheckDestroy has checked it by then).
func makeRandomVolume(t *testing.T, name string) string {
	t.Helper()
	data := make([]byte, 1<<20)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "bytes")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	uri := testHostURI(testHostDefault)
	if out, err := exec.Command("virsh", "-c", uri, "vol-create-as", testPool(), name, "1M", "--format", "raw").CombinedOutput(); err != nil {
		t.Fatalf("make volume %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("virsh", "-c", uri, "vol-delete", "--pool", testPool(), name).CombinedOutput(); err != nil && !strings.Contains(string(out), "not found") {
			t.Errorf("remove volume %s: %v: %s", name, err, out)
		}
	})
	if out, err := exec.Command("virsh", "-c", uri, "vol-upload", "--pool", testPool(), name, file).CombinedOutput(); err != nil {
		t.Fatalf("write volume %s: %v: %s", name, err, out)
	}
	sum := sha256.Sum256(data)
	if got := fileSHA256(t, name); got != hex.EncodeToString(sum[:]) {
		t.Fatalf("volume %s holds %s after the upload, want %s", name, got, hex.EncodeToString(sum[:]))
	}
	return hex.EncodeToString(sum[:])
}

// fileSHA256 is the sha256 of the bytes of the volume's file in the default host's pool.
func fileSHA256(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("sha256sum", hostVolumePath(t, testHostDefault, name)).CombinedOutput()
	if err != nil {
		t.Fatalf("sha256 of %s: %v: %s", name, err, out)
	}
	return strings.Fields(string(out))[0]
}

// TestAccStatefulGroup_destroyLeavesWhatTheGroupDidNotMake is the reported case on real libvirt:
// a group of one member, applied; volumes made by hand under the names of members 2, 3 and 5 (a
// boot volume, a template disk's volume, an NVRAM) with random bytes; the group's destroy leaves
// each of them with the same bytes (sha256) and its account names them as not made by the
// group, while every object the group made is gone.
func TestAccStatefulGroup_destroyLeavesWhatTheGroupDidNotMake(t *testing.T) {
	name := testPrefix + "inv"
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	testAccPreCheck(t)
	hand := []string{name + "-2-boot.qcow2", name + "-5-nvram.fd", name + "-3-data.qcow2"}
	sums := map[string]string{}
	var mu sync.Mutex
	var texts []string
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: recordingProviders(&mu, &texts),
		CheckDestroy: func(*terraform.State) error {
			// The group's own objects are gone; only the hand-made volumes are left.
			var own []string
			for _, l := range leftovers(t, name+"-") {
				if !slices.Contains(hand, strings.TrimPrefix(l, "volume ")) {
					own = append(own, l)
				}
			}
			if recs, _ := testLibvirt(t).GroupRecordNames(name); slices.Contains(recs, name) {
				own = append(own, "group record "+name)
			}
			if len(own) > 0 {
				return fmt.Errorf("the destroy left the group's own objects: %v", own)
			}
			for _, v := range hand {
				if got := fileSHA256(t, v); got != sums[v] {
					return fmt.Errorf("hand-made volume %s holds %s after the destroy, had %s", v, got, sums[v])
				}
			}
			mu.Lock()
			defer mu.Unlock()
			var account string
			for _, text := range texts {
				if strings.HasPrefix(text, "Destroying group "+name+":") {
					account = text
				}
			}
			for _, v := range hand {
				if !strings.Contains(account, v+" on host default (not made by this group: left)") {
					return fmt.Errorf("the destroy's account does not name %s as left: %q", v, account)
				}
			}
			if strings.Contains(account, "Volumes kept: none") {
				return fmt.Errorf("the destroy's account says nothing is kept: %q", account)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config: groupConfig(name, 1, diskBlocks(8, "data"), ""),
				Check: func(*terraform.State) error {
					for _, v := range hand {
						sums[v] = makeRandomVolume(t, v)
					}
					return nil
				},
			},
			{
				// The plan sees them and changes nothing: none is the group's.
				Config:   groupConfig(name, 1, diskBlocks(8, "data"), ""),
				PlanOnly: true,
			},
		},
	})
}
