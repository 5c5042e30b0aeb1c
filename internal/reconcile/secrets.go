package reconcile

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/seed"
)

// Secrets are the write-only values of an apply's configuration that the executor hands to the
// host and nothing else: never in a plan, a record or a log. Only the group's own apply has
// them; a run of another resource (a per-instance config) has none.
type Secrets struct {
	// GraphicsPassword is the console's password (template.graphics.password_wo); "" for none.
	GraphicsPassword string
	// UserData is template.cloud_init.user_data_wo, for the seeds of UserDataVersion (its
	// user_data_wo_version in the same configuration); a UserDataVersion of 0 gives none.
	UserData        string
	UserDataVersion int64
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
// apply, or by the group's apply of a configuration without the value, keeps it. A member that must get a password no one has is an error, not a console
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
	if s, ok := secretsOf(ctx); ok && s.GraphicsPassword != "" {
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
	if s, ok := secretsOf(ctx); ok && s.GraphicsPassword != "" {
		return nil
	}
	// The group's own apply without the value (a configuration that leaves password_wo out while
	// its version is the group's, as generated configuration does) keeps it as another run does.
	needs := false
	for _, t := range x.op.Tasks {
		define := t.Kind == engine.TaskDefine || t.Kind == engine.TaskDefineNext || t.Kind == engine.TaskDefineAgain
		needs = needs || (define && t.Desired.Graphics != nil && t.Desired.Graphics.PasswordVersion > 0)
	}
	if !needs {
		return nil
	}
	pw, err := x.devices().GraphicsPassword(ctx, x.op.Name)
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
	return x.do("set the graphics password", x.devices().SetGraphicsPassword(ctx, x.op.Name, backend.Graphics{Type: g.Type, Listen: g.Listen, Password: pw}))
}

// errNoUserData says why a member's seed cannot be written: the run has not got the write-only
// user data of the version the seed needs, and the member's seed does not hold it.
func errNoUserData(name string, version int64) error {
	return fmt.Errorf("member %s needs a cloud-init seed with the user data of user_data_wo_version %d (template.cloud_init.user_data_wo), which is write-only: only an apply of the group's virt_stateful_group with that version has it, and the member's current seed does not hold it. Nothing of the member was changed. Run terraform apply on the group", name, version)
}

// userDataOf is the user data of the member's seed made from desired: the template's user_data,
// or the write-only user data of desired's version, from the apply that has that version or,
// when the engine said the member's current seed holds it (t.UserDataFromSeed), from that seed
// as keepUserData read it.
func (x *opRun) userDataOf(ctx context.Context, t engine.Task) (string, error) {
	ci := t.Desired.CloudInit
	if ci == nil || ci.UserDataWOVersion == 0 {
		return "", nil
	}
	if s, ok := secretsOf(ctx); ok && s.UserDataVersion == ci.UserDataWOVersion {
		return s.UserData, nil
	}
	if t.UserDataFromSeed && x.keptUserData != nil {
		return *x.keptUserData, nil
	}
	return "", errNoUserData(x.op.Name, ci.UserDataWOVersion)
}

// keepUserData reads, before any task of the operation runs, the user data of the member's
// current seed, when the operation writes a seed with write-only user data that the run has not
// got: a replacement deletes the seed with the old domain, and a member must not be taken down
// for a seed no one can write. A seed task the engine did not allow to keep the seed's user
// data, or a seed that is not there, refuses the operation here, with nothing changed.
func (x *opRun) keepUserData(ctx context.Context) error {
	s, _ := secretsOf(ctx)
	var version int64
	for _, t := range x.op.Tasks {
		if t.Kind != engine.TaskWriteSeed && t.Kind != engine.TaskSwapSeed {
			continue
		}
		ci := t.Desired.CloudInit
		if ci == nil || ci.UserDataWOVersion == 0 || ci.UserDataWOVersion == s.UserDataVersion {
			continue
		}
		if !t.UserDataFromSeed {
			return x.do("keep the cloud-init user data", errNoUserData(x.op.Name, ci.UserDataWOVersion))
		}
		version = ci.UserDataWOVersion
	}
	if version == 0 {
		return nil
	}
	name := engine.SeedVolumeName(x.op.Name)
	img, err := x.seeds().ReadSeed(ctx, x.s.Pool, name)
	if errors.Is(err, backend.ErrNotFound) {
		return x.do("keep the cloud-init user data", fmt.Errorf("%w (the seed volume %s is not in pool %s)", errNoUserData(x.op.Name, version), name, x.s.Pool))
	}
	if err != nil {
		return x.do("keep the cloud-init user data", err)
	}
	ud, err := seed.UserData(img)
	if err != nil {
		return x.do("keep the cloud-init user data", fmt.Errorf("%w (reading seed volume %s: %v)", errNoUserData(x.op.Name, version), name, err))
	}
	x.keptUserData = &ud
	// Never the bytes: only that they were kept, and how many.
	tflog.Info(ctx, "cloud-init user data kept from the member's seed", map[string]any{"instance": x.op.Name, "volume": name, "user_data_wo_version": version, "bytes": len(ud)})
	return nil
}
