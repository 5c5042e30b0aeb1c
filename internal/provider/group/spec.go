package group

import (
	"context"
	"encoding/json"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/store"
)

// encodeGroupSpec renders the configuration part of the model for the members' records.
func (m *StatefulGroupModel) encodeGroupSpec(ctx context.Context, diags *diag.Diagnostics) string {
	t := m.Template
	s := store.ResourceSpec{
		Base:       m.BaseInstanceName.ValueString(),
		Pool:       m.Pool.ValueString(),
		TargetSize: m.TargetSize.ValueInt64(),
		Running:    m.Running.ValueBool(),
		Shutdown:   providerdata.OptString(m.ShutdownTimeout),
		Template: store.ResourceTemplate{
			DomainType:    t.DomainType.ValueString(),
			VCPU:          t.VCPU.ValueInt64(),
			MemoryMiB:     t.MemoryMiB.ValueInt64(),
			Metadata:      providerdata.StringMap(ctx, t.Metadata, diags),
			Labels:        providerdata.StringMap(ctx, t.Labels, diags),
			Description:   providerdata.OptString(t.Description),
			ConsoleLogDir: providerdata.OptString(t.ConsoleLogDir),
		},
	}
	if c := t.CloudInit; c != nil {
		s.Template.CloudInit = &store.ResourceCloudInit{UserData: providerdata.OptString(c.UserData), NetworkConfig: providerdata.OptString(c.NetworkConfig), UserDataWOVersion: providerdata.OptInt64(c.UserDataWOVersion)}
	}
	s.Template.HealthCheck = t.HealthCheck.resourceSpec(ctx, diags)
	t.hardwareSpec(&s.Template)
	for _, d := range t.Disk {
		s.Template.Disks = append(s.Template.Disks, store.Disk{DeviceName: d.DeviceName.ValueString(), SizeMiB: d.SizeMiB.ValueInt64()})
	}
	for _, n := range t.NetworkInterface {
		s.Template.NICs = append(s.Template.NICs, store.NIC{Network: n.Network.ValueString(), Type: n.Type.ValueString(), Address: n.Address.ValueString()})
	}
	if t.BootDisk != nil {
		s.BootDisk = &store.ResourceBootDisk{SourceImage: providerdata.OptString(t.BootDisk.SourceImage), SizeMiB: t.BootDisk.SizeMiB.ValueInt64()}
	}
	if m.ScaleInPolicy != nil {
		order := m.scaleInOrder()
		s.ScaleIn = &order
	}
	if m.Distribution != nil {
		s.Hosts = m.hosts(context.Background(), diags)
		s.Drain = m.drained(context.Background(), diags)
		s.Rebalance, s.ColdMoves = m.rebalance(), m.coldMoves()
	}
	s.AdoptExisting = m.AdoptExisting.ValueBool()
	s.Abandon = m.abandoned(context.Background(), diags)
	if a := m.AutoHealing.engineAutoHealing(); a != nil {
		s.AutoHealing = &store.AutoHealing{InitialDelay: a.InitialDelay, Backoff: a.Backoff, MaxConsecutiveFailures: a.MaxConsecutiveFailures}
	}
	if fp := m.Preservation.enginePreservation(); fp != nil {
		s.Preservation = &store.FailedPreservation{AutoPreserveFailedMax: fp.AutoPreserveFailedMax, PreserveTimeout: fp.PreserveTimeout}
	}
	if u := m.UpdatePolicy; u != nil {
		s.UpdatePolicy = &store.ResourceUpdatePolicy{
			Type: u.Type.ValueString(), MinimalAction: u.MinimalAction.ValueString(),
			MostDisruptive: u.MostDisruptiveAllowedAction.ValueString(), MaxUnavailable: store.FlexString(u.MaxUnavailable.ValueString()),
			MinReady: providerdata.OptString(u.MinReady), ReadyTimeout: providerdata.OptString(u.ReadyTimeout), OnFailure: providerdata.OptString(u.OnFailure),
			Snapshot: u.Snapshot.storedSnapshot(),
			Canary:   providerdata.OptString(u.Canary),
		}
	}
	b, err := json.Marshal(s)
	if err != nil {
		diags.AddError("Cannot encode the group's configuration", err.Error())
	}
	return string(b)
}

