package group

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// healthCheckSchema is template.health_check as the group's schema declares it.
func healthCheckSchema() schema.SingleNestedBlock {
	return StatefulGroupSchema().Blocks["template"].(schema.SingleNestedBlock).Blocks["health_check"].(schema.SingleNestedBlock)
}

// attributeAt is the schema's attribute at p, through single nested blocks.
func attributeAt(t *testing.T, p ...string) schema.Attribute {
	t.Helper()
	blocks, attrs := StatefulGroupSchema().Blocks, StatefulGroupSchema().Attributes
	for i, name := range p {
		if i == len(p)-1 {
			a, ok := attrs[name]
			if !ok {
				t.Fatalf("no attribute %v", p)
			}
			return a
		}
		b, ok := blocks[name].(schema.SingleNestedBlock)
		if !ok {
			t.Fatalf("no block %v", p[:i+1])
		}
		blocks, attrs = b.Blocks, b.Attributes
	}
	t.Fatal("empty path")
	return nil
}

// validateAt runs the validators of the attribute at p on value, as the framework does at
// validate, and returns the diagnostics' details.
func validateAt(t *testing.T, value attr.Value, p ...string) []string {
	t.Helper()
	at := path.Root(p[0])
	for _, n := range p[1:] {
		at = at.AtName(n)
	}
	ctx := context.Background()
	var diags diag.Diagnostics
	switch a := attributeAt(t, p...).(type) {
	case schema.StringAttribute:
		for _, v := range a.Validators {
			resp := &validator.StringResponse{}
			v.ValidateString(ctx, validator.StringRequest{Path: at, PathExpression: at.Expression(), ConfigValue: value.(types.String)}, resp)
			diags.Append(resp.Diagnostics...)
		}
	case schema.Int64Attribute:
		for _, v := range a.Validators {
			resp := &validator.Int64Response{}
			v.ValidateInt64(ctx, validator.Int64Request{Path: at, PathExpression: at.Expression(), ConfigValue: value.(types.Int64)}, resp)
			diags.Append(resp.Diagnostics...)
		}
	default:
		t.Fatalf("attribute %v is a %T", p, a)
	}
	var out []string
	for _, d := range diags {
		out = append(out, d.Detail())
	}
	return out
}

