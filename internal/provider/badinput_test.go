package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

// hostSnapshot is what a refused plan must leave as it found it: every domain, every volume of
// the test pool, every group record, and the owner and mode of the host files the bad inputs
// name.
type hostSnapshot struct {
	domains, volumes, records []string
	files                     map[string]string
}

func snapshotHost(t *testing.T, files []string) hostSnapshot {
	t.Helper()
	b := testLibvirt(t)
	ctx := context.Background()
	var s hostSnapshot
	doms, err := b.ListDomains(ctx, "")
	if err != nil {
		t.Fatalf("list domains: %v", err)
	}
	for _, d := range doms {
		s.domains = append(s.domains, fmt.Sprintf("%s %s %d", d.Name, d.Status, d.ID))
	}
	vols, err := b.ListVolumes(ctx, testPool(), "")
	if err != nil {
		t.Fatalf("list volumes: %v", err)
	}
	for _, v := range vols {
		s.volumes = append(s.volumes, fmt.Sprintf("%s %d", v.Name, v.CapacityBytes))
	}
	if s.records, err = b.GroupRecordNames(""); err != nil {
		t.Fatalf("list group records: %v", err)
	}
	s.files = map[string]string{}
	for _, f := range files {
		var st syscall.Stat_t
		if err := syscall.Stat(f, &st); err != nil {
			s.files[f] = err.Error()
			continue
		}
		s.files[f] = fmt.Sprintf("uid %d gid %d mode %o", st.Uid, st.Gid, st.Mode)
	}
	slices.Sort(s.domains)
	slices.Sort(s.volumes)
	slices.Sort(s.records)
	return s
}

func (s hostSnapshot) diff(o hostSnapshot) string {
	var out []string
	for _, c := range []struct {
		what       string
		was, isNow []string
	}{{"domains", s.domains, o.domains}, {"volumes", s.volumes, o.volumes}, {"group records", s.records, o.records}} {
		if !slices.Equal(c.was, c.isNow) {
			out = append(out, fmt.Sprintf("%s were %v, are %v", c.what, c.was, c.isNow))
		}
	}
	for f, was := range s.files {
		if o.files[f] != was {
			out = append(out, fmt.Sprintf("%s was %s, is %s", f, was, o.files[f]))
		}
	}
	return strings.Join(out, "; ")
}

