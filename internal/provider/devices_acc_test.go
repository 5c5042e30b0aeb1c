package provider

import (
	"bytes"
	"context"
	"crypto/des"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"libvirt.org/go/libvirtxml"
)

// The devices' acceptance tests run members with no OS (a blank boot disk: SeaBIOS finds nothing
// to boot and idles), which is enough for what libvirt and QEMU do with the devices: the console
// listens and asks for its password, virtiofsd runs for a share. Whether a guest mounts the share
// is the real image's test (real_image_test.go): the tiny guest has no virtiofs module.

// domainDef reads a member's definition from libvirt: live when it runs, with the console's
// password only when secure.
func domainDef(t *testing.T, name string, flags golibvirt.DomainXMLFlags) (libvirtxml.Domain, string, error) {
	l := testLibvirt(t).Raw()
	var dom libvirtxml.Domain
	d, err := l.DomainLookupByName(name)
	if err != nil {
		return dom, "", err
	}
	doc, err := l.DomainGetXMLDesc(d, flags)
	if err != nil {
		return dom, "", err
	}
	err = dom.Unmarshal(doc)
	return dom, doc, err
}

// noSecret fails a plan or a state whose JSON holds the secret anywhere.
type noSecret struct{ secret string }

func (c noSecret) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	resp.Error = c.check("the plan", req.Plan)
}

func (c noSecret) CheckState(_ context.Context, req statecheck.CheckStateRequest, resp *statecheck.CheckStateResponse) {
	resp.Error = c.check("the state", req.State)
}

func (c noSecret) check(what string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if bytes.Contains(b, []byte(c.secret)) {
		return fmt.Errorf("%s holds the write-only password %q", what, c.secret)
	}
	return nil
}

// vncLogin logs in to the VNC server on 127.0.0.1:port with password (RFB 3.8, VNC
// authentication): nil when the server accepts it.
func vncLogin(port int, password string) error {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 10*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	// A guard against a server that never answers, not a measure of anything.
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	version := make([]byte, 12)
	if _, err := io.ReadFull(c, version); err != nil {
		return fmt.Errorf("read the server's version: %w", err)
	}
	if _, err := c.Write([]byte("RFB 003.008\n")); err != nil {
		return err
	}
	var n [1]byte
	if _, err := io.ReadFull(c, n[:]); err != nil || n[0] == 0 {
		return fmt.Errorf("the server offers no security type (%v)", err)
	}
	types := make([]byte, n[0])
	if _, err := io.ReadFull(c, types); err != nil {
		return err
	}
	if !bytes.Contains(types, []byte{2}) {
		return fmt.Errorf("the server does not ask for a VNC password (security types %v)", types)
	}
	if _, err := c.Write([]byte{2}); err != nil {
		return err
	}
	challenge := make([]byte, 16)
	if _, err := io.ReadFull(c, challenge); err != nil {
		return err
	}
	// VNC's DES key is the password's first 8 bytes, each with its bits reversed.
	key := make([]byte, 8)
	copy(key, password)
	for i, b := range key {
		var r byte
		for j := range 8 {
			r |= (b >> j & 1) << (7 - j)
		}
		key[i] = r
	}
	block, err := des.NewCipher(key)
	if err != nil {
		return err
	}
	response := make([]byte, 16)
	block.Encrypt(response[:8], challenge[:8])
	block.Encrypt(response[8:], challenge[8:])
	if _, err := c.Write(response); err != nil {
		return err
	}
	var result uint32
	if err := binary.Read(c, binary.BigEndian, &result); err != nil {
		return err
	}
	if result != 0 {
		return fmt.Errorf("the server refused the password (security result %d)", result)
	}
	return nil
}

// consolePort is the port the data source shows for the member, checked against the one in its
// live definition.
func consolePort(t *testing.T, s *terraform.State, member string) (int, error) {
	ds := s.RootModule().Resources["data.virt_managed_instances.test"]
	if ds == nil {
		return 0, fmt.Errorf("no data source in the state")
	}
	shown, err := strconv.Atoi(ds.Primary.Attributes["instances.0.graphics_port"])
	if err != nil || shown <= 0 {
		return 0, fmt.Errorf("the data source shows graphics_port %q", ds.Primary.Attributes["instances.0.graphics_port"])
	}
	dom, _, err := domainDef(t, member, 0)
	if err != nil {
		return 0, err
	}
	if len(dom.Devices.Graphics) != 1 {
		return 0, fmt.Errorf("%s has consoles %+v, want one", member, dom.Devices.Graphics)
	}
	var port int
	var autoport, listen string
	switch g := dom.Devices.Graphics[0]; {
	case g.VNC != nil:
		port, autoport, listen = g.VNC.Port, g.VNC.AutoPort, g.VNC.Listen
	case g.Spice != nil:
		port, autoport, listen = g.Spice.Port, g.Spice.AutoPort, g.Spice.Listen
	default:
		return 0, fmt.Errorf("%s has a console %+v, neither VNC nor SPICE", member, g)
	}
	if port != shown || autoport != "yes" || listen != "127.0.0.1" {
		return 0, fmt.Errorf("%s's console: port %d autoport %q listen %q; the data source shows port %d", member, port, autoport, listen, shown)
	}
	return shown, nil
}

