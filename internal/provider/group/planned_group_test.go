package group

import (
	"testing"

	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
)

// TestPlannedGroupMadeFor: a config created with its group may name the volumes the group's
// create makes for its instance (its boot volume, its template disks'); any other source is
// checked on the host.
func TestPlannedGroupMadeFor(t *testing.T) {
	t.Parallel()
	known := providerdata.PlannedGroup{Pool: "p", Disks: []string{"data", "logs"}}
	unknown := providerdata.PlannedGroup{Pool: "p"}
	cases := map[string]struct {
		g      providerdata.PlannedGroup
		source string
		want   bool
	}{
		"a template disk's volume":           {g: known, source: "db-1-data.qcow2", want: true},
		"the boot volume":                    {g: known, source: "db-1-boot.qcow2", want: true},
		"a disk the template does not have":  {g: known, source: "db-1-other.qcow2"},
		"another member's volume":            {g: known, source: "db-2-data.qcow2"},
		"a user's volume":                    {g: known, source: "logs.qcow2"},
		"an absolute path":                   {g: known, source: "/var/lib/virt/db-1-data.qcow2"},
		"template unknown: a volume of db-1": {g: unknown, source: "db-1-anything.qcow2", want: true},
		"template unknown: another member's": {g: unknown, source: "db-10-data.qcow2"},
		"template unknown: another format":   {g: unknown, source: "db-1-data.raw"},
		"no template disks: the boot volume": {g: providerdata.PlannedGroup{Pool: "p", Disks: []string{}}, source: "db-1-boot.qcow2", want: true},
		"no template disks: a disk's volume": {g: providerdata.PlannedGroup{Pool: "p", Disks: []string{}}, source: "db-1-data.qcow2"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := c.g.MadeFor("db-1")(c.source); got != c.want {
				t.Errorf("madeFor(db-1)(%q) with disks %v = %v, want %v", c.source, c.g.Disks, got, c.want)
			}
		})
	}
}
