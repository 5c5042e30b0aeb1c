package libvirt

import (
	"sync"

	golibvirt "github.com/digitalocean/go-libvirt"
)

// handles are the domains the last listing saw, by name: a handle names a domain by its UUID,
// and its ID says whether it was running. A write to a member that was just listed (a hot update
// of every member, a destroy of every member) starts from its handle instead of looking the name
// up again, which spares a call per member.
//
// A handle can be stale: the domain was redefined, started or stopped since the listing, by this
// provider or behind its back. Every operation of this backend that changes a domain's
// definition or run state forgets its handle first, and a caller uses a handle only where a
// stale one shows as an error it can take back: libvirt answers "no domain" for a UUID that is
// gone and "operation invalid" for a live change to a domain that no longer runs, and the caller
// then looks the name up and does its work again. A domain started behind Terraform's back since
// the listing gets its persistent definition changed but not the running one; the next refresh
// reads the running one and plans the change again.
type handles = byName[golibvirt.Domain]

// byName is a cache of libvirt handles by object name, safe for concurrent use.
type byName[T any] struct {
	mu sync.Mutex
	m  map[string]T
}

// remember keeps the handles, each under its name.
func (h *byName[T]) remember(name func(T) string, vs ...T) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = make(map[string]T, len(vs))
	}
	for _, v := range vs {
		h.m[name(v)] = v
	}
}

// take returns the handle kept under name, if there is one.
func (h *byName[T]) take(name string) (T, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v, ok := h.m[name]
	return v, ok
}

// forget drops the handle kept under name: it is about to change, or went stale.
func (h *byName[T]) forget(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, name)
}

func domainName(d golibvirt.Domain) string    { return d.Name }
func poolName(p golibvirt.StoragePool) string { return p.Name }

// stale reports whether an error from a call made with a remembered handle may come from the
// handle being out of date rather than from the work itself.
func stale(err error) bool {
	return isCode(err, golibvirt.ErrNoDomain) || isCode(err, golibvirt.ErrOperationInvalid)
}

// withHandle runs fn with the domain's handle: the listed one when there is one (listed is then
// true), else one looked up by name. When fn fails with the listed handle in a way a stale handle
// explains, the handle is forgotten and fn runs again with one looked up now. fn must be safe to
// run twice.
func (b *Backend) withHandle(c conn, name string, fn func(d golibvirt.Domain, listed bool) error) error {
	if d, ok := b.handles.take(name); ok {
		err := fn(d, true)
		if err == nil || !stale(err) {
			return err
		}
		b.handles.forget(name)
	}
	d, err := c.lookup(name)
	if err != nil {
		return err
	}
	return fn(d, false)
}

// poolHandles are storage pools' handles by name, kept for the life of the connection's backend:
// creating a member's volumes looked its pool up again for every volume. A pool defined again
// under the same name gets a new UUID, and a call with the old handle fails with "no storage
// pool"; the caller forgets the handle and the next call looks the pool up again.
type poolHandles = byName[golibvirt.StoragePool]

// poolHandle returns the pool's handle, looked up once.
func (b *Backend) poolHandle(c conn, name string) (golibvirt.StoragePool, error) {
	if p, ok := b.pools.take(name); ok {
		return p, nil
	}
	p, err := c.pool(name)
	if err == nil {
		c.keep(func() { b.pools.remember(poolName, p) })
	}
	return p, err
}