// decodeGroupSpec fills the configuration part of the model from a member's record.
func (m *StatefulGroupModel) decodeGroupSpec(raw string, diags *diag.Diagnostics) {
	var s store.ResourceSpec
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		diags.AddError("Cannot read the group's configuration from libvirt", "The provider metadata of a member cannot be decoded: "+err.Error())
		return
	}
	m.BaseInstanceName = types.StringValue(s.Base)
	m.Pool = types.StringValue(s.Pool)
	m.TargetSize = types.Int64Value(s.TargetSize)
	m.Running = types.BoolValue(s.Running)
	m.ShutdownTimeout = types.StringValue(engine.DefaultShutdownTimeoutText)
	if s.Shutdown != nil {
		m.ShutdownTimeout = types.StringValue(*s.Shutdown)
	}
	t := &TemplateModel{
		DomainType:       types.StringValue(s.Template.DomainType),
		VCPU:             types.Int64Value(s.Template.VCPU),
		MemoryMiB:        types.Int64Value(s.Template.MemoryMiB),
		Metadata:         providerdata.MapValue(s.Template.Metadata),
		Labels:           providerdata.MapValue(s.Template.Labels),
		Description:      providerdata.FromOptString(s.Template.Description),
		ConsoleLogDir:    providerdata.FromOptString(s.Template.ConsoleLogDir),
		Disk:             []DiskModel{},
		NetworkInterface: []nicModel{},
	}
	for _, d := range s.Template.Disks {
		t.Disk = append(t.Disk, DiskModel{DeviceName: types.StringValue(d.DeviceName), SizeMiB: types.Int64Value(d.SizeMiB)})
	}
	for _, n := range s.Template.NICs {
		nm := nicModel{Network: types.StringNull(), Type: types.StringValue(n.Type), Address: providerdata.OptionalString(n.Address)}
		if n.Network != "" {
			nm.Network = types.StringValue(n.Network)
		}
		t.NetworkInterface = append(t.NetworkInterface, nm)
	}
	if c := s.Template.CloudInit; c != nil {
		// The write-only user data is null, as Terraform keeps it; only its version is stored.
		t.CloudInit = &cloudInitModel{UserData: providerdata.FromOptString(c.UserData), NetworkConfig: providerdata.FromOptString(c.NetworkConfig), UserDataWO: types.StringNull(), UserDataWOVersion: providerdata.FromOptInt64(c.UserDataWOVersion)}
	}
	t.HealthCheck = healthCheckFromSpec(s.Template.HealthCheck, diags)
	t.hardwareFromSpec(s.Template)
	if s.BootDisk != nil {
		t.BootDisk = &BootDiskModel{SourceImage: providerdata.FromOptString(s.BootDisk.SourceImage), SizeMiB: types.Int64Value(s.BootDisk.SizeMiB)}
	}
	m.Template = t
	if s.ScaleIn != nil {
		m.ScaleInPolicy = &scaleInPolicyModel{Order: types.StringValue(*s.ScaleIn)}
	}
	// Left out of the record is the schema's default, false and no names, as a configuration that
	// leaves them out plans them.
	m.AdoptExisting = types.BoolValue(s.AdoptExisting)
	abandon, d := types.SetValueFrom(context.Background(), types.StringType, append([]string{}, s.Abandon...))
	diags.Append(d...)
	m.Abandon = abandon
	if s.Hosts != nil || s.Drain != nil || s.Rebalance || s.ColdMoves {
		hosts := types.ListNull(types.StringType)
		if s.Hosts != nil {
			var d diag.Diagnostics
			hosts, d = types.ListValueFrom(context.Background(), types.StringType, s.Hosts)
			diags.Append(d...)
		}
		// Left out of the record (by an earlier release too) is the schema's default: no host
		// drained, no rebalance, live moves.
		drain, d := types.ListValueFrom(context.Background(), types.StringType, append([]string{}, s.Drain...))
		diags.Append(d...)
		m.Distribution = &DistributionModel{Hosts: hosts, Drain: drain, Rebalance: types.BoolValue(s.Rebalance), Live: types.BoolValue(!s.ColdMoves)}
	}
	if fp := s.Preservation; fp != nil {
		m.Preservation = &preservationModel{AutoPreserveFailedMax: types.Int64Value(int64(fp.AutoPreserveFailedMax)), PreserveTimeout: types.StringValue(fp.PreserveTimeout)}
	}
	if a := s.AutoHealing; a != nil {
		m.AutoHealing = &autoHealingModel{InitialDelay: types.StringValue(a.InitialDelay), Backoff: types.StringValue(a.Backoff),
			MaxConsecutiveFailures: types.Int64Value(int64(a.MaxConsecutiveFailures))}
	}
	if u := s.UpdatePolicy; u != nil {
		m.UpdatePolicy = &updatePolicyModel{
			Type: types.StringValue(u.Type), MinimalAction: types.StringValue(u.MinimalAction),
			MostDisruptiveAllowedAction: types.StringValue(u.MostDisruptive), MaxUnavailable: types.StringValue(string(u.MaxUnavailable)),
			// A configuration written before these attributes has their defaults, as the
			// schema gives them (and as upgradeGroupStateV1 fills them in state).
			MinReady:     types.StringValue(orDefault(u.MinReady, defaultMinReady)),
			ReadyTimeout: types.StringValue(orDefault(u.ReadyTimeout, defaultReadyTimeout)),
			OnFailure:    types.StringValue(orDefault(u.OnFailure, engine.OnFailureStop)),
			Snapshot:     snapshotModelOf(u.Snapshot),
			Canary:       types.StringPointerValue(u.Canary),
		}
	}
}

