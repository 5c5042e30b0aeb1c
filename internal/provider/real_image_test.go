package provider

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
)

// The real-image tests (TestAccReal...) boot what users boot: tools/cloud-image.sh's Debian 12
// with systemd, cloud-init (NoCloud) and the QEMU guest agent, under TCG (domain_type = "qemu",
// whatever the host's KVM can do; tools/kvm-check.sh tells). They look from inside the guest, through
// the agent (guest-exec, guest-get-host-name, guest-network-get-interfaces) and the serial console.
// A boot to cloud-init's final stage takes minutes under TCG, so they run apart from the other
// acceptance tests, which would slow down beside them: make test runs a subset of them after the
// rest (testacc-real-short in GNUmakefile chooses which, by name), make testacc-real all of them.
// None skips itself: a test that is not in the subset is not selected, rather than skipped.

// realMemoryMiB is what a real member gets: cloud-init's Python wants a few hundred MiB.
const realMemoryMiB = 512

// realCloudInitLimit bounds the wait for cloud-init's final stage: under TCG on two shared cores a
// boot takes a few minutes (tools/cloud-image.md, Timings); the limit only keeps a guest that never
// gets there from hanging the run.
const realCloudInitLimit = 15 * time.Minute

// cloudInitFinished is the line cloud-init's final stage prints on the console, naming the datasource
// it used (the NoCloud seed on the member's CD-ROM).
var cloudInitFinished = regexp.MustCompile(`Cloud-init v\. \S+ finished at .* Datasource (\S+).*`)

// realInstances reads the group's members with the data source.
const realInstances = `
data "virt_managed_instances" "test" {
  group = virt_stateful_group.test.name
}
`

// realTestPrecheck skips outside an acceptance run.
func realTestPrecheck(t *testing.T) {
	t.Helper()
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	testAccPreCheck(t)
}

// realImage puts the cloud image (tools/cloud-image.sh, built from Debian packages and cached by
// the harness; built here if it is not current) into the test pool as a volume of that name, for
// boot_disk.source_image.
func realImage(t *testing.T, name string) string {
	t.Helper()
	return poolImage(t, name, "../../tools/cloud-image.sh")
}

// realGroup renders a group of the cloud image on the tests' TCG template: realMemoryMiB, the
// console logged to consoleLogDir, and body's further template lines.
func realGroup(name, image string, size int, body, extra string) string {
	body = fmt.Sprintf("    memory_mib = %d\n    console_log_dir = %q\n    boot_disk {\n      source_image = %q\n    }\n", realMemoryMiB, consoleLogDir, image) + body
	return strings.Replace(groupConfig(name, size, body, extra), "memory_mib  = 64\n", "", 1)
}

// freshConsoleLog removes the member's console log an earlier run left (it would be appended to),
// now and when the test ends.
func freshConsoleLog(t *testing.T, member string) {
	logFile := filepath.Join(consoleLogDir, member+".console.log")
	_ = os.Remove(logFile)
	t.Cleanup(func() { _ = os.Remove(logFile) })
}

