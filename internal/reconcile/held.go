package reconcile

import (
	"context"
	"sync"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

// heldRecord is the group record as the holder of the group's lease last wrote it. While the
// lease is held no other writer changes the record (every writer takes the lease first), so the
// changes made under it start from this copy instead of reading the record again from its host:
// an apply reads the record once, when it takes the lease. Nothing is lost if the copy is stale
// (the lease was lost, or a writer raced the renewal): every write is a compare-and-swap on the
// generation (backend.ErrConflict), and a conflict drops the copy, so that the retry reads the
// record from its host.
type heldRecord struct {
	group string
	mu    sync.Mutex
	rec   backend.GroupRecord
	b     backend.GroupRecords
	known bool
}

type heldKey struct{}

// withHeld carries the group's held record in ctx, for the changes made under its lease.
func withHeld(ctx context.Context, h *heldRecord) context.Context {
	return context.WithValue(ctx, heldKey{}, h)
}

// heldOf is the held record of group that ctx carries, nil when none.
func heldOf(ctx context.Context, group string) *heldRecord {
	h, _ := ctx.Value(heldKey{}).(*heldRecord)
	if h == nil || h.group != group {
		return nil
	}
	return h
}

// get returns the record as last written under the lease, when known.
func (h *heldRecord) get() (backend.GroupRecord, backend.GroupRecords, bool) {
	if h == nil {
		return backend.GroupRecord{}, nil, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rec, h.b, h.known
}

// set keeps the record just written (or read) on host b.
func (h *heldRecord) set(rec backend.GroupRecord, b backend.GroupRecords) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rec, h.b, h.known = rec, b, true
}

// drop forgets the copy: the next change reads the record from its host.
func (h *heldRecord) drop() {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.known = false
}
