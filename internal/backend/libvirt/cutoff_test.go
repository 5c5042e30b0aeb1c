package libvirt

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestAccCutOff stalls libvirt under a call whose context then ends: the call returns (rather than
// waiting for an answer that never comes) with an error that names the operation and says it was
// cut off, the connection it waited on is closed, and the next call, on a fresh context, works on a
// new connection. A method called after its context ended makes no call at all.
func TestAccCutOff(t *testing.T) {
	requireAcc(t)
	p := startProxy(t, defaultSocket)
	b := connectAcc(t, p.uri())
	if _, err := b.ListDomains(context.Background(), "tfacc-"); err != nil {
		t.Fatalf("list through the proxy: %v", err)
	}

	old, before := b.Raw(), p.connections()
	p.stall()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := b.ListDomains(ctx, "tfacc-"); done <- err }()
	<-p.swallowed // the call is on its way and will not be answered
	cancel()
	err := <-done
	if err == nil {
		t.Fatal("the stalled call succeeded")
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %q does not wrap the context's error", err)
	}
	for _, want := range []string{"list domains on " + p.uri(), "cut off", "the connection was closed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	<-old.Disconnected() // the backend closed the socket the call waited on

	p.resume()
	if _, err := b.ListDomains(context.Background(), "tfacc-"); err != nil {
		t.Fatalf("the next call failed: %v", err)
	}
	if b.Raw() == old {
		t.Error("the backend still uses the connection it cut")
	}
	if got := p.connections() - before; got != 1 {
		t.Errorf("%d new connections, want 1", got)
	}

	// A context that has already ended makes no call: the proxy sees nothing.
	p.stall()
	defer p.resume()
	ended, cancel2 := context.WithCancel(context.Background())
	cancel2()
	err = b.StartDomain(ended, "tfacc-bk-never")
	if err == nil || !strings.Contains(err.Error(), "start domain tfacc-bk-never") || !strings.Contains(err.Error(), "not started") {
		t.Errorf("start after the context ended: %v; want a not-started error naming the operation", err)
	}
	select {
	case <-p.swallowed:
		t.Error("a call was sent after its context had ended")
	default:
	}
}