// waitCloudInit waits until cloud-init's final stage has run in the member's current boot (its
// console says so, boots times in all) and the guest agent answers; it returns the datasource
// cloud-init named, and logs cloud-init's line (with the seconds since the kernel started).
func waitCloudInit(t *testing.T, member string, boots int) (string, error) {
	deadline := time.Now().Add(realCloudInitLimit)
	for {
		log := consoleLog(member)
		if m := cloudInitFinished.FindAllStringSubmatch(log, -1); len(m) >= boots {
			if _, err := agentCommand(member, `{"execute":"guest-ping"}`); err == nil {
				t.Logf("%s: %s", member, strings.TrimSpace(m[len(m)-1][0]))
				return m[len(m)-1][1], nil
			} else if time.Now().After(deadline) {
				return "", fmt.Errorf("%s: cloud-init finished but the guest agent does not answer: %v", member, err)
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("%s's console shows %d of %d cloud-init final stages after %s; it holds:\n%s", member, len(cloudInitFinished.FindAllString(log, -1)), boots, realCloudInitLimit, tail(log, 60))
		}
		time.Sleep(time.Second)
	}
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// agentCommand sends one guest agent command to a domain through the tests' libvirt (virsh
// qemu-agent-command) and returns its answer's "return" value.
func agentCommand(domain, cmd string) (json.RawMessage, error) {
	out, err := exec.Command("virsh", "-c", connectionURI(providerdata.NullString()), "qemu-agent-command", domain, cmd).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("virsh qemu-agent-command %s %s: %v: %s", domain, cmd, err, bytes.TrimSpace(out))
	}
	var answer struct {
		Return json.RawMessage `json:"return"`
	}
	if err := json.Unmarshal(out, &answer); err != nil {
		return nil, fmt.Errorf("agent answer to %s: %v: %s", cmd, err, out)
	}
	return answer.Return, nil
}

// guestOutput runs argv in the guest (guest-exec with its output captured), waits until it exits,
// and returns what it printed; a non-zero exit status is an error quoting both streams.
func guestOutput(domain string, argv ...string) (string, error) {
	args, _ := json.Marshal(argv[1:])
	ret, err := agentCommand(domain, fmt.Sprintf(`{"execute":"guest-exec","arguments":{"path":%q,"arg":%s,"capture-output":true}}`, argv[0], args))
	if err != nil {
		return "", err
	}
	var started struct {
		PID int `json:"pid"`
	}
	if err := json.Unmarshal(ret, &started); err != nil {
		return "", fmt.Errorf("guest-exec %v: %v", argv, err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ret, err := agentCommand(domain, fmt.Sprintf(`{"execute":"guest-exec-status","arguments":{"pid":%d}}`, started.PID))
		if err != nil {
			return "", err
		}
		var st struct {
			Exited   bool   `json:"exited"`
			ExitCode int    `json:"exitcode"`
			OutData  string `json:"out-data"`
			ErrData  string `json:"err-data"`
		}
		if err := json.Unmarshal(ret, &st); err != nil {
			return "", fmt.Errorf("guest-exec-status %v: %v", argv, err)
		}
		if st.Exited {
			stdout, _ := base64.StdEncoding.DecodeString(st.OutData)
			stderr, _ := base64.StdEncoding.DecodeString(st.ErrData)
			if st.ExitCode != 0 {
				return string(stdout), fmt.Errorf("%v in %s exited with %d: %s%s", argv, domain, st.ExitCode, stdout, stderr)
			}
			return string(stdout), nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("%v in %s has not exited after 2 minutes", argv, domain)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// instanceData is what cloud-init wrote about the instance in /run/cloud-init/instance-data.json
// (what `cloud-init query` reads): the standard v1 keys and the datasource's meta-data.
type instanceData struct {
	V1 struct {
		Platform      string `json:"platform"`
		Subplatform   string `json:"subplatform"`
		InstanceID    string `json:"instance_id"`
		LocalHostname string `json:"local_hostname"`
	} `json:"v1"`
	DS struct {
		MetaData map[string]any `json:"meta_data"`
	} `json:"ds"`
}

// guestInstanceData reads cloud-init's instance data in the member.
func guestInstanceData(member string) (instanceData, error) {
	var d instanceData
	out, err := guestOutput(member, "/bin/cat", "/run/cloud-init/instance-data.json")
	if err != nil {
		return d, err
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		return d, fmt.Errorf("%s's /run/cloud-init/instance-data.json: %v", member, err)
	}
	return d, nil
}

// checkNoCloud checks, from inside the member, that cloud-init took its seed: the console's final
// line names the NoCloud datasource, the instance data has the member's instance-id and hostname
// and the metadata keys given, and the guest's hostname is the member's name.
func checkNoCloud(t *testing.T, member string, boots int, meta map[string]string) error {
	ds, err := waitCloudInit(t, member, boots)
	if err != nil {
		return err
	}
	if ds != "DataSourceNoCloud" {
		return fmt.Errorf("cloud-init in %s used datasource %s, want DataSourceNoCloud", member, ds)
	}
	d, err := guestInstanceData(member)
	if err != nil {
		return err
	}
	if d.V1.Platform != "nocloud" || d.V1.InstanceID != member || d.V1.LocalHostname != member {
		return fmt.Errorf("cloud-init in %s reports platform %q, instance-id %q, local-hostname %q; want nocloud, %s, %s", member, d.V1.Platform, d.V1.InstanceID, d.V1.LocalHostname, member, member)
	}
	for k, v := range meta {
		if got, ok := d.DS.MetaData[k]; !ok || got != v {
			return fmt.Errorf("cloud-init in %s has meta-data %s = %v, want %q (meta-data: %v)", member, k, got, v, d.DS.MetaData)
		}
	}
	ret, err := agentCommand(member, `{"execute":"guest-get-host-name"}`)
	if err != nil {
		return err
	}
	var host struct {
		HostName string `json:"host-name"`
	}
	if err := json.Unmarshal(ret, &host); err != nil || host.HostName != member {
		return fmt.Errorf("%s's hostname is %q (%v), want its name", member, host.HostName, err)
	}
	return nil
}

// guestAddresses are the IPv4 addresses the guest holds on the card with that MAC address, as its
// agent reports them.
func guestAddresses(member, mac string) ([]string, error) {
	ret, err := agentCommand(member, `{"execute":"guest-network-get-interfaces"}`)
	if err != nil {
		return nil, err
	}
	var ifaces []struct {
		Name      string `json:"name"`
		HWAddr    string `json:"hardware-address"`
		Addresses []struct {
			Type    string `json:"ip-address-type"`
			Address string `json:"ip-address"`
		} `json:"ip-addresses"`
	}
	if err := json.Unmarshal(ret, &ifaces); err != nil {
		return nil, fmt.Errorf("guest-network-get-interfaces in %s: %v", member, err)
	}
	for _, i := range ifaces {
		if !strings.EqualFold(i.HWAddr, mac) {
			continue
		}
		var out []string
		for _, a := range i.Addresses {
			if a.Type == "ipv4" {
				out = append(out, a.Address)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s has no card with MAC %s (agent: %s)", member, mac, ret)
}

// waitGuestAddress waits until the guest holds an IPv4 address on its card with that MAC
// (networkd may still be configuring it when cloud-init finishes) and returns them all.
func waitGuestAddress(member, mac string) ([]string, error) {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		addrs, err := guestAddresses(member, mac)
		if err == nil && len(addrs) > 0 {
			return addrs, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s holds no IPv4 address on %s after 3 minutes (%v)", member, mac, err)
		}
		time.Sleep(time.Second)
	}
}

// seedAsMounted mounts the member's seed CD-ROM (the volume labelled cidata) in the guest, as
// something in the guest that reads it now would, and returns its meta-data file.
func seedAsMounted(member string) (string, error) {
	return guestOutput(member, "/bin/sh", "-c",
		`set -e; d=$(blkid -l -t LABEL=cidata -o device); mkdir -p /run/tfacc-seed; mount -o ro "$d" /run/tfacc-seed; `+
			`trap 'umount /run/tfacc-seed' EXIT; cat /run/tfacc-seed/meta-data`)
}

// TestAccReal_cloudInit boots the cloud image as a member with cloud_init, metadata and a
// network_config, and proves from inside the guest: cloud-init used the NoCloud datasource with
// the member's instance-id, hostname and metadata keys, ran its user-data, and applied the
// network_config (a static address matched by the member's stable MAC, which the guest holds
// instead of the DHCP address user-mode networking would give). A metadata change is a REFRESH:
// the same boot (same domain id) sees the new meta-data on its seed CD-ROM, mounted after the swap;
// cloud-init itself, which reads its datasource once per boot, keeps what it read at boot. This is
// make test's real-image test.
func TestAccReal_cloudInit(t *testing.T) {
	name := testPrefix + "real"
	member := name + "-1"
	realTestPrecheck(t)
	image := realImage(t, testPrefix+"image-real.qcow2")
	freshConsoleLog(t, member)
	mac := engine.MACAddress(name, member, 0)
	// QEMU's user-mode network is 10.0.2.0/24 and would hand out 10.0.2.15 by DHCP.
	const static = "10.0.2.77"
	networkConfig := fmt.Sprintf("version: 2\nethernets:\n  nic0:\n    match:\n      macaddress: %q\n    addresses: [%s/24]\n    gateway4: 10.0.2.2\n", mac, static)
	userData := "#cloud-config\nruncmd:\n  - [sh, -c, 'echo user-data ran > /run/tfacc-user-data']\n"
	config := func(role string) string {
		return realGroup(name, image, 1, fmt.Sprintf(`    network_interface {
      type = "user"
    }
    metadata = { role = %q, tier = "gold" }
    cloud_init {
      user_data      = %q
      network_config = %q
    }
`, role, userData, networkConfig), "") + realInstances
	}
	var firstID int32
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{
				Config: config("db"),
				Check: func(*terraform.State) error {
					if err := checkNoCloud(t, member, 1, map[string]string{"role": "db", "tier": "gold"}); err != nil {
						return err
					}
					if out, err := guestOutput(member, "/bin/cat", "/run/tfacc-user-data"); err != nil || out != "user-data ran\n" {
						return fmt.Errorf("the user-data's runcmd did not run in %s: %q, %v", member, out, err)
					}
					addrs, err := waitGuestAddress(member, mac)
					if err != nil {
						return err
					}
					if !slices.Equal(addrs, []string{static}) {
						return fmt.Errorf("%s holds %v on %s, want the network_config's %s alone", member, addrs, mac, static)
					}
					d, ok := members(t, name)[member]
					if !ok || d.ID <= 0 {
						return fmt.Errorf("%s is not running", member)
					}
					firstID = d.ID
					return nil
				},
			},
			{
				Config: config("web"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					expectMemberPlan(groupAddr, 0, "planned_action",
						knownvalue.StringExact("REFRESH: metadata role changed")),
				}},
				Check: func(*terraform.State) error {
					if d := members(t, name)[member]; d.ID != firstID {
						return fmt.Errorf("the metadata change restarted %s: id %d -> %d", member, firstID, d.ID)
					}
					// The media swap is done when the apply returns; the guest reads the new seed at
					// its next open of the CD-ROM.
					md, err := seedAsMounted(member)
					if err != nil {
						return err
					}
					if !strings.Contains(md, `role: "web"`) || !strings.Contains(md, "instance-id: \""+member+`"`) {
						return fmt.Errorf("%s's seed CD-ROM, mounted after the change, has meta-data:\n%s\nwant role \"web\" and its instance-id", member, md)
					}
					d, err := guestInstanceData(member)
					if err != nil {
						return err
					}
					if got := d.DS.MetaData["role"]; got != "db" {
						return fmt.Errorf("cloud-init's instance data in %s has role %v after the live change; cloud-init reads its datasource once per boot, so it should still say db", member, got)
					}
					return nil
				},
			},
		},
	})
}

// TestAccReal_defaultNetworkAndGrownRoot boots the cloud image on the network "default" with no
// network_config and a boot disk larger than the image: cloud-init's fallback configuration takes
// a DHCP lease on the first card, which the data source reports, and growpart/resizefs grow the
// root file system to the disk.
func TestAccReal_defaultNetworkAndGrownRoot(t *testing.T) {
	name := testPrefix + "realnet"
	member := name + "-1"
	realTestPrecheck(t)
	image := realImage(t, testPrefix+"image-realnet.qcow2")
	freshConsoleLog(t, member)
	mac := engine.MACAddress(name, member, 0)
	const diskMiB = 3072
	config := strings.Replace(realGroup(name, image, 1, `    network_interface {
      network = "default"
    }
    cloud_init {}
`, ""), "    boot_disk {\n", fmt.Sprintf("    boot_disk {\n      size_mib = %d\n", diskMiB), 1) + realInstances
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: func(*terraform.State) error {
					if err := checkNoCloud(t, member, 1, nil); err != nil {
						return err
					}
					addrs, err := waitGuestAddress(member, mac)
					if err != nil {
						return err
					}
					if !strings.HasPrefix(addrs[0], "192.168.122.") {
						return fmt.Errorf("%s holds %v on the network default, want a lease in 192.168.122.0/24", member, addrs)
					}
					out, err := guestOutput(member, "/bin/df", "-B1", "--output=size", "/")
					if err != nil {
						return err
					}
					var size int64
					if _, err := fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(out), "1B-blocks")), "%d", &size); err != nil {
						return fmt.Errorf("df / in %s: %q: %v", member, out, err)
					}
					// The image's root file system is 1.87 GiB of its 2 GiB; grown, it is most of 3 GiB.
					if size < (diskMiB-256)<<20 {
						return fmt.Errorf("%s's root file system is %d bytes on a %d MiB boot disk: not grown", member, size, diskMiB)
					}
					return nil
				},
			},
			{
				// The data source reads the address the guest holds (from its agent) on refresh.
				RefreshState: true,
				Check: func(s *terraform.State) error {
					addrs, err := guestAddresses(member, mac)
					if err != nil {
						return err
					}
					got := s.RootModule().Resources[managedAddr].Primary.Attributes
					for _, a := range addrs {
						found := false
						for k, v := range got {
							if strings.HasPrefix(k, "instances.0.ip_addresses.") && v == a {
								found = true
							}
						}
						if !found {
							return fmt.Errorf("the data source's ip_addresses for %s lack %s, which the guest holds", member, a)
						}
					}
					return nil
				},
			},
		},
	})
}
