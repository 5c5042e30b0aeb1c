package fake

import (
	"context"
	"sync"
	"time"
)

// Clock is a fake clock that waits move on instead of taking time, so that a test reads how long
// a run would have taken without a timing threshold. The fake runs its calls one at a time, so
// the clock is exact for a run of one worker; concurrent waits would add up.
type Clock struct {
	mu  sync.Mutex
	now time.Time
	// timers are the channels of After that the clock has not reached yet (clock.go).
	timers []clockTimer
	// changed is broadcast when a timer is added (WaitTimers).
	changed *sync.Cond
}

// NewClock returns a clock that reads start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now reads the clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// wait is a wait of d from now.
func (c *Clock) wait(d time.Duration) {
	c.Advance(d)
}

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
