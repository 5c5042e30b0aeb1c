package providerdata

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
	"github.com/virtfleet/terraform-provider-virt/internal/validators"
)

// defaultTimeout bounds a create, update or delete that the resource's timeouts block leaves
// unset. A rolling change of a large group can take longer; a rollout cut off by its time limit
// is finished by the next apply, so the limit costs a rerun, never a half-done group.
const defaultTimeout = 30 * time.Minute

// TimeoutsBlock is the timeouts block of the three resources.
func TimeoutsBlock() schema.Block {
	b := timeouts.Block(context.Background(), timeouts.Opts{Create: true, Update: true, Delete: true}).(schema.SingleNestedBlock)
	b.MarkdownDescription = "How long a create, update or delete may take, as Go durations (`\"30s\"`, `\"10m\"`, `\"1h\"`); " +
		"each defaults to `\"30m\"`. When the time runs out the operation stops where it is: no further member is " +
		"started, and a libvirt call still waiting for an answer is cut off by closing its connection. The error names " +
		"the operation that timed out and what was done; the next apply plans again from the host and finishes the work. " +
		"A resource's timeouts bound its own operations only: what a `virt_stateful_policy` or `virt_per_instance_config` " +
		"change does to the group's members (and a host that stops answering meanwhile) runs under that resource's timeouts, " +
		"not the group's, so give them the same ones. " +
		"Each must be more than zero and at most 7 days (`\"168h\"`)."
	// The library's own validator only parses: a zero or negative limit would stop every
	// operation before it starts, and an absurd one is a typo.
	for name, a := range b.Attributes {
		sa := a.(schema.StringAttribute)
		sa.Validators = append(sa.Validators, DurationIn(engine.OperationTimeoutRule))
		b.Attributes[name] = sa
	}
	return b
}

// Limit is one operation of a resource bounded by its timeouts block.
type Limit struct {
	op       string // create, update or delete
	resource string // what the operation changes, as users name it: "group db"
	after    time.Duration
}

// NewLimit reads op's time limit from t.
func NewLimit(ctx context.Context, t timeouts.Value, op, resource string, diags *diag.Diagnostics) Limit {
	var d time.Duration
	var ds diag.Diagnostics
	switch op {
	case "create":
		d, ds = t.Create(ctx, defaultTimeout)
	case "update":
		d, ds = t.Update(ctx, defaultTimeout)
	default:
		d, ds = t.Delete(ctx, defaultTimeout)
	}
	diags.Append(ds...)
	return Limit{op: op, resource: resource, after: d}
}

// Start bounds ctx by the limit. The context the resource method was given stays unbounded, for
// what must happen after the time ran out: giving the lease back, reading what the host has now.
// The bounded context notes whether an operation on a member started (reconcile.Started), which
// explain tells.
func (l Limit) Start(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(reconcile.WithStarted(ctx), l.after)
}

// Explain turns err into a diagnostic's summary and detail, saying so when the operation ran out
// of time: which operation, which limit, and where it stopped (err names the step).
func (l Limit) Explain(summary string, work context.Context, err error) (string, string) {
	detail := ApplyError(err, reconcile.Started(work))
	if !errors.Is(work.Err(), context.DeadlineExceeded) {
		return summary, detail
	}
	return fmt.Sprintf("%s: %s timed out after %s", summary, l.op, l.after),
		fmt.Sprintf("The %s of %s did not finish within its time limit (timeouts.%s = %q) and stopped: %s", l.op, l.resource, l.op, l.after, detail)
}

// DurationIn accepts the durations rule allows: the rule lives in the engine, with its bounds,
// and the schema borrows it.
func DurationIn(rule engine.DurationRule) validator.String {
	return validators.Parsed(rule.Allowed(), func(v string) error {
		_, err := rule.Parse(v)
		return err
	})
}
