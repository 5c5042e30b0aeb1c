package lifetime

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"
)

func TestWatch_closesWhenTheParentIsGone(t *testing.T) {
	t.Parallel()
	answers := make(chan bool)
	ticks := make(chan time.Time)
	gone := Watch(context.Background(), func() bool { return <-answers }, ticks)
	// Two ticks find the parent there: the channel stays open.
	for range 2 {
		ticks <- time.Time{}
		answers <- false
		select {
		case <-gone:
			t.Fatal("closed while the parent is there")
		default:
		}
	}
	ticks <- time.Time{}
	answers <- true
	<-gone // closed: the test would hang otherwise
}

func TestLifetime_endCancelsCallsInFlightAndWaitsForThem(t *testing.T) {
	t.Parallel()
	l := New()
	ctx, done := l.Enter(context.Background())
	released := make(chan struct{})
	go func() {
		// An apply: it sees its context end and gives back its lease on the way out.
		<-ctx.Done()
		close(released)
		done()
	}()
	never := make(chan time.Time)
	if !l.End(never) {
		t.Fatal("End did not wait for the call in flight")
	}
	select {
	case <-released:
	default:
		t.Fatal("End returned before the call in flight returned")
	}
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatalf("the call's context: %v", ctx.Err())
	}
}

func TestLifetime_endGivesUpAfterTheGrace(t *testing.T) {
	t.Parallel()
	l := New()
	_, done := l.Enter(context.Background()) // a call that never returns
	defer done()
	grace := make(chan time.Time, 1)
	grace <- time.Time{}
	if l.End(grace) {
		t.Fatal("End reported every call returned")
	}
}

func TestLifetime_endWithNothingInFlight(t *testing.T) {
	t.Parallel()
	l := New()
	_, done := l.Enter(context.Background())
	done()
	if !l.End(make(chan time.Time)) {
		t.Fatal("End waited with nothing in flight")
	}
	// A call Terraform makes after the end starts cancelled.
	ctx, done := l.Enter(context.Background())
	defer done()
	if ctx.Err() == nil {
		t.Fatal("a call after the end runs")
	}
}

func TestLifetime_nilPassesContextsThrough(t *testing.T) {
	t.Parallel()
	var l *Lifetime
	ctx := context.Background()
	got, done := l.Enter(ctx)
	done()
	if got != ctx {
		t.Fatal("a nil Lifetime changed the context")
	}
}

func TestParentGone(t *testing.T) {
	t.Parallel()
	if _, ok := ParentGone(1); ok {
		t.Fatal("watches init")
	}
	gone, ok := ParentGone(os.Getppid())
	if !ok || gone() {
		t.Fatalf("this test's own parent: ok %v, gone %v", ok, ok && gone())
	}
	other, ok := ParentGone(os.Getppid() + 1) // not this process's parent
	if !ok || !other() {
		t.Fatal("a pid that is not the parent is not gone")
	}
}
