package group

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/groupproto"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// privateSettledKey is the private-state key under which a group resource keeps what its last
// look at the host found.
const privateSettledKey = "settled"

// settled says that the last apply of this state that finished left the group as configured by
// Spec (its encodeGroupSpec) needing nothing: no member to create, delete, change or start. Spec
// is "" when it did need something, or was not seen; a refresh writes "" (it does not plan the
// group, to spare a plan its apply would not use).
//
// A plan that does not refresh (terraform plan -refresh=false, and the apply that follows it)
// runs ModifyPlan with no observation of the group in its process. With an unchanged
// configuration and a settled state it plans no change without reading every member: that is
// what -refresh=false asks for, and it costs no call per member.
//
// Read says that the state's `instances` is what a refresh read (Read writes the marker), not what
// an apply planned: only then does a member read now that differs from it mean that the host
// changed since (warnHostChanged).
//
// Generation is the group record's generation that Read read: the apply of a plan made from
// that refresh refuses to run over another apply's change made since (engine.Claim.Basis).
//
// Probed says that Read kept the probe outcomes of the members it judged in Probes (by name; a
// member it did not probe is not there): the plan of the apply that follows, in another process,
// judges the members by them rather than by probing again, so that it plans what the plan the
// user approved showed (ObserveProbed). A marker from before probes were kept has Probed false,
// and the members are probed again.
//
// Hosts is what Read found of the group's hosts (reconcile.HostsSeen): the plans made from that
// refresh, the one the user approves and the final one of the apply in another process, see the
// hosts as it saw them, so that a host that answers again in between changes neither (a host
// down then stays down, a move is live only between the hosts whose UUIDs it read). nil in a
// marker from before it was kept, and then each plan reads the hosts as they are.
type settled struct {
	Spec       string              `json:"spec"`
	Read       bool                `json:"read,omitempty"`
	Generation int64               `json:"generation,omitempty"`
	Probed     bool                `json:"probed,omitempty"`
	Probes     map[string]probeRow `json:"probes,omitempty"`
	Hosts      *hostsSeenRow       `json:"hosts,omitempty"`
}

// marker is the marker as the group's protocol reads it for a plan of plan over state: settled
// when the apply that wrote it left the group as plan configures it, and state has that
// configuration too.
func (s settled) marker(ctx context.Context, plan, state *StatefulGroupModel, diags *diag.Diagnostics) groupproto.Marker {
	m := groupproto.Marker{Read: s.Read, Probed: s.Probed, Hosts: s.Hosts != nil}
	if s.Spec != "" {
		spec := plan.encodeGroupSpec(ctx, diags)
		m.Settled = sameGroupSpec(s.Spec, spec) && sameGroupSpec(spec, state.encodeGroupSpec(ctx, diags))
	}
	return m
}

// hostsSeenRow is a reconcile.HostsSeen as the private state keeps it.
type hostsSeenRow struct {
	Down  map[string]string `json:"down,omitempty"`
	UUIDs map[string]string `json:"uuids,omitempty"`
	Read  []string          `json:"read,omitempty"`
	// UUIDsRead is HostsSeen.UUIDsRead.
	UUIDsRead bool `json:"uuids_read,omitempty"`
}

func hostsSeenRowOf(h reconcile.HostsSeen) *hostsSeenRow {
	return &hostsSeenRow{Down: h.Down, UUIDs: h.UUIDs, Read: h.Read, UUIDsRead: h.UUIDsRead}
}

// seen is the hosts as the private state kept them; false when it kept none.
func (s settled) seen() (reconcile.HostsSeen, bool) {
	if s.Hosts == nil {
		return reconcile.HostsSeen{}, false
	}
	return reconcile.HostsSeen{Down: s.Hosts.Down, UUIDs: s.Hosts.UUIDs, Read: s.Hosts.Read, UUIDsRead: s.Hosts.UUIDsRead}, true
}

// probeRow is a member's engine.ProbeOutcome as the private state keeps it.
type probeRow struct {
	Results    []probeResultRow `json:"results,omitempty"`
	Unfinished bool             `json:"unfinished,omitempty"`
	Err        string           `json:"err,omitempty"`
}

// probeResultRow is an engine.ProbeResult as the private state keeps it; At in Unix milliseconds.
type probeResultRow struct {
	OK     bool   `json:"ok,omitempty"`
	Reason string `json:"reason,omitempty"`
	At     int64  `json:"at,omitempty"`
}

// probeRows are the probe outcomes of the observed members, for the private state.
func probeRows(obs []engine.Observed) map[string]probeRow {
	var out map[string]probeRow
	for _, o := range obs {
		if o.Probe == nil {
			continue
		}
		row := probeRow{Unfinished: o.Probe.Unfinished, Err: o.Probe.Err}
		for _, r := range o.Probe.Results {
			row.Results = append(row.Results, probeResultRow{OK: r.OK, Reason: r.Reason, At: r.At.UnixMilli()})
		}
		if out == nil {
			out = map[string]probeRow{}
		}
		out[o.Name] = row
	}
	return out
}

// outcomes are the probe outcomes the private state kept, as the engine reads them.
func (s settled) outcomes() map[string]*engine.ProbeOutcome {
	out := make(map[string]*engine.ProbeOutcome, len(s.Probes))
	for name, row := range s.Probes {
		p := &engine.ProbeOutcome{Unfinished: row.Unfinished, Err: row.Err}
		for _, r := range row.Results {
			p.Results = append(p.Results, engine.ProbeResult{OK: r.OK, Reason: r.Reason, At: time.UnixMilli(r.At)})
		}
		out[name] = p
	}
	return out
}

func readSettled(ctx context.Context, p providerdata.PrivateGetter, diags *diag.Diagnostics) settled {
	var s settled
	if p == nil {
		return s
	}
	b, d := p.GetKey(ctx, privateSettledKey)
	diags.Append(d...)
	if len(b) > 0 {
		// An unreadable marker only costs the shortcut.
		_ = json.Unmarshal(b, &s)
	}
	return s
}

func writeSettled(ctx context.Context, p providerdata.PrivateSetter, s settled, diags *diag.Diagnostics) {
	b, err := json.Marshal(s)
	if err != nil {
		diags.AddError("Cannot store the group's settled marker in Terraform state", err.Error())
		return
	}
	diags.Append(p.SetKey(ctx, privateSettledKey, b)...)
}
