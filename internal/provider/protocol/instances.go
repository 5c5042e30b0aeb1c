package protocol

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/virtfleet/terraform-provider-virt/internal/lifetime"
)

// The group's `instances` is a map of one object per member, by member name, and Terraform sees it
// as such. The plugin framework, though, does work for every value of a resource at every call: it
// decodes it, looks its attribute up in the schema several times, walks it for defaults,
// write-only attributes, unknown marking and semantic equality, and converts it again for the
// provider's model. At 1,000 members that is 9,000 values and most of the CPU of each provider
// process a plan or apply starts (issue 14), although the provider only ever writes the members
// whole and reads two fields of them.
//
// So between Terraform and the framework sits ProtocolServer, which hands the framework
// `instances` as one string, the JSON of the list of members in their order (engine.SortMembers),
// and gives Terraform the map: the schema it serves has the map, and the values going either way
// are rewritten in their msgpack (or, for state, JSON) encoding without decoding the rest. Null and
// unknown pass as they are: they are encoded the same whatever the type.

// instanceAttribute is one attribute of a member in `instances`.
type instanceAttribute struct {
	Name        string
	Number      bool // an integer; else a string
	Description string
}

// InstanceAttributes are the attributes of each member in `instances`, in the order of the
// schema Terraform is given.
var InstanceAttributes = []instanceAttribute{
	{"current_action", false, "`NONE`, or `REFRESHING`, `RESTARTING`, `RECREATING` or `MOVING` (a move between hosts) while a change interrupted half-way waits for the next apply."},
	{"health", false, "`HEALTHY`, `UNHEALTHY` (its `template.health_check` probe fails), `STARTING` (its probe has not passed yet, inside `auto_healing.initial_delay` after it was created or repaired) or `FAILED` (the hypervisor's view: crashed, shut off or paused while `running = true`): as the host and the probes show the member after a refresh; in a plan, as the apply leaves it (a member the plan repairs is `HEALTHY`); `UNKNOWN` when its host cannot be reached or could not run the probe. `virt_managed_instances` gives the reason, quoting the probe."},
	{"host", false, "The host the member lives on: `default` (the provider's own `uri`) or the name of a provider `host` block. A member changes host only by a move (`distribution_policy`'s `drain`, `hosts` or `rebalance`)."},
	{"index", true, "Index of the member, from 1; 0 for a member named by a per-instance config outside the scheme."},
	{"name", false, "Domain name, `<base_instance_name>-<index>`."},
	{"planned_action", false, "What the plan does to the member and why: `NONE`, `CREATE`, `START`, `STOP`, or an action with its reasons such as `REPLACE: boot image changed`, `REFRESH: metadata role changed` or `MOVE: h2 -> default (cold)`."},
	{"status", false, "`RUNNING`, `STOPPED`, `PAUSED`, `SUSPENDED` or `FAILED`; `UNKNOWN` when its host cannot be reached."},
	{"template_revision", false, "Revision of the template the member was last built or updated from."},
}

const (
	GroupTypeName     = "virt_stateful_group"
	InstancesAttrName = "instances"
)

// NewProtocol6 serves the provider over protocol 6 the way Terraform sees it: the framework's
// server with `instances` rewritten (ProtocolServer).
func NewProtocol6(p provider.Provider) func() (tfprotov6.ProviderServer, error) {
	return NewProtocol6Within(p, nil)
}

// NewProtocol6Within is NewProtocol6 for a plugin process whose calls end with life: the calls
// that read or change hosts run under contexts life.End cancels (main.go ends it when Terraform
// is gone). A nil life is NewProtocol6's.
func NewProtocol6Within(p provider.Provider, life *lifetime.Lifetime) func() (tfprotov6.ProviderServer, error) {
	return func() (tfprotov6.ProviderServer, error) {
		s, err := providerserver.NewProtocol6WithError(p)()
		if err != nil {
			return nil, err
		}
		return &ProtocolServer{ProviderServer: s, Life: life}, nil
	}
}

// ProtocolServer is the framework's server with the group's `instances` given to the framework
// as JSON text and to Terraform as a list (see above). Every other call and value passes as is.
// The calls that read or change hosts are in flight in life until they return.
type ProtocolServer struct {
	tfprotov6.ProviderServer
	Life *lifetime.Lifetime

	groupTypeOnce sync.Once
	groupType     tftypes.Type
	groupTypeErr  error
}

func (s *ProtocolServer) GetProviderSchema(ctx context.Context, req *tfprotov6.GetProviderSchemaRequest) (*tfprotov6.GetProviderSchemaResponse, error) {
	resp, err := s.ProviderServer.GetProviderSchema(ctx, req)
	if err != nil || resp == nil {
		return resp, err
	}
	if sch, ok := resp.ResourceSchemas[GroupTypeName]; ok && sch != nil && sch.Block != nil {
		for i, a := range sch.Block.Attributes {
			if a.Name == InstancesAttrName {
				sch.Block.Attributes[i] = instancesSchemaAttribute(a)
			}
		}
	}
	return resp, nil
}

