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
type handles struct {
	mu sync.Mutex
	m  map[string]golibvirt.Domain
}

// remember keeps the handles of listed domains.
func (h *handles) remember(doms []golibvirt.Domain) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = make(map[string]golibvirt.Domain, len(doms))
	}
	for _, d := range doms {
		h.m[d.Name] = d
	}
}

// take returns the domain's handle from the last listing, if there is one.
func (h *handles) take(name string) (golibvirt.Domain, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	d, ok := h.m[name]
	return d, ok
}

// forget drops the domain's handle: it is about to change.
func (h *handles) forget(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, name)
}

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
type poolHandles struct {
	mu sync.Mutex
	m  map[string]golibvirt.StoragePool
}

func (h *poolHandles) forget(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, name)
}

// poolHandle returns the pool's handle, looked up once.
func (b *Backend) poolHandle(c conn, name string) (golibvirt.StoragePool, error) {
	b.pools.mu.Lock()
	p, ok := b.pools.m[name]
	b.pools.mu.Unlock()
	if ok {
		return p, nil
	}
	p, err := c.pool(name)
	if err != nil {
		return p, err
	}
	b.pools.mu.Lock()
	defer b.pools.mu.Unlock()
	if b.pools.m == nil {
		b.pools.m = map[string]golibvirt.StoragePool{}
	}
	b.pools.m[name] = p
	return p, nil
}
