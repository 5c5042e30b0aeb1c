package provider

import (
	"flag"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// The parallel acceptance tests take a CPU slot (accSlots) for the time they boot and drive guests:
// at most VIRT_ACC_CPU_SLOTS of them at once (the -parallel value when it is unset). Go's own
// -parallel slots cannot tell a test that keeps TCG guests busy from one that waits: the rollouts
// to a broken image (rollback_acc_test.go) spent most of their 3.5 minutes waiting out the broken
// member's ready_timeout (2 minutes then) with one guest, and held 2 of the 2 slots meanwhile. With
// the CPU slots apart, make testacc runs go test with a -parallel above the number of parallel
// tests (every test gets past t.Parallel and queues here) and VIRT_ACC_CPU_SLOTS=ACC_PARALLEL; a
// test gives its slot back while it only waits (slotHold.idle) and the next one boots meanwhile.
// The number of tests at work at once, the guests' load, stays what ACC_PARALLEL says.
//
// The queue is first come, first served, except that some go first: a test that resumes after an
// idle wait, or whose idle wait is its bulk (its wait then overlaps the most of the others' work,
// rather than adding to the end of the run), and the test of h2 and h3 whose turn it is
// (hostsTest: the chain of those tests, one at a time, must not wait behind every other test).
var accSlots cpuSlots

type cpuSlots struct {
	once  sync.Once
	mu    sync.Mutex
	free  int
	first []chan struct{} // waiting, served before queue
	queue []chan struct{}
}

// slotCount is VIRT_ACC_CPU_SLOTS, else go test's -parallel (GOMAXPROCS when not given), at least 1.
func slotCount() int {
	if n, err := strconv.Atoi(os.Getenv("VIRT_ACC_CPU_SLOTS")); err == nil && n > 0 {
		return n
	}
	if f := flag.Lookup("test.parallel"); f != nil {
		if n, err := strconv.Atoi(f.Value.String()); err == nil && n > 0 {
			return n
		}
	}
	return 1
}

// take returns holding a slot; first puts the caller before the tests queued without it.
func (s *cpuSlots) take(first bool) {
	if ch := s.enqueue(first); ch != nil {
		<-ch
	}
}

// enqueue takes a free slot and returns nil, or queues the caller and returns the channel give
// closes when it hands the caller its slot.
func (s *cpuSlots) enqueue(first bool) chan struct{} {
	s.once.Do(func() { s.free = slotCount() })
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.free > 0 && len(s.first) == 0 && len(s.queue) == 0 {
		s.free--
		return nil
	}
	ch := make(chan struct{})
	if first {
		s.first = append(s.first, ch)
	} else {
		s.queue = append(s.queue, ch)
	}
	return ch
}

// give hands the caller's slot to the next waiting test, or frees it.
func (s *cpuSlots) give() {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case len(s.first) > 0:
		close(s.first[0])
		s.first = s.first[1:]
	case len(s.queue) > 0:
		close(s.queue[0])
		s.queue = s.queue[1:]
	default:
		s.free++
	}
}

// slotHold is one test's CPU slot: given back at the test's end, or earlier with idle.
type slotHold struct {
	t    *testing.T
	mu   sync.Mutex
	held bool
}

// takeSlot waits for a CPU slot for t (first: see cpuSlots) and gives it back when t ends. Outside
// an acceptance run it takes none: the acceptance tests skip there.
func takeSlot(t *testing.T, first bool) *slotHold {
	t.Helper()
	h := &slotHold{t: t}
	if os.Getenv(resource.EnvTfAcc) == "" {
		return h
	}
	accSlots.take(first)
	h.held = true
	t.Cleanup(h.end)
	return h
}

// end gives the slot back at the test's end.
func (h *slotHold) end() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held {
		h.held = false
		accSlots.give()
	}
}

// idle gives the slot back while the test only waits (no guest of its own busy but one).
func (h *slotHold) idle() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held {
		h.held = false
		accSlots.give()
		h.t.Log("CPU slot given back for a wait")
	}
}

// resume takes a slot again after idle, before the tests that have not started yet.
func (h *slotHold) resume() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.held && os.Getenv(resource.EnvTfAcc) != "" {
		accSlots.take(true)
		h.held = true
		h.t.Log("CPU slot taken again after the wait")
	}
}

// accParallel is t.Parallel for an acceptance test: then it waits for a CPU slot.
func accParallel(t *testing.T) *slotHold {
	t.Helper()
	t.Parallel()
	return takeSlot(t, false)
}

// parallelTest is resource.ParallelTest with a CPU slot (accParallel).
func parallelTest(t *testing.T, c resource.TestCase) {
	t.Helper()
	accParallel(t)
	resource.Test(t, c)
}

// TestCPUSlots: with one slot, the queued tests get it in turn, those queued first before the
// others, each only when the one before gives it back, and a slot nobody waits for is free again.
func TestCPUSlots(t *testing.T) {
	var s cpuSlots
	s.once.Do(func() { s.free = 1 })
	var order []string
	served := func(name string, ch chan struct{}) {
		select {
		case <-ch:
			order = append(order, name)
		default:
		}
	}
	if ch := s.enqueue(false); ch != nil {
		t.Fatal("the first test queued although the slot was free")
	}
	b, c, d := s.enqueue(false), s.enqueue(true), s.enqueue(false)
	if b == nil || c == nil || d == nil {
		t.Fatal("a test got a slot while the only one was held")
	}
	pending := map[string]chan struct{}{"b": b, "c (first)": c, "d": d}
	check := func() {
		for name, ch := range pending {
			before := len(order)
			if served(name, ch); len(order) > before {
				delete(pending, name)
			}
		}
	}
	check()
	if len(order) != 0 {
		t.Fatalf("%v got the slot before it was given back", order)
	}
	for i := range 3 {
		s.give()
		check()
		if len(order) != i+1 {
			t.Fatalf("give number %d handed the slot to %d tests in all (%v), want %d", i+1, len(order), order, i+1)
		}
	}
	if diff := cmp.Diff([]string{"c (first)", "b", "d"}, order); diff != "" {
		t.Errorf("order in which the queued tests got the slot (-want +got):\n%s", diff)
	}
	s.give()
	if ch := s.enqueue(false); ch != nil {
		t.Error("the slot given back with nobody waiting was not free")
	}
}
