package reconcile

import (
	"context"
	"testing"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
)

// An error can say whether anything was done before it only if Execute notes the operations it
// starts: an apply with nothing to do notes none, one that creates members notes it.
func TestStarted_notesOperationsExecuteStarts(t *testing.T) {
	t.Parallel()
	b := fake.New()
	r := New(b)
	ctx := WithStarted(context.Background())
	if err := r.Apply(ctx, spec(0)); err != nil {
		t.Fatalf("apply of an empty group: %v", err)
	}
	if Started(ctx) {
		t.Fatal("an apply with nothing to do noted an operation")
	}
	if err := r.Apply(ctx, spec(1)); err != nil {
		t.Fatalf("apply: %v", err)
	}
	if !Started(ctx) {
		t.Fatal("an apply that created a member noted no operation")
	}
	if Started(context.Background()) {
		t.Fatal("a context without a tracker reports an operation")
	}
}
