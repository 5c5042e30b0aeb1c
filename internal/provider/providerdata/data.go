package providerdata

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/user"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// ProviderData is what Configure hands to every resource and data source.
type ProviderData struct {
	// Reconciler holds the host map (Reconciler.Host): every call to a host goes through it.
	Reconciler *reconcile.Reconciler
	// AllowHostPaths lets disk sources be host files outside every storage pool.
	AllowHostPaths bool
	// HostTimeout is how long a plan, a refresh, a data source read or an apply's reading waits
	// on one host before that host is UNKNOWN (host_timeout; ReadingHosts gives it to them).
	HostTimeout time.Duration
	locks       sync.Map // group name -> *sync.Mutex
	observed    observations
	creating    sync.Map // group name -> PlannedGroup, for the groups this plan creates
	pools       poolPlans
	retained    retainedHere
	// Commands tells which Terraform command a call comes from (destroying.go).
	Commands *commandDetector
}

// lockGroup serialises the changes this provider instance makes to one group.
func (d *ProviderData) lockGroup(name string) func() {
	m, _ := d.locks.LoadOrStore(name, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// ConfigureData hands the provider's data to a resource or data source; nil before the
// provider is configured.
func ConfigureData(providerData any, diags *diag.Diagnostics) *ProviderData {
	if providerData == nil {
		return nil
	}
	data, ok := providerData.(*ProviderData)
	if !ok {
		diags.AddError("Unexpected provider data", fmt.Sprintf("expected *ProviderData, got %T", providerData))
	}
	return data
}

// HolderName names this run in the leases it takes, for the person who finds one in their way.
func HolderName(run string) string {
	who := "terraform"
	if u, err := user.Current(); err == nil {
		who = u.Username
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("%s@%s, provider pid %d, run %s", who, host, os.Getpid(), run)
}

// NewRunID names one run of the provider.
func NewRunID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