// The update policy's defaults as the schema writes them.
var (
	defaultMinReady     = engine.FormatDuration(0)
	defaultReadyTimeout = engine.FormatDuration(engine.DefaultReadyTimeout)
)

func orDefault(s *string, def string) string {
	if s == nil {
		return def
	}
	return *s
}

// healthCheckFromSpec is the health check of a stored configuration as the model has it.
func healthCheckFromSpec(s *store.ResourceHealthCheck, diags *diag.Diagnostics) *healthCheckModel {
	if s == nil {
		return nil
	}
	h := &healthCheckModel{
		Interval: types.StringValue(s.Interval), Timeout: types.StringValue(s.Timeout),
		HealthyThreshold: types.Int64Value(s.HealthyThreshold), UnhealthyThreshold: types.Int64Value(s.UnhealthyThreshold),
	}
	if s.GuestAgent != nil {
		h.GuestAgent = &guestAgentProbeModel{}
	}
	if s.Exec != nil {
		command, d := types.ListValueFrom(context.Background(), types.StringType, s.Exec.Command)
		diags.Append(d...)
		h.Exec = &execProbeModel{Command: command}
	}
	if s.TCP != nil {
		h.TCP = &tcpProbeModel{Port: types.Int64Value(s.TCP.Port)}
	}
	if s.HTTP != nil {
		h.HTTP = &httpProbeModel{Port: types.Int64Value(s.HTTP.Port), Path: types.StringValue(s.HTTP.Path), ExpectStatus: types.Int64Value(s.HTTP.ExpectStatus)}
	}
	return h
}

// sameGroupSpec tells whether two renderings of the group resource's configuration say the same:
// both are read back and rendered again, so that renderings by older versions compare by what
// they mean.
func sameGroupSpec(a, b string) bool {
	if a == b {
		return true
	}
	canon := func(raw string) (string, bool) {
		var m StatefulGroupModel
		var diags diag.Diagnostics
		m.decodeGroupSpec(raw, &diags)
		if diags.HasError() {
			return "", false
		}
		out := m.encodeGroupSpec(context.Background(), &diags)
		return out, !diags.HasError()
	}
	ca, okA := canon(a)
	cb, okB := canon(b)
	return okA && okB && ca == cb
}
