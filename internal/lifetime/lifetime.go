// Package lifetime ends the plugin process when the Terraform process that started it is gone.
//
// Terraform starts the provider as a child process and stops it when it is done with it. A
// Terraform killed with SIGKILL stops nothing: the plugin went on serving nobody, for ever
// (issue 43). A plugin that notices its parent is gone cancels the work it has in flight, so that
// an apply gives its lease back through its usual path, waits a bounded grace for that work to
// end, and exits. PR_SET_PDEATHSIG alone would not do: it kills the plugin at once, with its lease
// held until it expires.
package lifetime

import (
	"context"
	"sync"
	"time"
)

// Watch closes the returned channel the first time gone reports true; gone is asked once per
// tick of ticks (a time.Ticker's channel in the plugin; a test's own channel in tests). It stops
// asking when ctx ends.
func Watch(ctx context.Context, gone func() bool, ticks <-chan time.Time) <-chan struct{} {
	out := make(chan struct{})
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticks:
				if gone() {
					close(out)
					return
				}
			}
		}
	}()
	return out
}

// Lifetime is the plugin's work in flight: the calls Terraform made that have not returned.
// Each runs under a context that End cancels.
type Lifetime struct {
	root   context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	inFlight int
	// idle is closed when the Lifetime has ended and no call is in flight.
	idle  chan struct{}
	ended bool
}

// New is a Lifetime with no call in flight.
func New() *Lifetime {
	root, cancel := context.WithCancel(context.Background())
	return &Lifetime{root: root, cancel: cancel, idle: make(chan struct{})}
}

// Enter is ctx for one call of Terraform's, ended also when the Lifetime ends; done is called
// when the call returns. A nil Lifetime (a provider served in a test process, or for a debugger)
// gives ctx as it is.
func (l *Lifetime) Enter(ctx context.Context) (context.Context, func()) {
	if l == nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		// Terraform is gone: nothing new starts.
		cancel()
		return ctx, func() {}
	}
	stop := context.AfterFunc(l.root, cancel)
	l.inFlight++
	return ctx, func() {
		stop()
		cancel()
		l.mu.Lock()
		defer l.mu.Unlock()
		l.inFlight--
		if l.ended && l.inFlight == 0 {
			close(l.idle)
		}
	}
}

// End cancels every call in flight and waits until they have all returned (each gives back what
// it holds on its way out: an apply its lease), or until grace fires, whichever is first. It
// reports whether every call returned.
func (l *Lifetime) End(grace <-chan time.Time) bool {
	l.mu.Lock()
	if !l.ended {
		l.ended = true
		if l.inFlight == 0 {
			close(l.idle)
		}
	}
	l.mu.Unlock()
	l.cancel()
	select {
	case <-l.idle:
		return true
	case <-grace:
		return false
	}
}