// TestAccBadInput is the bad-input table: every case is refused at plan (or at validate) with a
// diagnostic naming the attribute, the value and what is allowed, and the host (domains,
// volumes, group records, the owners of the host files named) is as it was.
func TestAccBadInput(t *testing.T) {
	name := testPrefix + "inval"
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	testAccPreCheck(t)

	// Fixtures: an image volume of 64 MiB, a directory inside the pool's directory, a host file
	// outside every pool, and a domain no provider created under the name a member would get.
	image := testPrefix + "ext-inval-image.qcow2"
	extVolumeSized(t, image, 64)
	imagePath := volumePath(t, image)
	poolDir := filepath.Dir(imagePath)
	dir := filepath.Join(poolDir, testPrefix+"ext-inval-dir")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir); refreshPool(t) })
	hostFile := "/srv/" + testPrefix + "inval-host.img"
	if err := os.MkdirAll("/srv", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hostFile, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(hostFile) })
	// A link in a harmless place to a system file: judged by the file it reaches.
	passwdLink := "/srv/" + testPrefix + "inval-passwd-link.img"
	_ = os.Remove(passwdLink)
	if err := os.Symlink("/etc/passwd", passwdLink); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(passwdLink) })
	collide := testPrefix + "invcoll"
	createLegacyDomain(t, collide+"-1", testPrefix+"ext-invcoll.qcow2")
	refreshPool(t)

	group := groupConfig(name, 1, "", "")
	withGroup := func(extra string) string { return group + extra }
	setGroup := func(from, to string) string { return strings.Replace(group, from, to, 1) }
	tmpl := func(body string) string { return groupConfig(name, 1, body, "") }
	policy := func(disk string) string {
		return withGroup(fmt.Sprintf("\nresource \"virt_stateful_policy\" \"bad\" {\n  group = virt_stateful_group.test.name\n%s\n}\n", disk))
	}
	config := func(body string) string {
		return withGroup(fmt.Sprintf("\nresource \"virt_per_instance_config\" \"bad\" {\n  group = virt_stateful_group.test.name\n  name  = %q\n%s\n}\n", name+"-1", body))
	}
	configDisk := func(device, source, more string) string {
		return config(fmt.Sprintf("  preserved_state {\n    disk {\n      device_name = %q\n      source      = %q\n%s    }\n  }\n", device, source, more))
	}
	allowHostPaths := "\nprovider \"virt\" {\n  allow_host_paths = true\n}\n"
	// A group this configuration creates, with a config created in the same apply: its group is
	// named through the new group's resource (planned first) or literally.
	fresh := named(groupConfig(name+"new", 1, "", ""), "fresh")
	freshConfig := func(group, source string) string {
		return withGroup(fresh + fmt.Sprintf("\nresource \"virt_per_instance_config\" \"bad\" {\n  group = %s\n  name  = %q\n  preserved_state {\n    disk {\n      device_name = \"data\"\n      source      = %q\n    }\n  }\n}\n", group, name+"new-1", source))
	}
	bootImage := func(path string, size int) string {
		return tmpl(fmt.Sprintf("    boot_disk {\n      source_image = %q\n      size_mib     = %d\n    }\n", path, size))
	}

	cases := []struct {
		name, config, err string
	}{
		// The group's own attributes.
		{"name not a DNS label", setGroup(fmt.Sprintf("name        = %q", name), `name        = "Bad_Name"`), `must be a DNS label`},
		{"name too long", setGroup(fmt.Sprintf("name        = %q", name), fmt.Sprintf("name        = %q", strings.Repeat("a", 64))), `must be a DNS label`},
		{"base_instance_name not a DNS label", setGroup("target_size", "base_instance_name = \"x_y\"\n  target_size"), `base_instance_name`},
		{"target_size negative", groupConfig(name, -1, "", ""), `value must be between 0 and 10000, got: -1`},
		{"target_size huge", groupConfig(name, 9999999999, "", ""), `value must be between 0 and 10000, got: 9999999999`},
		{"vcpu zero", tmpl("    vcpu = 0"), `value must be at least 1, got: 0`},
		{"memory too small", setGroup("memory_mib  = 64", "memory_mib  = 8"), `value must be at least 16, got: 8`},
		{"domain_type unknown", setGroup(`domain_type = "qemu"`, `domain_type = "xen"`), `must be one of: \["kvm" "qemu"\]`},
		{"running not a bool", setGroup("target_size = 1", "target_size = 1\n  running = \"maybe\""), `running`},
		{"shutdown_timeout not a duration", groupConfig(name, 1, "", `  shutdown_timeout = "forever"`), `shutdown_timeout`},
		{"shutdown_timeout negative", groupConfig(name, 1, "", `  shutdown_timeout = "-1s"`), `shutdown_timeout`},
		{"update type unknown", groupConfig(name, 1, "", "  update_policy {\n    type = \"SOMETIMES\"\n  }"), `PROACTIVE`},
		{"minimal_action unknown", groupConfig(name, 1, "", "  update_policy {\n    minimal_action = \"REBOOT\"\n  }"), `got: "REBOOT"`},
		{"most_disruptive_allowed_action unknown", groupConfig(name, 1, "", "  update_policy {\n    most_disruptive_allowed_action = \"KILL\"\n  }"), `got: "KILL"`},
		{"minimal_action above the allowed action", groupConfig(name, 1, "", "  update_policy {\n    minimal_action = \"REPLACE\"\n    most_disruptive_allowed_action = \"REFRESH\"\n  }"), `minimal_action REPLACE is more disruptive than\s+most_disruptive_allowed_action REFRESH`},
		{"max_unavailable zero", groupConfig(name, 1, "", "  update_policy {\n    max_unavailable = \"0\"\n  }"), `max_unavailable`},
		{"max_unavailable over 100%", groupConfig(name, 1, "", "  update_policy {\n    max_unavailable = \"150%\"\n  }"), `max_unavailable`},
		{"max_unavailable not a number", groupConfig(name, 1, "", "  update_policy {\n    max_unavailable = \"abc\"\n  }"), `max_unavailable`},
		{"canary negative", groupConfig(name, 1, "", "  update_policy {\n    canary = \"-1\"\n  }"), `canary(.|\s)*"-1"(.|\s)*at\s+least\s+0`},
		{"canary over 100%", groupConfig(name, 1, "", "  update_policy {\n    canary = \"150%\"\n  }"), `canary(.|\s)*"150%"(.|\s)*from\s+0%\s+to\s+100%`},
		{"canary with OPPORTUNISTIC", groupConfig(name, 1, "", "  update_policy {\n    type   = \"OPPORTUNISTIC\"\n    canary = \"1\"\n  }"), `update_policy.canary\s+=\s+"1"\s+holds\s+a\s+rollout`},
		{"disk device_name repeated", tmpl(diskBlocks(8, "data") + diskBlocks(16, "data")), `device_name "data" appears in more than one block`},
		{"disk device_name boot", tmpl(diskBlocks(8, "boot")), `must be none of: \["boot" "nvram"\]`},
		{"disk device_name invalid", tmpl(diskBlocks(8, "Data Disk")), `device_name`},
		{"disk size zero", tmpl(diskBlocks(0, "data")), `value must be at least 1, got: 0`},
		{"boot size zero", tmpl("    boot_disk {\n      size_mib = 0\n    }\n"), `value must be at least 1, got: 0`},
		{"source_image relative", bootImage("image.qcow2", 1024), `must be an absolute path`},
		{"console_log_dir relative", tmpl("    console_log_dir = \"logs\"\n"), `console_log_dir[\s\S]*must be an absolute path, got: logs`},
		{"console_log_dir /etc", tmpl("    console_log_dir = \"/etc\"\n"), `console_log_dir on host default: "/etc" is outside libvirt's log directory /var/log/libvirt`},
		{"console_log_dir /etc with host paths allowed", tmpl("    console_log_dir = \"/etc\"\n") + allowHostPaths, `console_log_dir on host default: "/etc" is under /etc`},
		{"console_log_dir climbing out of libvirt's logs", tmpl("    console_log_dir = \"/var/log/libvirt/../../../etc\"\n") + allowHostPaths, `console_log_dir on host default: "/etc" is under /etc`},
		{"console_log_dir a host directory", tmpl("    console_log_dir = \"/srv\"\n"), `"/srv" is outside libvirt's log directory[\s\S]*allow_host_paths = true`},
		{"user_data of 8 MiB", tmpl("    cloud_init {\n      user_data = format(\"%8388608s\", \"x\")\n    }\n"), `user_data[\s\S]*take 8388608 bytes \(8.0 MiB\) in all \(cloud_init.user_data 8388608 bytes[\s\S]*more than the 131072 bytes \(128.0 KiB\) allowed`},
		{"uri with scheme http", group + "\nprovider \"virt\" {\n  uri = \"http://127.0.0.1/system\"\n}\n", `uri = "http://127.0.0.1/system": scheme "http" is not a libvirt URI scheme the provider speaks: use qemu`},
		{"host uri with scheme https", group + "\nprovider \"virt\" {\n  host {\n    name = \"h9\"\n    uri  = \"https://ops:pw@h9/system\"\n  }\n}\n", `host\[0\].uri = "https://ops:xxxxx@h9/system": scheme "https" is not`},
		{"timeouts create negative", groupConfig(name, 1, "", "  timeouts {\n    create = \"-1s\"\n  }"), `timeouts.create = "-1s": "-1s" is too short: the least allowed is more than 0s`},
		{"timeouts delete zero", groupConfig(name, 1, "", "  timeouts {\n    delete = \"0s\"\n  }"), `timeouts.delete = "0s": "0s" is too short`},
		{"timeouts update absurd", groupConfig(name, 1, "", "  timeouts {\n    update = \"2000000h\"\n  }"), `timeouts.update = "2000000h": "2000000h" is too long: the most allowed is 7 days`},
		{"initial_delay absurd", groupConfig(name, 1, "", "  auto_healing {\n    initial_delay = \"2000000h\"\n  }"), `initial_delay = "2000000h": "2000000h" is too long: the most allowed is 7 days \("168h"\)`},
		{"backoff negative", groupConfig(name, 1, "", "  auto_healing {\n    backoff = \"-5m\"\n  }"), `backoff = "-5m": "-5m" is too short`},
		{"shutdown_timeout absurd", groupConfig(name, 1, "", `  shutdown_timeout = "48h"`), `shutdown_timeout = "48h": "48h" is too long: the most allowed is 24h`},
		{"preserve_timeout absurd", groupConfig(name, 1, "", "  failed_instance_preservation {\n    preserve_timeout = \"87600h\"\n  }"), `preserve_timeout = "87600h": "87600h" is too long: the most allowed is 30 days`},
		{"cloud_init unknown attribute", tmpl("    cloud_init {\n      meta_data = \"x\"\n    }\n"), `An argument named "meta_data" is not expected here`},
		{"network interface without network", tmpl("    network_interface {\n      type = \"network\"\n    }"), `needs\s+network,\s+the\s+name`},
		{"user interface with a network", tmpl("    network_interface {\n      type    = \"user\"\n      network = \"default\"\n    }"), `takes no network`},
		{"network interface type unknown", tmpl("    network_interface {\n      type = \"bridge\"\n    }"), `must be one of: \["network" "user"\]`},
		// What only the host can tell.
		{"pool missing", setGroup(fmt.Sprintf("pool        = %q", testPool()), `pool        = "tfacc-nopool"`), `pool "tfacc-nopool" does not exist`},
		{"network missing", tmpl("    network_interface {\n      network = \"tfacc-nonet\"\n    }"), `network "tfacc-nonet" does not\s+exist`},
		{"source_image missing", bootImage(filepath.Join(poolDir, testPrefix+"inval-missing.qcow2"), 1024), `"` + filepath.Join(poolDir, testPrefix+"inval-missing.qcow2") + `"\s+does\s+not\s+exist`},
		{"source_image missing with host paths allowed", bootImage("/srv/"+testPrefix+"inval-typo.qcow2", 1024) + allowHostPaths, `"/srv/` + testPrefix + `inval-typo.qcow2"\s+does\s+not\s+exist`},
		{"source_image a directory", bootImage(dir, 1024), `is a directory`},
		{"source_image a system file", bootImage("/etc/shadow", 1024), `"/etc/shadow" is not a volume of any storage pool`},
		{"source_image a host file", bootImage(hostFile, 1024), `is not a volume of any storage pool`},
		{"source_image a system file with host paths allowed", bootImage("/etc/shadow", 1024) + allowHostPaths, `under /etc`},
		{"source_image an unclean path with host paths allowed", bootImage("/srv/../etc/shadow", 1024) + allowHostPaths, `"/srv/../etc/shadow" is under /etc`},
		{"source_image a link to /etc/passwd with host paths allowed", bootImage(passwdLink, 1024) + allowHostPaths, `source_image on host "default" \(the provider's uri\): "` + passwdLink + `" \(which resolves to "/etc/passwd"\) is under /etc`},
		{"boot disk smaller than its image", bootImage(imagePath, 16), `size_mib = 16, but source_image .* has a virtual size of 64 MiB`},
		{"too many vCPUs", tmpl("    vcpu = 100000"), `vcpu = 100000, but a qemu domain on this host has at most`},
		{"more memory than the host", setGroup("memory_mib  = 64", "memory_mib  = 1000000000"), `memory_mib = 1000000000, but the host has`},
		{"members' names taken by a domain no provider created", strings.ReplaceAll(group, name, collide), `domains ` + collide + `-1, which no provider created`},
		{"member names taken by another group", withGroup(named(strings.Replace(group, fmt.Sprintf("name        = %q", name), fmt.Sprintf("name        = %q\n  base_instance_name = %q", name+"-twin", name), 1), "twin")),
			`domains ` + name + `-1 \(a member of group ` + name + `\) have the names its members would get`},
		{"the same group declared twice", withGroup(named(group, "again")), `group ` + name + ` already exists`},
		// The stateful policy.
		{"policy delete_rule unknown", policy("  disk {\n    device_name = \"data\"\n    delete_rule = \"SOMETIMES\"\n  }"), `got: "SOMETIMES"`},
		{"policy device_name invalid", policy("  disk {\n    device_name = \"Data Disk\"\n  }"), `device_name`},
		{"policy device_name repeated", policy("  disk {\n    device_name = \"data\"\n  }\n  disk {\n    device_name = \"data\"\n    delete_rule = \"NEVER\"\n  }"), `appears in more than one block`},
		{"policy disk not in the template", policy("  disk {\n    device_name = \"nope\"\n  }"), `device_name "nope" is not a disk of group ` + name + `'s template, whose disks are: none`},
		{"policy disk not in the template, created with its group", withGroup(fresh + "\nresource \"virt_stateful_policy\" \"bad\" {\n  group = virt_stateful_group.fresh.name\n  disk {\n    device_name = \"nope\"\n  }\n}\n"),
			`device_name "nope" is not a disk of group ` + name + `new's template, whose disks are: none`},
		// Per-instance configs.
		{"config name invalid", strings.Replace(config(""), fmt.Sprintf("name  = %q", name+"-1"), `name  = "Bad_Name"`, 1), `name`},
		{"config minimal_action above the allowed action", config("  minimal_action = \"REPLACE\"\n  most_disruptive_allowed_action = \"NONE\""), `minimal_action REPLACE is more disruptive than\s+most_disruptive_allowed_action NONE`},
		{"config minimal_action unknown", config("  minimal_action = \"REBOOT\""), `got: "REBOOT"`},
		{"config source relative with a slash", configDisk("data", "a/b.qcow2", ""), `must be a volume name without "/" or an absolute path`},
		{"config source missing", configDisk("data", testPrefix+"inval-missing.qcow2", ""), `there is no volume\s+"` + testPrefix + `inval-missing.qcow2" in storage pool`},
		{"config source missing, created with its group", freshConfig("virt_stateful_group.fresh.name", testPrefix+"inval-missing.qcow2"), `there is no volume\s+"` + testPrefix + `inval-missing.qcow2" in storage pool\s+"` + testPool() + `"`},
		{"config source a host file, created with its group named literally", freshConfig(fmt.Sprintf("%q", name+"new"), hostFile), `is not a volume of any storage pool`},
		{"config source a system file", configDisk("data", "/etc/shadow", ""), `"/etc/shadow" is not a volume of any storage pool`},
		{"config source a host file", configDisk("data", hostFile, ""), `is not a volume of any storage pool`},
		{"config boot swapped for a host file", configDisk("boot", hostFile, ""), `is not a volume of any storage pool`},
		{"config source a directory", configDisk("data", dir, ""), `is a directory`},
		{"config source a system file with host paths allowed", configDisk("data", "/etc/shadow", "") + allowHostPaths, `under /etc`},
		{"config source /proc with host paths allowed", configDisk("data", "/proc/self/mem", "") + allowHostPaths, `under /proc`},
		{"config source /dev/mem with host paths allowed", configDisk("data", "/dev/mem", "") + allowHostPaths, `"/dev/mem" (is a character device|does not exist)`},
		{"config source a character device with host paths allowed", configDisk("data", "/dev/null", "") + allowHostPaths, `"/dev/null" is a character device, not a disk`},
		{"config source a link to /etc/passwd with host paths allowed", configDisk("data", passwdLink, "") + allowHostPaths, `"` + passwdLink + `" \(which resolves to "/etc/passwd"\) is under /etc`},
		{"config metadata too large", config(`  preserved_state {
    metadata = { big = format("%20000s", "x") }
  }
`), `preserved_state.metadata[\s\S]*20003 bytes \(19.5 KiB\)[\s\S]*more than the 16384 bytes \(16.0 KiB\) allowed`},
		{"config mode unknown", configDisk("data", image, "      mode = \"RO\"\n"), `got: "RO"`},
		{"config delete_rule unknown", configDisk("data", image, "      delete_rule = \"ALWAYS\"\n"), `got: "ALWAYS"`},
		{"config device_name repeated", config(fmt.Sprintf("  preserved_state {\n    disk {\n      device_name = \"data\"\n      source = %q\n    }\n    disk {\n      device_name = \"data\"\n      source = %q\n      mode = \"READ_ONLY\"\n    }\n  }\n", image, image)), `appears in more than one block`},
	}
	if len(cases) < 50 {
		t.Fatalf("the table has %d cases; it is meant to have at least 50", len(cases))
	}
	files := []string{"/etc/shadow", "/etc/passwd", hostFile, passwdLink, imagePath, dir}
	var before hostSnapshot
	steps := []resource.TestStep{{
		Config: group,
		Check: func(*terraform.State) error {
			before = snapshotHost(t, files)
			return nil
		},
	}}
	for _, c := range cases {
		steps = append(steps, resource.TestStep{
			PreConfig: func() {
				if d := before.diff(snapshotHost(t, files)); d != "" {
					t.Fatalf("before %q: the host changed: %s", c.name, d)
				}
			},
			Config:      c.config,
			ExpectError: regexpMust(c.err),
		})
	}
	steps = append(steps, resource.TestStep{
		Config: group,
		Check: func(*terraform.State) error {
			if d := before.diff(snapshotHost(t, files)); d != "" {
				return fmt.Errorf("after the last case: the host changed: %s", d)
			}
			return nil
		},
	})
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps:                    steps,
	})
}

// extVolumeSized makes a volume of the test pool that the test removes when it ends.
func extVolumeSized(t *testing.T, name string, mib int64) {
	t.Helper()
	b := testLibvirt(t)
	if _, err := b.EnsureVolume(context.Background(), backend.VolumeSpec{Pool: testPool(), Name: name, SizeMiB: mib}); err != nil {
		t.Fatalf("create volume %s: %v", name, err)
	}
	t.Cleanup(func() { _ = b.DeleteVolume(context.Background(), testPool(), name) })
}

// refreshPool makes libvirt read the pool's directory again, after the test put or removed files.
func refreshPool(t *testing.T) {
	t.Helper()
	// The refresh waits out other tests' volume builds (RefreshPool), for a bounded time.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := testLibvirt(t).RefreshPool(ctx, testPool()); err != nil {
		t.Fatalf("refresh pool %s: %v", testPool(), err)
	}
}