// checkSpice checks that the running member's console is SPICE, on the port the data source
// shows.
func checkSpice(t *testing.T, member string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		if _, err := consolePort(t, s, member); err != nil {
			return err
		}
		dom, _, err := domainDef(t, member, 0)
		if err != nil {
			return err
		}
		if dom.Devices.Graphics[0].Spice == nil {
			return fmt.Errorf("%s's console is not SPICE", member)
		}
		return nil
	}
}

// checkConsole checks the console of a running member: the data source's port is the one in its
// live definition, the password it takes is password, another is refused, and the definition
// libvirt shows without secrets does not hold it.
func checkConsole(t *testing.T, member, password, refused string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		port, err := consolePort(t, s, member)
		if err != nil {
			return err
		}
		if err := vncLogin(port, password); err != nil {
			return fmt.Errorf("login to %s's console with the configured password: %w", member, err)
		}
		if err := vncLogin(port, refused); err == nil {
			return fmt.Errorf("%s's console accepts the password %q too", member, refused)
		}
		_, doc, err := domainDef(t, member, golibvirt.DomainXMLInactive)
		if err != nil {
			return err
		}
		if strings.Contains(doc, password) {
			return fmt.Errorf("%s's definition shows the password without a secure read", member)
		}
		return nil
	}
}

// checkGroupRecordHasNo fails when the group's record on the host holds the secret.
func checkGroupRecordHasNo(t *testing.T, group, secret string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		rec, err := testLibvirt(t).ReadGroupRecord(context.Background(), group)
		if err != nil {
			return err
		}
		if bytes.Contains(rec.Data, []byte(secret)) {
			return fmt.Errorf("the record of group %s holds the write-only password", group)
		}
		return nil
	}
}

func checkRNG(t *testing.T, member string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		dom, _, err := domainDef(t, member, 0)
		if err != nil {
			return err
		}
		if len(dom.Devices.RNGs) != 1 || dom.Devices.RNGs[0].Model != "virtio" || dom.Devices.RNGs[0].Backend == nil ||
			dom.Devices.RNGs[0].Backend.Random == nil || dom.Devices.RNGs[0].Backend.Random.Device != "/dev/urandom" {
			return fmt.Errorf("%s has rng devices %+v, want one virtio-rng from /dev/urandom", member, dom.Devices.RNGs)
		}
		return nil
	}
}

func consoleBody(password string, version int) string {
	return fmt.Sprintf(`
    graphics {
      type                = "vnc"
      password_wo         = %q
      password_wo_version = %d
    }
    rng {}`, password, version)
}

func consoleConfig(name, password string, version int) string {
	return groupConfig(name, 1, consoleBody(password, version), "") + `
data "virt_managed_instances" "test" {
  group = virt_stateful_group.test.name
}
`
}

