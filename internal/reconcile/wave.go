package reconcile

import (
	"context"
	"errors"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// waveRun is one wave of a plan under way: its operations, and what became of each.
type waveRun struct {
	r    *Reconciler
	runs []*opRun

	mu     sync.Mutex
	failed []*StepError
	// requested are the operations whose early tasks ran: their members were asked to shut
	// down even when their own tasks never started. started are those whose own tasks started
	// (or whose early tasks failed), ok those that finished.
	requested, started, ok []bool
}

func newWaveRun(r *Reconciler, s engine.GroupState, w engine.Wave, requests *shutdowns) *waveRun {
	wr := &waveRun{r: r, runs: make([]*opRun, len(w.Ops)),
		requested: make([]bool, len(w.Ops)), started: make([]bool, len(w.Ops)), ok: make([]bool, len(w.Ops))}
	for i, op := range w.Ops {
		wr.runs[i] = &opRun{r: r, s: s, op: op, requests: requests}
	}
	return wr
}

// phase runs one list of tasks of every operation of the wave with the bounded fan-out: the
// early tasks (done is nil, and operations without any are skipped), then the operations' own
// tasks, after which done is called for each operation that finished. On the first failure no
// further operation starts; those under way finish on the caller's context, since stopping one
// half-way would leave more to settle than letting it end.
func (wr *waveRun) phase(ctx context.Context, tasks func(engine.Operation) []engine.Task, done func(engine.Operation)) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(wr.r.workers())
	for i, x := range wr.runs {
		list := tasks(x.op)
		if len(list) == 0 && done == nil {
			continue
		}
		g.Go(func() error {
			if gctx.Err() != nil {
				return nil //nolint:nilerr // another operation of the wave failed, and its error is the wave's: this one never starts
			}
			wr.mark(func() {
				if done == nil {
					wr.requested[i] = true
				} else {
					wr.started[i] = true
				}
			})
			if err := wr.r.run(ctx, x, list); err != nil {
				var se *StepError
				if !errors.As(err, &se) {
					se = &StepError{Op: x.op, Step: "start", Err: err}
				}
				wr.mark(func() { wr.started[i], wr.failed = true, append(wr.failed, se) })
				return err
			}
			if done != nil {
				wr.mark(func() { wr.ok[i] = true })
				done(x.op)
			}
			return nil
		})
	}
	return g.Wait()
}

// mark changes the wave's bookkeeping under its lock.
func (wr *waveRun) mark(change func()) {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	change()
}
