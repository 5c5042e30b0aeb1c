package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// A host that accepts a call and never answers it is, for a reading under a host bound, a host
// that is down: its members are UNKNOWN with the reason, the others are planned as usual, and the
// reading returns. The stalled call never returns at all (the fake's hook blocks until the test
// ends), so what is proven is that the reading abandons it, whatever the backend does with its
// context.
func TestObserve_hostThatNeverAnswersIsUnknownUnderTheHostBound(t *testing.T) {
	t.Parallel()
	for name, stalled := range map[string]struct{ host, op string }{
		"h3 never lists its domains": {"h3", "list"},
		// The default host is read first for the record, which is on h2: it is found there.
		"the default host never reads a group record": {"default", "read-group"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			r, fakes := threeHosts()
			s := spec(6)
			s.Group.Hosts = []string{"h2", "default", "h3"}
			s = change(t, r, s)
			if err := r.Apply(ctx, s); err != nil {
				t.Fatal(err)
			}
			s, err := r.Load(ctx, "db") // with where each member was placed
			if err != nil {
				t.Fatal(err)
			}
			stall := make(chan struct{})
			t.Cleanup(func() { close(stall) })
			fakes[stalled.host].Hook = func(op, _ string) error {
				if op == stalled.op {
					<-stall
				}
				return nil
			}
			// The bound is short so the test ends soon; nothing is asserted of time.
			bctx := WithHostBound(ctx, 50*time.Millisecond)
			if _, err := r.ReadRecord(bctx, "db"); err != nil {
				t.Fatalf("the record, on h2, cannot be read: %v", err)
			}
			if stalled.op != "list" {
				return
			}
			p, o, err := r.Preview(bctx, s)
			if err != nil {
				t.Fatal(err)
			}
			var timeout *HostTimeoutError
			if !errors.As(o.Down["h3"], &timeout) {
				t.Fatalf("h3 is not down for not answering: down %v", o.Down)
			}
			if got, want := o.Down["h3"].Error(), "host h3 did not answer within 50ms (the provider's host_timeout)"; got != want {
				t.Errorf("reason %q, want %q", got, want)
			}
			status := map[string]string{}
			for _, m := range p.Final {
				status[m.Name] = fmt.Sprintf("%s %s", m.Host, m.Status)
			}
			want := map[string]string{
				"db-1": "h2 " + string(engine.StatusRunning), "db-2": "default " + string(engine.StatusRunning), "db-3": "h3 " + string(engine.StatusUnknown),
				"db-4": "h2 " + string(engine.StatusRunning), "db-5": "default " + string(engine.StatusRunning), "db-6": "h3 " + string(engine.StatusUnknown),
			}
			if diff := cmp.Diff(want, status); diff != "" {
				t.Errorf("members (-want +got):\n%s", diff)
			}
			if len(p.Create) != 0 || len(p.Delete) != 0 {
				t.Errorf("a host that did not answer changed the plan: create %v, delete %v", p.Create, p.Delete)
			}
		})
	}
}

// The group's hosts are listed at once, not one after another: a plan over N hosts waits for about
// its slowest host, and hosts that stall cost it one host bound together, not one each. Here h2's
// listing does not answer until h3's has begun, and h3's not until h2's has: read one after the
// other, the first would wait out the bound and be UNKNOWN; read at once, both answer.
func TestObserve_hostsAreListedAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, fakes := threeHosts()
	s := spec(6)
	s.Group.Hosts = []string{"h2", "default", "h3"}
	s = change(t, r, s)
	if err := r.Apply(ctx, s); err != nil {
		t.Fatal(err)
	}
	s, err := r.Load(ctx, "db")
	if err != nil {
		t.Fatal(err)
	}
	begun := map[string]chan struct{}{"h2": make(chan struct{}), "h3": make(chan struct{})}
	other := map[string]string{"h2": "h3", "h3": "h2"}
	for h := range begun {
		var once sync.Once
		fakes[h].Hook = func(op, _ string) error {
			if op != "list" {
				return nil
			}
			once.Do(func() { close(begun[h]) })
			<-begun[other[h]] // the bound abandons this wait when the hosts are read in turn
			return nil
		}
	}
	// Long enough for any machine to start both listings; nothing is asserted of time.
	o, err := r.Observe(WithHostBound(ctx, 10*time.Second), s)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Down) != 0 {
		t.Fatalf("hosts down: %v", o.Down)
	}
	if len(o.Observed) != 6 {
		t.Fatalf("observed %d members, want 6", len(o.Observed))
	}
}

// Without a host bound (a caller that gave none) a reading has no deadline of its own.
func TestHostBound_noneWithoutOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if got := HostBound(ctx); got != 0 {
		t.Fatalf("bound %v", got)
	}
	hctx, cancel := HostContext(ctx)
	defer cancel()
	if _, has := hctx.Deadline(); has {
		t.Fatal("a reading without a host bound has a deadline")
	}
	if got := HostBound(WithHostBound(ctx, 3*time.Second)); got != 3*time.Second {
		t.Fatalf("bound %v", got)
	}
	// A cancelled reading is the cancellation, not a host that did not answer.
	cctx, cancelAll := context.WithCancel(WithHostBound(ctx, time.Hour))
	cancelAll()
	err := readHost(cctx, "h2", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
}
