package reconcile

import (
	"context"
	"errors"
	"slices"
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
	// probes bounds the probes of the members the wave waits for, as workers bounds its calls.
	probes chan struct{}
}

func newWaveRun(r *Reconciler, s engine.GroupState, w engine.Wave, requests *shutdowns) *waveRun {
	wr := &waveRun{r: r, runs: make([]*opRun, len(w.Ops)), probes: make(chan struct{}, r.workers()),
		requested: make([]bool, len(w.Ops)), started: make([]bool, len(w.Ops)), ok: make([]bool, len(w.Ops))}
	for i, op := range w.Ops {
		wr.runs[i] = &opRun{r: r, s: s, op: op, requests: requests, probes: wr.probes}
	}
	return wr
}

// phase runs one list of tasks of every operation of the wave with the bounded fan-out: the
// early tasks (done is nil, and operations without any are skipped), then the operations' own
// tasks, after which done is called for each operation that finished. On the first failure no
// further operation starts; those under way finish on the caller's context, since stopping one
// half-way would leave more to settle than letting it end.
//
// An operation's wait for its member to be ready (engine.TaskWaitReady, its last task) gives
// its place in the fan-out to the next operation: it costs one probe an interval, which the
// wave's probes bound shares among the waits, so that a wave of members that take a minute to
// boot is waited for once, not once per worker's turn.
func (wr *waveRun) phase(ctx context.Context, tasks func(engine.Operation) []engine.Task, done func(engine.Operation)) error {
	stop, cancel := context.WithCancel(ctx) // cancelled by the wave's first failure
	defer cancel()
	g, gctx := errgroup.WithContext(stop)
	g.SetLimit(wr.r.workers())
	var waits errgroup.Group
	fail := func(i int, x *opRun, err error) error {
		var se *StepError
		if !errors.As(err, &se) {
			se = &StepError{Op: x.op, Step: "start", Err: err}
		}
		wr.mark(func() { wr.started[i], wr.failed = true, append(wr.failed, se) })
		cancel()
		return err
	}
	finish := func(i int, x *opRun) {
		if done != nil {
			wr.mark(func() { wr.ok[i] = true })
			done(x.op)
		}
	}
	for i, x := range wr.runs {
		list := tasks(x.op)
		if len(list) == 0 && done == nil {
			continue
		}
		busy, idle := list, []engine.Task(nil)
		if k := slices.IndexFunc(list, func(t engine.Task) bool { return t.Kind == engine.TaskWaitReady }); k >= 0 {
			busy, idle = list[:k], list[k:]
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
			if err := wr.r.run(ctx, x, busy); err != nil {
				return fail(i, x, err)
			}
			if len(idle) == 0 {
				finish(i, x)
				return nil
			}
			waits.Go(func() error {
				if err := wr.r.run(ctx, x, idle); err != nil {
					return fail(i, x, err)
				}
				finish(i, x)
				return nil
			})
			return nil
		})
	}
	err := g.Wait()
	if werr := waits.Wait(); err == nil {
		err = werr
	}
	return err
}

// mark changes the wave's bookkeeping under its lock.
func (wr *waveRun) mark(change func()) {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	change()
}
