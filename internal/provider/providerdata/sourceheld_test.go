package providerdata

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSourceHolders(t *testing.T) {
	t.Parallel()
	sources := map[string][]string{
		"a-1": {"/pool/a-1-boot.qcow2", "/pool/a-1-data.qcow2"},
		"b-1": {"/pool/b-1-boot.qcow2", "/pool/b-1-data.qcow2"},
		"vm":  {"/srv/link.img"},
		"cd":  {},
	}
	links := map[string]string{"/srv/link.img": "/srv/disk.img"}
	resolve := func(p string) string {
		if r, ok := links[p]; ok {
			return r
		}
		return p
	}
	cases := map[string]struct {
		file, self string
		resolve    func(string) string
		want       []string
	}{
		"another group's member's volume":          {file: "/pool/b-1-data.qcow2", self: "a-1", want: []string{"b-1"}},
		"the instance's own disk is its own":       {file: "/pool/a-1-data.qcow2", self: "a-1"},
		"another member of the same group":         {file: "/pool/a-1-data.qcow2", self: "a-2", want: []string{"a-1"}},
		"a file no domain has":                     {file: "/pool/free.qcow2", self: "a-1"},
		"a domain's link to the file is the file":  {file: "/srv/disk.img", self: "a-1", resolve: resolve, want: []string{"vm"}},
		"links are not followed on a remote host":  {file: "/srv/disk.img", self: "a-1"},
		"a domain's link as written is still held": {file: "/srv/link.img", self: "a-1", want: []string{"vm"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, sourceHolders(tc.file, tc.self, sources, tc.resolve)); diff != "" {
				t.Errorf("sourceHolders (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSourceHeldDetail(t *testing.T) {
	t.Parallel()
	got := sourceHeldDetail(`preserved_state.disk "logs" source`, "b-1-data.qcow2", "/var/lib/libvirt/virt-pool/b-1-data.qcow2", "default", "a-1", []string{"b-1"})
	want := `preserved_state.disk "logs" source = "b-1-data.qcow2" (the file /var/lib/libvirt/virt-pool/b-1-data.qcow2) is a disk of domain b-1 on host "default" (the provider's uri). A config's disk must be a volume or file that no other domain uses, running or not (QEMU locks it for one writer, and one domain's data is never handed to another): name a volume or path that only a-1 uses, or detach it from b-1 first. Nothing was changed.`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sourceHeldDetail (-want +got):\n%s", diff)
	}
}
