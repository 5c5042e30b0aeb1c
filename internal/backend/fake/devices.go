// This file holds the fake's backend.Devices: disks attached, grown and detached, and the
// console's password.

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

func (b *Backend) AttachDisk(_ context.Context, name string, disk backend.Disk) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.domain("attach", name)
	if err != nil {
		return err
	}
	d.Spec.Disks = append(d.Spec.Disks, disk)
	return nil
}

func (b *Backend) DetachDisk(_ context.Context, name, device string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.domain("detach", name)
	if err != nil {
		return err
	}
	var keep []backend.Disk
	for _, x := range d.Spec.Disks {
		if x.DeviceName != device {
			keep = append(keep, x)
		}
	}
	d.Spec.Disks = keep
	return nil
}

func (b *Backend) GrowDisk(_ context.Context, name, _ string, disk backend.Disk, sizeMiB int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("grow", name); err != nil {
		return err
	}
	v, ok := b.Volumes[disk.Pool+"/"+disk.Volume]
	if !ok {
		return fmt.Errorf("grow %s: %w", disk.Volume, backend.ErrNotFound)
	}
	v.SizeMiB = sizeMiB
	return nil
}
