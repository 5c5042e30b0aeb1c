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