// TestHealthCheckAttributeValidators: each bad value is refused with a diagnostic that names the
// attribute, the value and what is allowed; each good one passes.
func TestHealthCheckAttributeValidators(t *testing.T) {
	t.Parallel()
	hc := func(names ...string) []string { return append([]string{"template", "health_check"}, names...) }
	up := func(name string) []string { return []string{"update_policy", name} }
	s, n := types.StringValue, types.Int64Value
	cases := map[string]struct {
		at    []string
		value attr.Value
		want  []string // each in the one diagnostic; none: accepted
	}{
		"interval below a second":         {hc("interval"), s("500ms"), []string{"template.health_check.interval", `"500ms"`, "at least 1s"}},
		"interval zero":                   {hc("interval"), s("0s"), []string{"template.health_check.interval", `"0s"`, "at least 1s"}},
		"interval not a duration":         {hc("interval"), s("often"), []string{"template.health_check.interval", `"often"`, "such as"}},
		"interval over an hour":           {hc("interval"), s("2h"), []string{"template.health_check.interval", `"2h"`, "at most 1h"}},
		"interval one second":             {hc("interval"), s("1s"), nil},
		"timeout negative":                {hc("timeout"), s("-1s"), []string{"template.health_check.timeout", `"-1s"`, "at least 1s"}},
		"timeout of 30s":                  {hc("timeout"), s("30s"), nil},
		"healthy_threshold zero":          {hc("healthy_threshold"), n(0), []string{"template.health_check.healthy_threshold", "between 1 and 10", "got: 0"}},
		"unhealthy_threshold eleven":      {hc("unhealthy_threshold"), n(11), []string{"template.health_check.unhealthy_threshold", "between 1 and 10", "got: 11"}},
		"unhealthy_threshold ten":         {hc("unhealthy_threshold"), n(10), nil},
		"tcp port zero":                   {hc("tcp", "port"), n(0), []string{"template.health_check.tcp.port", "between 1 and 65535", "got: 0"}},
		"http port too large":             {hc("http", "port"), n(70000), []string{"template.health_check.http.port", "between 1 and 65535", "got: 70000"}},
		"http port 8080":                  {hc("http", "port"), n(8080), nil},
		"http expect_status 99":           {hc("http", "expect_status"), n(99), []string{"template.health_check.http.expect_status", "between 100 and 599", "got: 99"}},
		"http expect_status 600":          {hc("http", "expect_status"), n(600), []string{"template.health_check.http.expect_status", "between 100 and 599", "got: 600"}},
		"http expect_status 204":          {hc("http", "expect_status"), n(204), nil},
		"http path relative":              {hc("http", "path"), s("healthz"), []string{"template.health_check.http.path", `must start with "/"`, "healthz"}},
		"http path with a space":          {hc("http", "path"), s("/a b"), []string{"template.health_check.http.path", "/a b"}},
		"http path /healthz":              {hc("http", "path"), s("/healthz?full=1"), nil},
		"min_ready negative":              {up("min_ready"), s("-1s"), []string{"update_policy.min_ready", `"-1s"`, "too short", "zero or more"}},
		"min_ready zero":                  {up("min_ready"), s("0s"), nil},
		"min_ready absurd":                {up("min_ready"), s("100h"), []string{"update_policy.min_ready", `"100h"`, "at most 1h"}},
		"ready_timeout zero":              {up("ready_timeout"), s("0s"), []string{"update_policy.ready_timeout", `"0s"`, "more than 0s"}},
		"ready_timeout not a duration":    {up("ready_timeout"), s("5 minutes"), []string{"update_policy.ready_timeout", `"5 minutes"`}},
		"ready_timeout ten minutes":       {up("ready_timeout"), s("10m"), nil},
		"on_failure unknown":              {up("on_failure"), s("RETRY"), []string{"update_policy.on_failure", `"STOP" "ROLLBACK"`, `got: "RETRY"`}},
		"on_failure lower case":           {up("on_failure"), s("rollback"), []string{"update_policy.on_failure", `got: "rollback"`}},
		"on_failure ROLLBACK":             {up("on_failure"), s("ROLLBACK"), nil},
		"an unknown value waits its turn": {up("ready_timeout"), types.StringUnknown(), nil},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := validateAt(t, c.value, c.at...)
			if c.want == nil {
				if len(got) != 0 {
					t.Fatalf("refused: %q", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("want one diagnostic, got %q", got)
			}
			for _, w := range c.want {
				if !strings.Contains(got[0], w) {
					t.Errorf("the diagnostic %q does not say %q", got[0], w)
				}
			}
		})
	}
}

// healthCheckObject is the model as the configuration's template.health_check.
func healthCheckObject(t *testing.T, h *healthCheckModel) types.Object {
	t.Helper()
	typ := healthCheckSchema().Type().(types.ObjectType)
	if h == nil {
		return types.ObjectNull(typ.AttrTypes)
	}
	obj, d := types.ObjectValueFrom(context.Background(), typ.AttrTypes, h)
	if d.HasError() {
		t.Fatalf("object: %v", d)
	}
	return obj
}

func commandList(words ...string) types.List {
	l, _ := types.ListValueFrom(context.Background(), types.StringType, append([]string{}, words...))
	return l
}

// configHealthCheck is a health check as configured: unset attributes are null.
func configHealthCheck() healthCheckModel {
	return healthCheckModel{Interval: types.StringNull(), Timeout: types.StringNull(), HealthyThreshold: types.Int64Null(), UnhealthyThreshold: types.Int64Null()}
}

