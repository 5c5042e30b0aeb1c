package reconcile

import (
	"context"
	"os"
	"sync/atomic"

	"github.com/hashicorp/terraform-plugin-log/tflog"
)

// processCounts are what this provider process has done to group records and asked of the
// engine since it started: the cost of a terraform command in the units a group transaction is
// judged by (each record read and write is a libvirt round trip, each plan a walk over every
// member). They are process-wide because a terraform command is served by its provider processes
// (one per walk), whatever the configurations and resources inside; make bench-cli reads them
// from the provider's debug log (LogCounts).
var processCounts struct {
	recordReads, recordWrites, enginePlans atomic.Int64
}

// Counts is a snapshot of the process's counts.
type Counts struct {
	// RecordReads are the group records read from a host (every ReadGroupRecord call, on any
	// host, of any group).
	RecordReads int64
	// RecordWrites are the group records written to a host.
	RecordWrites int64
	// EnginePlans are the engine's plans of a group (engine.PlanGroup).
	EnginePlans int64
}

// ProcessCounts returns the counts of this process so far.
func ProcessCounts() Counts {
	return Counts{
		RecordReads:  processCounts.recordReads.Load(),
		RecordWrites: processCounts.recordWrites.Load(),
		EnginePlans:  processCounts.enginePlans.Load(),
	}
}

// CountsMessage is the message of the log line LogCounts writes, which make bench-cli looks for.
const CountsMessage = "provider process counts"

// LogCounts logs the process's counts so far at the end of an operation (op names it: "group
// update", "policy read", ...), with the process id, so that a reader of a terraform command's
// log can sum the last line of each of its provider processes.
func LogCounts(ctx context.Context, op string) {
	c := ProcessCounts()
	tflog.Debug(ctx, CountsMessage, map[string]any{
		"operation": op, "pid": os.Getpid(),
		"record_reads": c.RecordReads, "record_writes": c.RecordWrites, "engine_plans": c.EnginePlans,
	})
}
