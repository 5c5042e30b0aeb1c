package libvirt

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRetryStuck: a download cut off by its own bound is run again, on and on up to the
// attempts; one that fails otherwise, or whose caller's context ended, is not.
func TestRetryStuck(t *testing.T) {
	errOther := errors.New("no such volume")
	errBound := errors.New("bound")
	cases := map[string]struct {
		stuck     int   // the first runs that hang until their context ends
		fail      error // what the runs after them return
		cancelled bool  // the caller's context has ended
		wantRuns  int
		wantErr   error
	}{
		"first run succeeds":               {wantRuns: 1},
		"one stuck run, then success":      {stuck: 1, wantRuns: 2},
		"two stuck runs, then success":     {stuck: 2, wantRuns: 3},
		"stuck every time":                 {stuck: 3, wantRuns: 3, wantErr: context.DeadlineExceeded},
		"another error is not retried":     {fail: errOther, wantRuns: 1, wantErr: errOther},
		"caller's context ended: no rerun": {stuck: 1, cancelled: true, wantRuns: 1, wantErr: context.Canceled},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.cancelled {
				cancel()
			}
			runs := 0
			err := retryStuck(ctx, 3, time.Millisecond, errBound, func(ctx context.Context) error {
				runs++
				if runs <= c.stuck {
					<-ctx.Done()
					return ctx.Err()
				}
				return c.fail
			})
			if diff := cmp.Diff(c.wantRuns, runs); diff != "" {
				t.Errorf("runs (-want +got):\n%s", diff)
			}
			if !errors.Is(err, c.wantErr) && (err != nil || c.wantErr != nil) {
				t.Errorf("error %v, want %v", err, c.wantErr)
			}
		})
	}
}