// TestCheckHealthCheck: what needs more than one attribute, at validate.
func TestCheckHealthCheck(t *testing.T) {
	t.Parallel()
	with := func(f func(h *healthCheckModel)) *healthCheckModel {
		h := configHealthCheck()
		f(&h)
		return &h
	}
	agent := func(h *healthCheckModel) { h.GuestAgent = &guestAgentProbeModel{} }
	type want struct {
		Path   string
		Detail []string
	}
	cases := map[string]struct {
		hc   *healthCheckModel
		want []want
	}{
		"no health check": {nil, nil},
		"guest agent":     {with(agent), nil},
		"exec": {with(func(h *healthCheckModel) {
			h.Exec = &execProbeModel{Command: commandList("/bin/tiny-service", "status")}
		}), nil},
		"tcp": {with(func(h *healthCheckModel) { h.TCP = &tcpProbeModel{Port: types.Int64Value(5432)} }), nil},
		"http, defaults": {with(func(h *healthCheckModel) {
			h.HTTP = &httpProbeModel{Port: types.Int64Value(80), Path: types.StringNull(), ExpectStatus: types.Int64Null()}
		}), nil},
		"timeout = interval": {with(func(h *healthCheckModel) {
			agent(h)
			h.Interval, h.Timeout = types.StringValue("3s"), types.StringValue("3s")
		}), nil},
		"no probe": {with(func(*healthCheckModel) {}), []want{{"template.health_check",
			[]string{"template.health_check has no probe block", "exactly one probe block: guest_agent, exec, tcp, http"}}}},
		"two probes": {with(func(h *healthCheckModel) {
			agent(h)
			h.TCP = &tcpProbeModel{Port: types.Int64Value(22)}
		}), []want{{"template.health_check", []string{"2 probe blocks (guest_agent and tcp)", "exactly one probe block"}}}},
		"timeout above the interval": {with(func(h *healthCheckModel) {
			agent(h)
			h.Interval, h.Timeout = types.StringValue("10s"), types.StringValue("20s")
		}), []want{{"template.health_check.timeout", []string{`interval = "10s"`, `timeout = "20s"`, "make timeout at most the interval"}}}},
		"interval below the default timeout": {with(func(h *healthCheckModel) {
			agent(h)
			h.Interval = types.StringValue("2s")
		}), []want{{"template.health_check.interval", []string{`interval = "2s"`, `timeout = "5s"`, "timeout 5s is longer than interval 2s"}}}},
		"exec with an empty command": {with(func(h *healthCheckModel) { h.Exec = &execProbeModel{Command: commandList()} }),
			[]want{{"template.health_check.exec.command", []string{"command = []", "the command is empty"}}}},
		"exec with an empty program": {with(func(h *healthCheckModel) { h.Exec = &execProbeModel{Command: commandList("", "status")} }),
			[]want{{"template.health_check.exec.command", []string{`command = ["", "status"]`, "first element", "is empty"}}}},
		"exec without a command": {with(func(h *healthCheckModel) { h.Exec = &execProbeModel{Command: types.ListNull(types.StringType)} }),
			[]want{{"template.health_check.exec.command", []string{"is required", "/bin/tiny-service"}}}},
		"tcp without a port": {with(func(h *healthCheckModel) { h.TCP = &tcpProbeModel{Port: types.Int64Null()} }),
			[]want{{"template.health_check.tcp.port", []string{"is required", "from 1 to 65535"}}}},
		"http without a port": {with(func(h *healthCheckModel) {
			h.HTTP = &httpProbeModel{Port: types.Int64Null(), Path: types.StringNull(), ExpectStatus: types.Int64Null()}
		}), []want{{"template.health_check.http.port", []string{"is required"}}}},
		"an unknown command waits for the plan that knows it": {with(func(h *healthCheckModel) { h.Exec = &execProbeModel{Command: types.ListUnknown(types.StringType)} }), nil},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var diags diag.Diagnostics
			checkHealthCheck(context.Background(), &diags, healthCheckObject(t, c.hc))
			if len(diags) != len(c.want) {
				t.Fatalf("want %d diagnostics, got %v", len(c.want), diags)
			}
			for i, w := range c.want {
				d, ok := diags[i].(diag.DiagnosticWithPath)
				if !ok || d.Path().String() != w.Path {
					t.Errorf("diagnostic %d is not on %s: %v", i, w.Path, diags[i])
					continue
				}
				for _, s := range w.Detail {
					if !strings.Contains(d.Detail(), s) {
						t.Errorf("the diagnostic %q does not say %q", d.Detail(), s)
					}
				}
			}
		})
	}
}

