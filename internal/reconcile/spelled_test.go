package reconcile

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

func TestSpelled(t *testing.T) {
	t.Parallel()
	disk := func(dev, src string) engine.DesiredDisk { return engine.DesiredDisk{DeviceName: dev, Source: src} }
	tests := map[string]struct {
		disks   []engine.DesiredDisk
		poolDir string
		config  engine.InstanceConfig
		want    []engine.DesiredDisk
	}{
		"a file of the pool's directory is its volume, by name": {
			disks: []engine.DesiredDisk{disk("sda", "/var/lib/virt/web.img")}, poolDir: "/var/lib/virt",
			want: []engine.DesiredDisk{disk("sda", "web.img")},
		},
		"the directory written with a trailing slash is the same": {
			disks: []engine.DesiredDisk{disk("sda", "/var/lib/virt/web.img")}, poolDir: "/var/lib/virt/",
			want: []engine.DesiredDisk{disk("sda", "web.img")},
		},
		"a config that names the path keeps it": {
			disks: []engine.DesiredDisk{disk("sda", "/var/lib/virt/web.img"), disk("sdb", "/var/lib/virt/logs.img")}, poolDir: "/var/lib/virt",
			config: engine.InstanceConfig{Disks: []engine.ConfigDisk{{DeviceName: "sda", Source: "/var/lib/virt/web.img"}}},
			want:   []engine.DesiredDisk{disk("sda", "/var/lib/virt/web.img"), disk("sdb", "logs.img")},
		},
		"a path of the same name on another device is no reason to keep it": {
			disks: []engine.DesiredDisk{disk("sda", "/var/lib/virt/web.img")}, poolDir: "/var/lib/virt",
			config: engine.InstanceConfig{Disks: []engine.ConfigDisk{{DeviceName: "sdb", Source: "/var/lib/virt/web.img"}}},
			want:   []engine.DesiredDisk{disk("sda", "web.img")},
		},
		"a file elsewhere, or in a directory under the pool's, stays a path": {
			disks: []engine.DesiredDisk{disk("sda", "/srv/web.img"), disk("sdb", "/var/lib/virt/sub/x.img")}, poolDir: "/var/lib/virt",
			want: []engine.DesiredDisk{disk("sda", "/srv/web.img"), disk("sdb", "/var/lib/virt/sub/x.img")},
		},
		"a volume already named stays": {
			disks: []engine.DesiredDisk{disk("sda", "web.img")}, poolDir: "/var/lib/virt",
			want: []engine.DesiredDisk{disk("sda", "web.img")},
		},
		"a pool that is no directory changes nothing": {
			disks: []engine.DesiredDisk{disk("sda", "/var/lib/virt/web.img")},
			want:  []engine.DesiredDisk{disk("sda", "/var/lib/virt/web.img")},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			before := append([]engine.DesiredDisk(nil), tt.disks...)
			if diff := cmp.Diff(tt.want, Spelled(tt.disks, tt.poolDir, tt.config)); diff != "" {
				t.Errorf("spelled (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tt.disks); diff != "" {
				t.Errorf("the disks given changed (-before +after):\n%s", diff)
			}
		})
	}
}
