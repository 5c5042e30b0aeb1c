package provider

import (
	"path/filepath"
	"regexp"
	"testing"

	"github.com/virtfleet/terraform-provider-virt/internal/provider/group"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
)

func TestFilesystemSourceProblem(t *testing.T) {
	f := newHostPathFixture(t)
	in := func(name string) string { return filepath.Join(f.dir, name) }
	local := providerdata.HostFacts{Name: "qemu:///system", Local: true}
	remote := providerdata.HostFacts{Name: "qemu+ssh://root@h2/system"}
	cases := []struct {
		name    string
		src     string
		allow   bool
		facts   providerdata.HostFacts
		problem string
		unseen  bool
	}{
		{name: "a host directory", src: in("logs"), facts: local, problem: `host paths need allow_host_paths = true`},
		{name: "a host directory with host paths allowed", src: in("logs"), allow: true, facts: local},
		{name: "a link to a directory with host paths allowed", src: in("logs-link"), allow: true, facts: local},
		{name: "missing: said first, before consent", src: in("nowhere"), facts: local, problem: `does not exist`},
		{name: "missing with host paths allowed", src: in("nowhere"), allow: true, facts: local, problem: `does not exist`},
		{name: "dangling link", src: in("dangling"), facts: local, problem: `does not exist`},
		{name: "/etc", src: "/etc", allow: true, facts: local, problem: `is under /etc`},
		{name: "a link to /etc", src: in("etc-dir"), allow: true, facts: local, problem: `resolves to "/etc"\) is under /etc`},
		{name: "a file", src: in("disk.img"), allow: true, facts: local, problem: `is not a directory`},
		{name: "remote without consent", src: "/srv/share", facts: remote, problem: `allow_host_paths = true`},
		{name: "remote with consent", src: "/srv/share", allow: true, facts: remote, unseen: true},
		{name: "remote /root", src: "/root/x", allow: true, facts: remote, problem: `is under /root`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := group.FilesystemSourceProblem(c.src, c.allow, c.facts)
			switch {
			case c.problem == "" && j.Problem != "":
				t.Errorf("filesystemSourceProblem(%q) refused it: %s", c.src, j.Problem)
			case c.problem != "" && !regexp.MustCompile(c.problem).MatchString(j.Problem):
				t.Errorf("filesystemSourceProblem(%q) = %q, want a problem matching %s", c.src, j.Problem, c.problem)
			case j.Unseen != c.unseen:
				t.Errorf("filesystemSourceProblem(%q) unseen %t, want %t", c.src, j.Unseen, c.unseen)
			}
		})
	}
}