// instancesSchemaAttribute is `instances` as Terraform sees it: the framework's string attribute
// made a computed map of objects by member name, with the members' attributes described in its
// description.
//
// A map, not a list (the shape before, as a list of nested attributes and then a list of
// objects): Terraform's plan shows a change of a map key by key, in time linear in the members,
// so a member that leaves (abandoned, scaled in) reads as that key removed and one that comes (an
// adoption, a scale-out) as that key added. A list of nested attributes it shows by position: a
// member leaving from the middle of the list shifted every later member up one place and read as
// members renamed and the last one deleted. A list of objects it shows by the longest run of
// unchanged members, which its renderer finds by comparing every member with every other: 1.4 s
// of Terraform's 2 s of CPU in a no-op plan of 1,000 members, and quadratic (issue 47).
func instancesSchemaAttribute(a *tfprotov6.SchemaAttribute) *tfprotov6.SchemaAttribute {
	types := make(map[string]tftypes.Type, len(InstanceAttributes))
	var desc strings.Builder
	desc.WriteString(a.Description)
	// One paragraph: documentation generators put the description on the attribute's line.
	desc.WriteString(" Each member is an object of these attributes.")
	for _, ia := range InstanceAttributes {
		types[ia.Name] = tftypes.String
		if ia.Number {
			types[ia.Name] = tftypes.Number
		}
		fmt.Fprintf(&desc, " `%s`: %s", ia.Name, ia.Description)
	}
	return &tfprotov6.SchemaAttribute{
		Name:            a.Name,
		Type:            tftypes.Map{ElementType: tftypes.Object{AttributeTypes: types}},
		Computed:        true,
		Description:     desc.String(),
		DescriptionKind: tfprotov6.StringKindMarkdown,
		Deprecated:      a.Deprecated,
	}
}

func (s *ProtocolServer) ValidateResourceConfig(ctx context.Context, req *tfprotov6.ValidateResourceConfigRequest) (*tfprotov6.ValidateResourceConfigResponse, error) {
	if req.TypeName == GroupTypeName {
		if err := ToFramework(req.Config); err != nil {
			return nil, err
		}
	}
	return s.ProviderServer.ValidateResourceConfig(ctx, req)
}

func (s *ProtocolServer) UpgradeResourceState(ctx context.Context, req *tfprotov6.UpgradeResourceStateRequest) (*tfprotov6.UpgradeResourceStateResponse, error) {
	if req.TypeName != GroupTypeName {
		return s.ProviderServer.UpgradeResourceState(ctx, req)
	}
	if req.RawState != nil && req.RawState.JSON != nil {
		js, err := InstancesJSONToFramework(req.RawState.JSON)
		if err != nil {
			return nil, fmt.Errorf("read the state of %s: %w", GroupTypeName, err)
		}
		raw := *req.RawState
		raw.JSON = js
		req.RawState = &raw
	}
	resp, err := s.ProviderServer.UpgradeResourceState(ctx, req)
	if err != nil || resp == nil {
		return resp, err
	}
	return resp, ToTerraform(resp.UpgradedState)
}

func (s *ProtocolServer) ReadResource(ctx context.Context, req *tfprotov6.ReadResourceRequest) (*tfprotov6.ReadResourceResponse, error) {
	ctx, done := s.Life.Enter(ctx)
	defer done()
	if req.TypeName != GroupTypeName {
		return s.ProviderServer.ReadResource(ctx, req)
	}
	if err := ToFramework(req.CurrentState); err != nil {
		return nil, err
	}
	resp, err := s.ProviderServer.ReadResource(ctx, req)
	if err != nil || resp == nil {
		return resp, err
	}
	return resp, ToTerraform(resp.NewState)
}

func (s *ProtocolServer) PlanResourceChange(ctx context.Context, req *tfprotov6.PlanResourceChangeRequest) (*tfprotov6.PlanResourceChangeResponse, error) {
	ctx, done := s.Life.Enter(ctx)
	defer done()
	if req.TypeName != GroupTypeName {
		return s.ProviderServer.PlanResourceChange(ctx, req)
	}
	for _, v := range []*tfprotov6.DynamicValue{req.Config, req.PriorState, req.ProposedNewState} {
		if err := ToFramework(v); err != nil {
			return nil, err
		}
	}
	resp, err := s.ProviderServer.PlanResourceChange(ctx, req)
	if err != nil || resp == nil {
		return resp, err
	}
	return resp, ToTerraform(resp.PlannedState)
}

