package fake

import (
	"sync"
	"time"
)

// clockTimer is one channel of After, and when the clock reaches it.
type clockTimer struct {
	at time.Time
	ch chan time.Time
}

// After returns a channel that receives the clock's time once the clock reached d from now:
// a wait of the fake (WaitStopped) or a test's Advance moves it on. A reconciler's After takes it,
// so that its probes' intervals and time bounds pass when the test says, with no real waiting.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.timers = append(c.timers, clockTimer{at: c.now.Add(d), ch: ch})
	c.cond().Broadcast()
	return ch
}

// Advance moves the clock on by d and fires the timers it reaches.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(max(d, 0))
	kept := c.timers[:0]
	for _, t := range c.timers {
		if t.at.After(c.now) {
			kept = append(kept, t)
			continue
		}
		t.ch <- c.now
	}
	c.timers = kept
}

// WaitTimers blocks until at least n timers wait on the clock, so that a test advances it only
// once what it drives is waiting (no sleep).
func (c *Clock) WaitTimers(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.timers) < n {
		c.cond().Wait()
	}
}

// cond is the clock's condition, made on first use; c.mu is held.
func (c *Clock) cond() *sync.Cond {
	if c.changed == nil {
		c.changed = sync.NewCond(&c.mu)
	}
	return c.changed
}
