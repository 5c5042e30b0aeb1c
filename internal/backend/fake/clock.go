package fake

import (
	"context"
	"time"
)

// Sleep is a wait of d on the clock: it moves the clock on at once instead of taking time, so
// that a reconciler given it as its sleep (reconcile.Reconciler.Sleep) waits for ready members
// in no time, and a test reads how long the waits would have lasted.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.wait(d)
	return nil
}

// VolumeNow is the volume pool/name as it is now, read under the backend's lock: a probe a test
// scripts (Probes) runs while other operations of the wave change the fake.
func (b *Backend) VolumeNow(pool, name string) (Volume, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.Volumes[pool+"/"+name]
	if !ok {
		return Volume{}, false
	}
	return *v, true
}

// DomainNow is the domain as it is now, read under the backend's lock (see VolumeNow).
func (b *Backend) DomainNow(name string) (Domain, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, ok := b.Domains[name]
	if !ok {
		return Domain{}, false
	}
	return *d, true
}