func (s *ProtocolServer) ApplyResourceChange(ctx context.Context, req *tfprotov6.ApplyResourceChangeRequest) (*tfprotov6.ApplyResourceChangeResponse, error) {
	ctx, done := s.Life.Enter(ctx)
	defer done()
	if req.TypeName != GroupTypeName {
		return s.ProviderServer.ApplyResourceChange(ctx, req)
	}
	for _, v := range []*tfprotov6.DynamicValue{req.Config, req.PriorState, req.PlannedState} {
		if err := ToFramework(v); err != nil {
			return nil, err
		}
	}
	resp, err := s.ProviderServer.ApplyResourceChange(ctx, req)
	if err != nil || resp == nil {
		return resp, err
	}
	// The state after the apply says what is left to do, not what the plan said it would do
	// (leftover.go).
	if typ, err := s.frameworkGroupType(ctx); err == nil {
		if only, err := PlannedActionsOnly(typ, req.PlannedState, resp.NewState); err == nil && only {
			resp.UnsafeToUseLegacyTypeSystem = true //nolint:staticcheck // the one way the protocol lets a value differ from its plan, set only where plannedActionsOnly says planned_action alone differs
		}
	}
	return resp, ToTerraform(resp.NewState)
}

// frameworkGroupType is the type of the group's value as the framework has it (instances a
// string), read once from the framework's schema.
func (s *ProtocolServer) frameworkGroupType(ctx context.Context) (tftypes.Type, error) {
	s.groupTypeOnce.Do(func() {
		resp, err := s.ProviderServer.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
		switch {
		case err != nil:
			s.groupTypeErr = err
		case resp == nil || resp.ResourceSchemas[GroupTypeName] == nil:
			s.groupTypeErr = fmt.Errorf("the framework serves no schema of %s", GroupTypeName)
		default:
			s.groupType = resp.ResourceSchemas[GroupTypeName].ValueType()
		}
	})
	return s.groupType, s.groupTypeErr
}

func (s *ProtocolServer) ImportResourceState(ctx context.Context, req *tfprotov6.ImportResourceStateRequest) (*tfprotov6.ImportResourceStateResponse, error) {
	ctx, done := s.Life.Enter(ctx)
	defer done()
	resp, err := s.ProviderServer.ImportResourceState(ctx, req)
	if err != nil || resp == nil {
		return resp, err
	}
	for _, r := range resp.ImportedResources {
		if r != nil && r.TypeName == GroupTypeName {
			if err := ToTerraform(r.State); err != nil {
				return nil, err
			}
		}
	}
	return resp, nil
}

func (s *ProtocolServer) MoveResourceState(ctx context.Context, req *tfprotov6.MoveResourceStateRequest) (*tfprotov6.MoveResourceStateResponse, error) {
	resp, err := s.ProviderServer.MoveResourceState(ctx, req)
	if err != nil || resp == nil || req.TargetTypeName != GroupTypeName {
		return resp, err
	}
	return resp, ToTerraform(resp.TargetState)
}

// ReadDataSource is the framework's, in flight in s.life. (Actions and listings answer with a
// stream that runs after the call returns: they are in flight until their stream ends, see
// InvokeAction and ListResource.)
func (s *ProtocolServer) ReadDataSource(ctx context.Context, req *tfprotov6.ReadDataSourceRequest) (*tfprotov6.ReadDataSourceResponse, error) {
	ctx, done := s.Life.Enter(ctx)
	defer done()
	return s.ProviderServer.ReadDataSource(ctx, req)
}

// PlannedActionsOnly reports whether applied, the group's value an apply returns, differs from
// planned, the value its plan gave, and only in its members' planned_action. Both are in the
// framework's form (instances as JSON text, see instances.go) and of type typ. A value
// the plan left unknown may come back as anything, as Terraform's own check has it.
func PlannedActionsOnly(typ tftypes.Type, planned, applied *tfprotov6.DynamicValue) (bool, error) {
	if planned == nil || applied == nil {
		return false, nil
	}
	pv, err := planned.Unmarshal(typ)
	if err != nil {
		return false, err
	}
	av, err := applied.Unmarshal(typ)
	if err != nil {
		return false, err
	}
	if pv.IsNull() || av.IsNull() || !pv.IsKnown() {
		return false, nil
	}
	// Where the plan said "known after apply", the applied value is taken as planned.
	av, err = tftypes.Transform(av, func(p *tftypes.AttributePath, v tftypes.Value) (tftypes.Value, error) {
		// A path the plan does not have (a member more) is compared as it is.
		if at, rest, walkErr := tftypes.WalkAttributePath(pv, p); walkErr == nil && len(rest.Steps()) == 0 {
			if pl, ok := at.(tftypes.Value); ok && !pl.IsKnown() {
				return tftypes.NewValue(v.Type(), tftypes.UnknownValue), nil
			}
		}
		return v, nil
	})
	if err != nil {
		return false, err
	}
	if pv.Equal(av) {
		return false, nil
	}
	mp, err := withoutPlannedActions(pv)
	if err != nil {
		return false, err
	}
	ma, err := withoutPlannedActions(av)
	if err != nil {
		return false, err
	}
	return mp.Equal(ma), nil
}
