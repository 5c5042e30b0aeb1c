package reconcile

import (
	"context"
	"errors"
	"fmt"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// Secrets are the write-only values of an apply's configuration that the executor hands to the
// host and nothing else: never in a plan, a record or a log. Only the group's own apply has
// them; a run of another resource (a per-instance config) has none.
type Secrets struct {
	// GraphicsPassword is the console's password (template.graphics.password_wo); "" for none.
	GraphicsPassword string
}

type secretsKey struct{}

// WithSecrets gives the runs under ctx the apply's secrets. They travel in the context because
// they belong to one apply and must reach the executor through every path that defines a
// member (apply, rollback, removal), none of which may store them.
func WithSecrets(ctx context.Context, s Secrets) context.Context {
	return context.WithValue(ctx, secretsKey{}, s)
}

func secretsOf(ctx context.Context) (Secrets, bool) {
	s, ok := ctx.Value(secretsKey{}).(Secrets)
	return s, ok
}

// errNoPassword says why a console's password cannot be set: the run has not got it.
func errNoPassword(name string) error {
	return fmt.Errorf("member %s needs its graphics password (template.graphics.password_wo), which is write-only: only an apply of the group's virt_stateful_group has it. Run terraform apply on the group", name)
}

// graphicsOf is the member's console with its password: the apply's, or, in a run that has none,
// the one the member's domain has now, so that a restart or a replacement by another resource's
// apply keeps it. A member that must get a password no one has is an error, not a console
// without one.
func (x *opRun) graphicsOf(ctx context.Context, desired engine.DesiredInstance) (*backend.Graphics, error) {
	g := desired.Graphics
	if g == nil {
		return nil, nil
	}
	out := &backend.Graphics{Type: g.Type, Listen: g.Listen}
	if g.PasswordVersion == 0 {
		return out, nil
	}
	if s, ok := secretsOf(ctx); ok {
		if s.GraphicsPassword == "" {
			return nil, errNoPassword(x.op.Name)
		}
		out.Password = s.GraphicsPassword
		return out, nil
	}
	if x.keptPassword == "" {
		return nil, errNoPassword(x.op.Name)
	}
	out.Password = x.keptPassword
	return out, nil
}

// keepPassword reads, before any task of the operation runs, the console password the member's
// domain has, when the operation defines the member with a password and the run has none: a
// replacement undefines the domain before it defines the new one, and a member must not be taken
// down for a password that is not there. A member with no domain or no password is refused here,
// with nothing changed.
func (x *opRun) keepPassword(ctx context.Context) error {
	if _, ok := secretsOf(ctx); ok {
		return nil
	}
	needs := false
	for _, t := range x.op.Tasks {
		define := t.Kind == engine.TaskDefine || t.Kind == engine.TaskDefineNext || t.Kind == engine.TaskDefineAgain
		needs = needs || (define && t.Desired.Graphics != nil && t.Desired.Graphics.PasswordVersion > 0)
	}
	if !needs {
		return nil
	}
	pw, err := x.b().GraphicsPassword(ctx, x.op.Name)
	switch {
	case errors.Is(err, backend.ErrNotFound) || (err == nil && pw == ""):
		return x.do("keep the graphics password", errNoPassword(x.op.Name))
	case err != nil:
		return x.do("keep the graphics password", err)
	}
	x.keptPassword = pw
	return nil
}

// graphicsPassword sets the console's password of the apply live (TaskGraphicsPassword).
func (x *opRun) graphicsPassword(ctx context.Context, t engine.Task) error {
	g := t.Desired.Graphics
	if g == nil {
		return x.do("set the graphics password", fmt.Errorf("member %s has no graphics", x.op.Name))
	}
	pw := ""
	if g.PasswordVersion > 0 {
		s, ok := secretsOf(ctx)
		if !ok || s.GraphicsPassword == "" {
			return x.do("set the graphics password", errNoPassword(x.op.Name))
		}
		pw = s.GraphicsPassword
	}
	return x.do("set the graphics password", x.b().SetGraphicsPassword(ctx, x.op.Name, backend.Graphics{Type: g.Type, Listen: g.Listen, Password: pw}))
}
