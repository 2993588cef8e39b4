package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync/atomic"
)

// ErrNilSeq: Map was given a nil input sequence.
var ErrNilSeq = errors.New("dispatcher: nil input sequence")

// The default window: per live worker, and the least. Each worker then
// has the item it runs and several queued behind it while the consumer
// takes the oldest answers, so short tasks do not wait for the consumer
// to come back; 32 takes most of the gain of a wider window for little
// memory (docs/performance.md).
const (
	mapWindowPerWorker = 16
	mapWindowMin       = 32
)

// Map runs task on d's workers for every item of in, and returns the
// results in input order, as an iterator the caller ranges over:
//
//	for v, err := range dispatcher.Map(ctx, d, items, task) { ... }
//
// The input is read lazily, in the ranging goroutine, and only as fast as
// the results are taken: at most a window of items (Limit; by default 16
// per live worker, at least 32) is read and not yet yielded, the item the
// input is handing over included, so a stream of any length runs in
// memory bounded by the window, and a slow consumer stops the input from
// being read (backpressure end to end). Map starts no goroutine:
// everything that is not a task runs in the caller's.
//
// Errors. By default a task's failure (an error, a panic as a
// *PanicError, a runtime.Goexit as ErrTaskExited) ends the stream, as in
// errgroup, but in input order: the results of every item before the
// first failing one are yielded, then its error once, with the zero R;
// then the sequence ends and the items after it still in flight are
// cancelled. Once a task has failed no more input is read, so a one-shot
// input keeps every item the stream did not take (only an item the input
// was already handing over when the task failed is dropped). With
// CollectErrors a task's error is yielded beside its item (with what the
// task returned) and the stream goes on. In both modes the stream ends,
// after yielding the error, when ctx ends (ctx's error) or a submit is
// refused (ErrClosed once Close has begun, ErrDeadlineUnmeetable under
// WithDeadlineAdmission). The end of ctx ends it at once, whatever is
// queued: the items not yet started are dropped as at a break, below, and
// only running tasks are waited for.
//
// Bad input yields one (zero, err) and ends, without reading the input:
// a Dispatcher not made by New (ErrNotStarted), a nil ctx (ErrNilContext),
// a nil in (ErrNilSeq), a nil task or key (ErrNilTask), a bad option
// (ErrBadOption; CompletionOrder is one), a closed dispatcher (ErrClosed),
// a ctx already done (its error). An empty input ends the sequence
// cleanly with nothing yielded.
//
// Stopping. Leaving the range early (break, return, a panic in the loop
// body) cancels the items in flight and returns only once none of them is
// left running: items not yet started never run (the range does not wait
// for their turn at a worker, and the dispatcher still answers each of
// them once, into a slot nobody reads); running tasks should return when
// their context ends (the range waits for them). A panic in in itself (or
// in MapKeyed's key function) is re-panicked in the ranging goroutine, as
// Go iterators do, after the same cancel and wait; it never reaches a
// worker.
//
// Each range over the returned sequence is a new run that reads in again.
// The stream is a tenant, as a Group is: Tenant names it in
// Stats.Tenants (by default "stream"), Share weighs it under Fair,
// Priority gives it a class under ByPriority.
//
// Cost: the window's slots are allocated once per range; no allocation
// per item beyond what task does.
func Map[T, R any](ctx context.Context, d *Dispatcher, in iter.Seq[T], task func(context.Context, T) (R, error), opts ...GroupOption) iter.Seq2[R, error] {
	return mapSeq(ctx, d, in, nil, task, opts)
}

// MapKeyed is Map with each item routed by key(item), as Dispatcher.Key
// routes a request. key runs in the ranging goroutine, once per item,
// before its submit. Under consistent-hash one key's items reach one
// worker and run in input order, since the stream submits in input order.
func MapKeyed[T, R any](ctx context.Context, d *Dispatcher, in iter.Seq[T], key func(T) uint64, task func(context.Context, T) (R, error), opts ...GroupOption) iter.Seq2[R, error] {
	if key == nil {
		return func(yield func(R, error) bool) {
			var zero R
			yield(zero, fmt.Errorf("%w: nil key function", ErrNilTask))
		}
	}
	return mapSeq(ctx, d, in, key, task, opts)
}