// TestAccStatefulGroup_graphicsAndRNG: a member's VNC console listens on the port the data source
// shows, takes the write-only password, which is in no plan, state or record; a new
// password_wo_version sets the new password live (same QEMU process); the rng device is there.
func TestAccStatefulGroup_graphicsAndRNG(t *testing.T) {
	name := testPrefix + "console"
	member := name + "-1"
	ids := map[string]int32{}
	withConfig := groupConfig(name, 1, consoleBody("pw-two", 2), "") +
		pic("m1", member, nil, map[string]string{"role": "restarted"}, `  minimal_action = "RESTART"`) + `
data "virt_managed_instances" "test" {
  group      = virt_stateful_group.test.name
  depends_on = [virt_per_instance_config.m1]
}
`
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{
				Config:            consoleConfig(name, "pw-one", 1),
				ConfigPlanChecks:  resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{noSecret{"pw-one"}}},
				ConfigStateChecks: []statecheck.StateCheck{noSecret{"pw-one"}},
				Check: resource.ComposeTestCheckFunc(
					checkMembers(t, name, "RUNNING", member),
					checkConsole(t, member, "pw-one", "pw-two"),
					checkRNG(t, member),
					checkGroupRecordHasNo(t, name, "pw-one"),
					func(*terraform.State) error {
						for n, d := range members(t, name) {
							ids[n] = d.ID
						}
						return nil
					},
				),
			},
			{
				Config: consoleConfig(name, "pw-two", 2),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					noSecret{"pw-two"},
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
					expectMemberPlan(groupAddr, 0, "planned_action",
						knownvalue.StringExact("REFRESH: graphics password_wo_version 1 -> 2")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{noSecret{"pw-two"}},
				Check: resource.ComposeTestCheckFunc(
					func(*terraform.State) error {
						if d := members(t, name)[member]; d.ID != ids[member] {
							return fmt.Errorf("%s has domain id %d, had %d: the new password restarted it", member, d.ID, ids[member])
						}
						return nil
					},
					checkConsole(t, member, "pw-two", "pw-one"),
					checkGroupRecordHasNo(t, name, "pw-two"),
					func(*terraform.State) error { ids[member] = members(t, name)[member].ID; return nil },
				),
			},
			{
				// The record keeps graphics, rng and the password's version, never the password.
				ResourceName:                         groupAddr,
				ImportState:                          true,
				ImportStateId:                        name,
				ImportStateVerify:                    true,
				ImportStateVerifyIdentifierAttribute: "name",
				ImportStateVerifyIgnore:              []string{"instances." + name + "-1.planned_action"},
			},
			{
				// A per-instance config's apply restarts the member without the group's
				// write-only password: the member keeps the one its domain has.
				Config: withConfig,
				Check: resource.ComposeTestCheckFunc(
					func(*terraform.State) error {
						if d := members(t, name)[member]; d.ID == ids[member] || d.Status != "RUNNING" {
							return fmt.Errorf("%s has domain id %d (had %d), status %s: the config's apply did not restart it", member, d.ID, ids[member], d.Status)
						}
						return nil
					},
					checkConsole(t, member, "pw-two", "pw-one"),
					func(*terraform.State) error { ids[member] = members(t, name)[member].ID; return nil },
				),
			},
			{
				// The config stays: the change is the group's alone.
				Config: strings.Replace(withConfig, `"vnc"`, `"spice"`, 1),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					expectMemberPlan(groupAddr, 0, "planned_action",
						knownvalue.StringExact("RESTART: graphics type vnc -> spice")),
				}},
				Check: resource.ComposeTestCheckFunc(
					func(*terraform.State) error {
						if d := members(t, name)[member]; d.ID == ids[member] {
							return fmt.Errorf("%s still has domain id %d: the new console type did not restart it", member, d.ID)
						}
						return nil
					},
					checkSpice(t, member),
				),
			},
		},
	})
}

func shareConfig(name, source string, running bool) string {
	return "\nprovider \"virt\" {\n  allow_host_paths = true\n}\n" + groupConfig(name, 1, diskBlocks(16, "data")+fmt.Sprintf(`
    filesystem {
      source = %q
      target = "content"
    }`, source), fmt.Sprintf("  running = %t", running))
}

// checkShare checks the member's definition has the share from source, with the shared memory
// virtiofs needs, and, when it runs, that virtiofsd serves that directory.
func checkShare(t *testing.T, member, source string, running bool) resource.TestCheckFunc {
	return func(*terraform.State) error {
		dom, _, err := domainDef(t, member, 0)
		if err != nil {
			return err
		}
		fs := dom.Devices.Filesystems
		if len(fs) != 1 || fs[0].Driver == nil || fs[0].Driver.Type != "virtiofs" || fs[0].Source == nil || fs[0].Source.Mount == nil ||
			fs[0].Source.Mount.Dir != source || fs[0].Target == nil || fs[0].Target.Dir != "content" {
			return fmt.Errorf("%s has filesystems %+v, want one virtiofs share of %s tagged content", member, fs, source)
		}
		mb := dom.MemoryBacking
		if mb == nil || mb.MemorySource == nil || mb.MemorySource.Type != "memfd" || mb.MemoryAccess == nil || mb.MemoryAccess.Mode != "shared" {
			return fmt.Errorf("%s has memory backing %+v, want shared memfd", member, mb)
		}
		if !running {
			return nil
		}
		out, _ := exec.Command("pgrep", "-a", "virtiofsd").Output()
		if !strings.Contains(string(out), "source="+source) {
			return fmt.Errorf("no virtiofsd serves %s for the running %s; virtiofsd processes:\n%s", source, member, out)
		}
		return nil
	}
}