// plannedHealthCheck is a health check as planned: the schema's defaults filled.
func plannedHealthCheck(probe func(h *healthCheckModel)) *healthCheckModel {
	h := &healthCheckModel{Interval: types.StringValue("10s"), Timeout: types.StringValue("5s"), HealthyThreshold: types.Int64Value(1), UnhealthyThreshold: types.Int64Value(3)}
	probe(h)
	return h
}

// plannedPolicy is an update policy as planned, with the new attributes set.
func plannedPolicy(minReady, readyTimeout, onFailure string) *updatePolicyModel {
	return &updatePolicyModel{Type: types.StringValue("PROACTIVE"), MinimalAction: types.StringValue("NONE"), MostDisruptiveAllowedAction: types.StringValue("REPLACE"),
		MaxUnavailable: types.StringValue("1"), MinReady: types.StringValue(minReady), ReadyTimeout: types.StringValue(readyTimeout), OnFailure: types.StringValue(onFailure)}
}

// TestEngineGroup_healthCheckAndPolicy: the model's health check and policy as the engine reads
// them; the health check is the group's, not the template's, so its revision does not move.
func TestEngineGroup_healthCheckAndPolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := map[string]struct {
		hc         *healthCheckModel
		policy     *updatePolicyModel
		wantHC     *engine.HealthCheck
		wantPolicy engine.UpdatePolicy
	}{
		"none of it": {wantPolicy: engine.DefaultUpdatePolicy()},
		"exec, rollback after 30s ready": {
			hc: plannedHealthCheck(func(h *healthCheckModel) {
				h.Exec = &execProbeModel{Command: commandList("/bin/tiny-service", "status")}
				h.Interval, h.Timeout, h.UnhealthyThreshold = types.StringValue("1m30s"), types.StringValue("2s"), types.Int64Value(2)
			}),
			policy: plannedPolicy("30s", "10m", "ROLLBACK"),
			wantHC: &engine.HealthCheck{Probe: engine.Probe{Kind: engine.ProbeExec, Command: []string{"/bin/tiny-service", "status"}},
				Interval: 90 * time.Second, Timeout: 2 * time.Second, HealthyThreshold: 1, UnhealthyThreshold: 2},
			wantPolicy: func() engine.UpdatePolicy {
				p := engine.DefaultUpdatePolicy()
				p.MinReady, p.ReadyTimeout, p.OnFailure = 30*time.Second, 10*time.Minute, engine.OnFailureRollback
				return p
			}(),
		},
		"guest agent": {
			hc:         plannedHealthCheck(func(h *healthCheckModel) { h.GuestAgent = &guestAgentProbeModel{} }),
			wantHC:     &engine.HealthCheck{Probe: engine.Probe{Kind: engine.ProbeGuestAgent}, Interval: 10 * time.Second, Timeout: 5 * time.Second, HealthyThreshold: 1, UnhealthyThreshold: 3},
			wantPolicy: engine.DefaultUpdatePolicy(),
		},
		"http, with state from before the policy's new attributes": {
			hc: plannedHealthCheck(func(h *healthCheckModel) {
				h.HTTP = &httpProbeModel{Port: types.Int64Value(8080), Path: types.StringValue("/healthz"), ExpectStatus: types.Int64Value(204)}
			}),
			policy: &updatePolicyModel{Type: types.StringValue("PROACTIVE"), MinimalAction: types.StringValue("NONE"), MostDisruptiveAllowedAction: types.StringValue("REPLACE"),
				MaxUnavailable: types.StringValue("2"), MinReady: types.StringNull(), ReadyTimeout: types.StringNull(), OnFailure: types.StringNull()},
			wantHC: &engine.HealthCheck{Probe: engine.Probe{Kind: engine.ProbeHTTP, Port: 8080, Path: "/healthz", ExpectStatus: 204},
				Interval: 10 * time.Second, Timeout: 5 * time.Second, HealthyThreshold: 1, UnhealthyThreshold: 3},
			wantPolicy: func() engine.UpdatePolicy { p := engine.DefaultUpdatePolicy(); p.MaxUnavailable = 2; return p }(),
		},
		"tcp": {
			hc:         plannedHealthCheck(func(h *healthCheckModel) { h.TCP = &tcpProbeModel{Port: types.Int64Value(5432)} }),
			wantHC:     &engine.HealthCheck{Probe: engine.Probe{Kind: engine.ProbeTCP, Port: 5432}, Interval: 10 * time.Second, Timeout: 5 * time.Second, HealthyThreshold: 1, UnhealthyThreshold: 3},
			wantPolicy: engine.DefaultUpdatePolicy(),
		},
	}
	bare := planGroupModel("m1")
	var d diag.Diagnostics
	revision := bare.engineGroup(ctx, &d).Template.Revision()
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m := planGroupModel("m1")
			m.Template.HealthCheck, m.UpdatePolicy = c.hc, c.policy
			var diags diag.Diagnostics
			g := m.engineGroup(ctx, &diags)
			if diags.HasError() {
				t.Fatal(diags)
			}
			if diff := cmp.Diff(c.wantHC, g.HealthCheck); diff != "" {
				t.Errorf("HealthCheck (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.wantPolicy, g.Policy); diff != "" {
				t.Errorf("Policy (-want +got):\n%s", diff)
			}
			if got := g.Template.Revision(); got != revision {
				t.Errorf("the health check or policy moved the template's revision: %s, without them %s", got, revision)
			}
		})
	}
}

