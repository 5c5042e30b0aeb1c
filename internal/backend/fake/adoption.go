package fake

import (
	"context"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

func (b *Backend) Adoption(_ context.Context, name string) (*backend.Adoption, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.domain("read-adoption", name)
	if err != nil || d.Adoption == nil {
		return nil, err
	}
	a := *d.Adoption
	return &a, nil
}

func (b *Backend) SetAdoption(_ context.Context, name string, a backend.Adoption) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.domain("set-adoption", name)
	if err != nil {
		return err
	}
	d.Adoption = &a
	return nil
}

func (b *Backend) ClearAdoption(_ context.Context, name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.domain("clear-adoption", name)
	if err != nil {
		return err
	}
	d.Adoption = nil
	return nil
}