// TestAccStatefulGroup_filesystemShare: a share is in the member's definition and virtiofsd
// serves it while the member runs; changing it restarts the member (same UUID, a new QEMU
// process) and keeps its data disk's bytes.
func TestAccStatefulGroup_filesystemShare(t *testing.T) {
	name := testPrefix + "share"
	member := name + "-1"
	data := member + "-data.qcow2"
	first, second, third := t.TempDir(), t.TempDir(), t.TempDir()
	sums, uuids := checksums{}, domainUUIDs{}
	ids := map[string]int32{}
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{
				Config: shareConfig(name, first, false),
				Check:  resource.ComposeTestCheckFunc(checkShare(t, member, first, false), uuids.record(t, name)),
			},
			{
				PreConfig: func() { sums.write(t, data, 0x3c) },
				Config:    shareConfig(name, second, true),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeTestCheckFunc(
					checkMembers(t, name, "RUNNING", member),
					checkShare(t, member, second, true),
					sums.same(t, data),
					uuids.check(t, name, member, true),
					func(*terraform.State) error { ids[member] = members(t, name)[member].ID; return nil },
				),
			},
			{
				Config: shareConfig(name, third, true),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
					expectMemberPlan(groupAddr, 0, "planned_action",
						knownvalue.StringExact("RESTART: filesystem share content changed")),
				}},
				Check: resource.ComposeTestCheckFunc(
					checkMembers(t, name, "RUNNING", member),
					checkShare(t, member, third, true),
					sums.same(t, data),
					uuids.check(t, name, member, true),
					func(*terraform.State) error {
						if id := members(t, name)[member].ID; id == ids[member] {
							return fmt.Errorf("%s still has domain id %d: the changed share did not restart it", member, id)
						}
						return nil
					},
				),
			},
			{
				ResourceName:                         groupAddr,
				ImportState:                          true,
				ImportStateId:                        name,
				ImportStateVerify:                    true,
				ImportStateVerifyIdentifierAttribute: "name",
				ImportStateVerifyIgnore:              []string{"instances." + name + "-1.planned_action"},
			},
		},
	})
}

// TestAccDevices_badInput: bad devices are refused at plan, naming the attribute, and the group
// they would have changed is left as it was.
func TestAccDevices_badInput(t *testing.T) {
	name := testPrefix + "devbad"
	dir := t.TempDir()
	good := groupConfig(name, 1, "", "  running = false")
	bad := func(body string, allow bool) string {
		cfg := groupConfig(name, 1, body, "  running = false")
		if allow {
			cfg = "\nprovider \"virt\" {\n  allow_host_paths = true\n}\n" + cfg
		}
		return cfg
	}
	shareTagged := func(source, target, more string) string {
		return fmt.Sprintf("\n    filesystem {\n      source = %q\n      target = %q\n%s    }", source, target, more)
	}
	share := func(source, more string) string { return shareTagged(source, "share", more) }
	uuids := domainUUIDs{}
	steps := []resource.TestStep{{Config: good, Check: uuids.record(t, name)}}
	for _, c := range []struct {
		body  string
		allow bool
		err   string
	}{
		{share(dir, ""), false, `filesystem "share" source on host default: "` + regexp.QuoteMeta(dir) + `" is a host directory, and host paths need allow_host_paths = true`},
		{share(dir+"/nowhere", ""), true, `does not exist`},
		{share("/etc", ""), true, `is under /etc`},
		{share(dir, "      read_only = true\n"), true, `read_only = true: libvirt 9.0 refuses a read-only virtiofs share`},
		{share(dir, "") + share(dir, ""), true, `Duplicate target`},
		{shareTagged(dir, "bad tag", ""), true, `must be 1 to 36 letters`},
		{"\n    graphics {\n      type   = \"vnc\"\n      listen = \"localhost\"\n    }", false, `"localhost" is not an IP address`},
		{"\n    graphics {\n      listen = \"127.0.0.1\"\n    }", false, `graphics.type is required`},
		{"\n    graphics {\n      type        = \"vnc\"\n      password_wo = \"123456789\"\n      password_wo_version = 1\n    }", false, `a VNC password has at most 8`},
		{"\n    graphics {\n      type        = \"vnc\"\n      password_wo = \"pw\"\n    }", false, `password_wo_version[\s\S]*must be specified|Missing Attribute`},
		{"\n    graphics {\n      type = \"rdp\"\n    }", false, `value must be one of`},
	} {
		// Terraform wraps messages: a space in the pattern matches any run of white space.
		steps = append(steps, resource.TestStep{Config: bad(c.body, c.allow), ExpectError: regexp.MustCompile(strings.ReplaceAll(c.err, " ", `\s+`))})
	}
	steps = append(steps, resource.TestStep{
		Config:           good,
		ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
		Check:            uuids.check(t, name, name+"-1", true),
	})
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps:                    steps,
	})
}