// TestGroupSpec_healthCheckAndPolicy: the configuration the group record keeps (and import reads)
// carries the health check and the policy's new attributes; a configuration written before them
// reads with the policy's defaults, the same as state upgraded from before them.
func TestGroupSpec_healthCheckAndPolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	probes := map[string]func(h *healthCheckModel){
		"guest agent": func(h *healthCheckModel) { h.GuestAgent = &guestAgentProbeModel{} },
		"exec": func(h *healthCheckModel) {
			h.Exec = &execProbeModel{Command: commandList("/bin/tiny-service", "status")}
		},
		"tcp": func(h *healthCheckModel) { h.TCP = &tcpProbeModel{Port: types.Int64Value(5432)} },
		"http": func(h *healthCheckModel) {
			h.HTTP = &httpProbeModel{Port: types.Int64Value(80), Path: types.StringValue("/healthz"), ExpectStatus: types.Int64Value(200)}
		},
	}
	for name, probe := range probes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m := planGroupModel("m1")
			m.Template.HealthCheck, m.UpdatePolicy = plannedHealthCheck(probe), plannedPolicy("30s", "10m", "ROLLBACK")
			var diags diag.Diagnostics
			spec := m.encodeGroupSpec(ctx, &diags)
			var back StatefulGroupModel
			back.decodeGroupSpec(spec, &diags)
			if diags.HasError() {
				t.Fatal(diags)
			}
			if diff := cmp.Diff(m.Template.HealthCheck, back.Template.HealthCheck); diff != "" {
				t.Errorf("health check read back (-written +read):\n%s", diff)
			}
			if diff := cmp.Diff(m.UpdatePolicy, back.UpdatePolicy); diff != "" {
				t.Errorf("update policy read back (-written +read):\n%s", diff)
			}
			if again := back.encodeGroupSpec(ctx, &diags); again != spec {
				t.Errorf("written again differently:\n%s\n%s", spec, again)
			}
		})
	}
	t.Run("written before the new attributes", func(t *testing.T) {
		t.Parallel()
		m := planGroupModel("m1")
		m.UpdatePolicy = plannedPolicy("0s", "5m", "STOP")
		var diags diag.Diagnostics
		now := m.encodeGroupSpec(ctx, &diags)
		var raw map[string]any
		if err := json.Unmarshal([]byte(now), &raw); err != nil {
			t.Fatal(err)
		}
		up := raw["update_policy"].(map[string]any)
		delete(up, "min_ready")
		delete(up, "ready_timeout")
		delete(up, "on_failure")
		old, err := json.Marshal(raw)
		if err != nil {
			t.Fatal(err)
		}
		if !sameGroupSpec(string(old), now) {
			t.Errorf("a configuration from before the policy's new attributes differs from one with their defaults:\n%s\n%s", old, now)
		}
		var back StatefulGroupModel
		back.decodeGroupSpec(string(old), &diags)
		if diff := cmp.Diff(m.UpdatePolicy, back.UpdatePolicy); diff != "" || diags.HasError() {
			t.Errorf("imported policy (-want +got):\n%s %v", diff, diags)
		}
		if back.Template.HealthCheck != nil {
			t.Errorf("a health check out of nothing: %+v", back.Template.HealthCheck)
		}
		changed := m
		changed.UpdatePolicy = plannedPolicy("0s", "5m", "ROLLBACK")
		if sameGroupSpec(string(old), changed.encodeGroupSpec(ctx, &diags)) {
			t.Error("on_failure ROLLBACK reads the same as the default STOP")
		}
	})
}

