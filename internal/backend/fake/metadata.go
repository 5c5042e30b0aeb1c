// This file holds the fake's backend.Metadata: the member record, the adoption record and the
// description written into a domain.

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

func (b *Backend) SetRecord(_ context.Context, name string, rec backend.Record) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.domain("set-record", name)
	if err != nil {
		return err
	}
	d.Spec.Record, d.Unmanaged = rec, false
	return nil
}

func (b *Backend) ClearRecord(_ context.Context, name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.domain("clear-record", name)
	if err != nil {
		return err
	}
	d.Spec.Record, d.Unmanaged = backend.Record{}, true
	return nil
}

func (b *Backend) SetDescription(_ context.Context, name, description string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.domain("set-description", name)
	if err != nil {
		return err
	}
	d.Spec.Description = description
	return nil
}