func mapSeq[T, R any](ctx context.Context, d *Dispatcher, in iter.Seq[T], key func(T) uint64, task func(context.Context, T) (R, error), opts []GroupOption) iter.Seq2[R, error] {
	return func(yield func(R, error) bool) {
		var zero R
		m, err := newMapRun(ctx, d, in, key, task, opts)
		if err != nil {
			yield(zero, err)
			return
		}
		m.run(in, yield)
	}
}

// mapRun is one range over a Map sequence: its window of slots, in a
// ring indexed by item number.
type mapRun[T, R any] struct {
	ctx    context.Context // the caller's
	sctx   context.Context // the items': cancelled when the range ends
	cancel context.CancelCauseFunc
	d      *Dispatcher
	m      meta
	key    func(T) uint64
	cont   bool
	slots  []mapSlot[T, R]
	head   int // the next item to yield
	tail   int // the next item to submit

	// failed: a task failed (not with CollectErrors); no more input
	// is read, as nothing past the failure will be yielded.
	failed atomic.Bool
}

// mapSlot is one item in flight: its result slot, whose request the
// dispatcher answers by its ordinary path, and the item its task reads.
type mapSlot[T, R any] struct {
	resultSlot[R]
	item    T
	run     func(context.Context) (R, error) // made once per slot: task applied to item
	refused bool                             // the submit was refused: r.err is why, no answer comes
	// started: slotQueued until a worker starts the task (slotStarted) or
	// the range ends first (slotDropped: the task will never run, and the
	// range need not wait for the answer).
	started atomic.Uint32
}

// answer marks the slot answered (the request's answerer).
func (s *mapSlot[T, R]) answer() { s.mark(slotAnswered) }

const (
	slotQueued uint32 = iota
	slotStarted
	slotDropped
)

func newMapRun[T, R any](ctx context.Context, d *Dispatcher, in iter.Seq[T], key func(T) uint64, task func(context.Context, T) (R, error), opts []GroupOption) (*mapRun[T, R], error) {
	c := groupOptions(opts)
	switch {
	case !d.made():
		return nil, ErrNotStarted
	case ctx == nil:
		return nil, ErrNilContext
	case in == nil:
		return nil, ErrNilSeq
	case task == nil:
		return nil, ErrNilTask
	case c.err != nil:
		return nil, c.err
	case c.completion:
		return nil, fmt.Errorf("%w: CompletionOrder: a stream yields in input order (a Group's Results yields in completion order)", ErrBadOption)
	case c.share > 0 && d.schedule != Fair:
		return nil, fmt.Errorf("%w: %w: Share(%d) needs WithSchedule(Fair): the %v schedule has no shares", ErrBadOption, ErrWrongSchedule, c.share, d.schedule)
	case d.life.Load() != lifeOpen:
		return nil, ErrClosed
	}
	m := &mapRun[T, R]{ctx: ctx, d: d, m: meta{prio: uint8(c.prio)}, cont: c.collect, key: key}
	// A priority out of range or under the wrong schedule, a context
	// already done: what every submit would be refused with.
	if err := d.check(ctx, true, m.m); err != nil {
		return nil, err
	}
	window := c.limit
	if window == 0 {
		window = max(mapWindowPerWorker*d.liveWorkers(), mapWindowMin)
	}
	m.m.tenant = d.groupTenant(&c, "stream")
	m.slots = make([]mapSlot[T, R], window)
	wake := make(chan struct{}, 1) // the range's: it waits on one slot at a time
	for i := range m.slots {
		s := &m.slots[i]
		s.init(wake, s)
		s.run = func(ctx context.Context) (R, error) {
			if !s.started.CompareAndSwap(slotQueued, slotStarted) {
				var zero R
				return zero, ctx.Err() // dropped: the range has ended
			}
			return task(ctx, s.item)
		}
	}
	return m, nil
}

// liveWorkers is how many live workers have a positive weight, read on
// the balancer goroutine: a Stats snapshot for it allocated every
// worker's and tenant's figures and walked the latency histogram once
// per range. 0 once the dispatcher has stopped.
func (d *Dispatcher) liveWorkers() int {
	n := 0
	_ = d.call(func() error {
		for i := range d.b.w {
			if s := &d.b.w[i]; !s.removed && s.weight > 0 {
				n++
			}
		}
		return nil
	})
	return n
}