// TestStatefulGroupModifyPlan_healthCheckPlansNoAction: adding, changing or removing the health
// check changes how members are judged, not the members: the plan has no member action.
func TestStatefulGroupModifyPlan_healthCheckPlansNoAction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	agent := plannedHealthCheck(func(h *healthCheckModel) { h.GuestAgent = &guestAgentProbeModel{} })
	exec := plannedHealthCheck(func(h *healthCheckModel) { h.Exec = &execProbeModel{Command: commandList("/bin/true")} })
	cases := map[string]struct{ from, to *healthCheckModel }{
		"added":   {nil, agent},
		"changed": {agent, exec},
		"removed": {exec, nil},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r, _ := newPlanResource(t)
			from := planGroupModel("m1")
			from.Template.HealthCheck = c.from
			state := createdGroup(t, r, from)
			plan := planGroupModel("m1")
			plan.Template.HealthCheck = c.to
			plan.ID, plan.Instances = state.ID, state.Instances
			req := resource.ModifyPlanRequest{Plan: groupPlanOf(t, plan), State: groupStateOf(t, &state), Config: tfsdk.Config{Schema: StatefulGroupSchema(), Raw: groupPlanOf(t, plan).Raw}}
			resp := resource.ModifyPlanResponse{Plan: req.Plan}
			r.ModifyPlan(ctx, req, &resp)
			if resp.Diagnostics.HasError() {
				t.Fatal(resp.Diagnostics)
			}
			var got StatefulGroupModel
			resp.Diagnostics.Append(resp.Plan.Get(ctx, &got)...)
			var d diag.Diagnostics
			for _, row := range instanceRows(got.Instances, &d) {
				if row.PlannedAction == nil || *row.PlannedAction != "NONE" {
					t.Errorf("%s: planned %v", row.Name, row.PlannedAction)
				}
			}
			if len(instanceRows(got.Instances, &d)) != 2 || d.HasError() {
				t.Errorf("instances %s, %v", got.Instances, d)
			}
		})
	}
}
