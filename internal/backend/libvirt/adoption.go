package libvirt

import (
	"context"
	"fmt"

	golibvirt "github.com/digitalocean/go-libvirt"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/store"
)

// Adoption reads the virt_domain resource's element in the domain's persistent metadata, by
// its namespace: one call, which libvirt answers with the element alone or "no metadata".
func (b *Backend) Adoption(ctx context.Context, name string) (*backend.Adoption, error) {
	var doc string
	none := false
	err := b.do(ctx, "read adoption of domain", name, func(c conn) error {
		return b.withHandle(c, name, func(d golibvirt.Domain, _ bool) error {
			var err error
			doc, err = c.l.DomainGetMetadata(d, int32(golibvirt.DomainMetadataElement), golibvirt.OptString{store.DomainNamespace}, golibvirt.DomainAffectConfig)
			if isCode(err, golibvirt.ErrNoDomainMetadata) {
				none = true
				return nil
			}
			return wrap("read adoption of domain", name, err)
		})
	})
	if err != nil || none {
		return nil, err
	}
	a, err := store.ParseAdoption(doc)
	if err != nil {
		return nil, fmt.Errorf("read adoption of domain %s: %w", name, err)
	}
	if a == nil {
		return nil, nil
	}
	return &backend.Adoption{Owner: a.Owner, Since: a.Since}, nil
}

// SetAdoption writes the adoption element, live when running. libvirt keeps one element per
// namespace, so it replaces an earlier adoption and leaves the member record (another
// namespace) alone; writing it again after a lost connection is safe.
func (b *Backend) SetAdoption(ctx context.Context, name string, a backend.Adoption) error {
	doc, err := store.EncodeAdoption(store.Adoption{Owner: a.Owner, Since: a.Since}, false)
	if err != nil {
		return fmt.Errorf("build adoption metadata for %s: %w", name, err)
	}
	return b.setMetadata(ctx, "set adoption of domain", name, golibvirt.DomainMetadataElement, golibvirt.OptString{doc},
		golibvirt.OptString{store.DomainPrefix}, golibvirt.OptString{store.DomainNamespace})
}

// ClearAdoption removes the adoption element, by its namespace alone, live when running.
func (b *Backend) ClearAdoption(ctx context.Context, name string) error {
	return b.setMetadata(ctx, "remove adoption of domain", name, golibvirt.DomainMetadataElement, nil, nil, golibvirt.OptString{store.DomainNamespace})
}
