package fake

import (
	"context"
	"fmt"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

// FakeGraphicsPort is the port a running fake domain's console has.
const FakeGraphicsPort = 5900

// SetGraphicsPassword changes the password of the domain's console, in its spec.
func (b *Backend) SetGraphicsPassword(_ context.Context, name string, g backend.Graphics) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.domain("set-graphics-password", name)
	if err != nil {
		return err
	}
	if c := d.Spec.Graphics; c == nil || c.Type != g.Type || c.Listen != g.Listen {
		return fmt.Errorf("set-graphics-password %s: the domain has no %s console on %s", name, g.Type, g.Listen)
	}
	d.Spec.Graphics.Password = g.Password
	return nil
}

// GraphicsPassword is the password of the domain's console, as its spec has it.
func (b *Backend) GraphicsPassword(_ context.Context, name string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.domain("graphics-password", name)
	if err != nil {
		return "", err
	}
	if d.Spec.Graphics == nil {
		return "", nil
	}
	return d.Spec.Graphics.Password, nil
}