// taskFailed stops the reading of the input. It does not cancel: the
// items before the failing one still finish and are yielded.
func (m *mapRun[T, R]) taskFailed(error) { m.failed.Store(true) }

func (m *mapRun[T, R]) answered() {}

// run reads in and yields the results in input order; see Map.
func (m *mapRun[T, R]) run(in iter.Seq[T], yield func(R, error) bool) {
	m.sctx, m.cancel = context.WithCancelCause(m.ctx)
	// Whatever ends the range (the input's end, the consumer's break, a
	// failure, a panic in the input or the loop body), nothing of it is
	// left running when it returns.
	defer m.stop()
	w := len(m.slots)
	for item := range in {
		// The failure or the end may have come while the input made this
		// item: it is dropped, as nothing from here on will be yielded.
		if m.failed.Load() || m.ctx.Err() != nil {
			break
		}
		if !m.submit(item) {
			break // refused: its error is its answer, yielded in turn
		}
		// Room is made before the next read, not after it: an item read
		// counts against the window while the input hands it over, and
		// one read into a full window would be lost to a failure.
		if m.tail-m.head == w && !m.emit(yield) {
			return
		}
		if m.failed.Load() || m.ctx.Err() != nil {
			break // read nothing that could not be yielded
		}
	}
	for m.head < m.tail {
		if !m.emit(yield) {
			return
		}
	}
}

// submit sends item to the dispatcher in the next slot, and reports
// whether it was accepted.
func (m *mapRun[T, R]) submit(item T) bool {
	mt := m.m
	if m.key != nil {
		mt.key = m.key(item) // may panic: before the slot is taken
	}
	s := &m.slots[m.tail%len(m.slots)]
	m.tail++
	s.item = item
	s.r.meta = mt
	s.fn = s.run
	s.r.ctx, s.r.job = m.sctx, &s.typed
	s.started.Store(slotQueued)
	if !m.cont {
		s.r.owner = m
	}
	if err := m.d.enqueue(m.sctx, &s.r, true); err != nil {
		var zero T
		s.item, s.refused = zero, true
		s.r.ctx, s.r.job, s.r.err, s.fn = nil, nil, err, nil
		return false
	}
	return true
}

// wait takes the answer of the oldest item in flight and frees its slot.
// It gives up when ended is closed first (ok false), leaving the slot to
// stop: the item may be queued behind work of any length, and stop drops
// it if it has not started.
func (m *mapRun[T, R]) wait(ended <-chan struct{}) (v R, refused, ok bool, err error) {
	var zero R
	var zt T
	s := &m.slots[m.head%len(m.slots)]
	if !s.refused && !s.await(ended) {
		return zero, false, false, nil
	}
	m.head++
	refused = s.refused
	v, err = s.take()
	s.r.owner, s.refused, s.item = nil, false, zt
	return v, refused, true, err
}

// emit yields the oldest item's result, and reports whether the stream
// goes on. The end of ctx ends it at once, answered or not.
func (m *mapRun[T, R]) emit(yield func(R, error) bool) bool {
	// wait gives up only once ctx has ended, which the check below sees.
	v, refused, _, err := m.wait(m.ctx.Done())
	var zero R
	if cerr := m.ctx.Err(); cerr != nil {
		yield(zero, cerr)
		return false
	}
	if err == nil {
		return yield(v, nil)
	}
	if m.cont && !refused {
		return yield(v, err)
	}
	// The first failure in input order: every item before it succeeded.
	yield(zero, err)
	return false
}

// stop cancels what is in flight and waits for the tasks that started.
// An item not yet started is dropped: it never runs, and its answer,
// which the dispatcher still gives (its worker sees the cancelled
// context), goes to a slot nobody reads again, so a stream queued behind
// other work (a Fair share, a busy dispatcher) ends at once.
func (m *mapRun[T, R]) stop() {
	m.cancel(context.Canceled)
	for m.head < m.tail {
		s := &m.slots[m.head%len(m.slots)]
		if !s.refused && s.started.CompareAndSwap(slotQueued, slotDropped) {
			var zt T
			s.item = zt
			m.head++
			continue
		}
		m.wait(nil)
	}
}
