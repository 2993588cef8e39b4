package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// ErrGroupDone: Go or TryGo on a Group whose Wait has returned. A Group
// runs one batch; start another with NewGroup.
var ErrGroupDone = errors.New("dispatcher: group already waited")

// Group runs a batch of tasks on a dispatcher, as errgroup.WithContext or
// pond's groups do, and collects their answers in submission order. Make
// it with NewGroup; submit with Go (waits for room) or TryGo
// (never waits); collect with Wait, or range over Results to take each
// answer as soon as those before it are in (or, with CompletionOrder, as
// soon as it is in). Many groups may share one dispatcher: their tasks
// meet in its intake like any other requests.
//
// By default the first task to fail cancels the group's context (tasks
// receive it as their argument: queued ones then end without running,
// running ones should return) and Wait returns that error. With
// CollectErrors nothing is cancelled and Wait joins every error. A panic or
// a runtime.Goexit in a task is that task's error (a *PanicError,
// ErrTaskExited), never a crash; the dispatcher counts it as usual.
//
// A task may call TryGo on its own group (also while Wait waits). It should
// not call Go on a group of its own dispatcher: if every worker waits for
// room that only workers can make, nothing progresses (as with Do). Nor
// may it call Wait on its own group, which would wait for itself. A Go
// made outside the group's tasks belongs to the batch if it began before
// Wait returned (Wait waits for it), and otherwise gets ErrGroupDone.
//
// Cost: no allocation per task beyond its result slot, which the group
// allocates in chunks, and no channel operation per task: an answer marks
// its slot, and wakes Wait or Results only if it sleeps on that slot.
// Wait allocates the result slice. A Results range reuses the slots it
// has yielded, so a group ranged over while it is fed holds what is in
// flight and what waits to be read, not every task.
type Group[R any] struct {
	d          *Dispatcher
	ctx        context.Context
	cancel     context.CancelCauseFunc
	m          meta // its tenant and class, which views change per task
	collect    bool
	completion bool  // CompletionOrder
	bad        error // why the group was refused at construction
	// first is the failure that cancelled the group (not with
	// CollectErrors): the error itself, as its slot may be reused.
	first atomic.Pointer[error]
	sem   chan struct{} // a token per task accepted and not answered (Limit); nil without
	// wake (capacity 1) wakes the one reader, Wait or Results: when the
	// slot it sleeps on is answered, or, with CompletionOrder, when an
	// answer lands on the empty done stack.
	wake chan struct{}
	// done is the stack of kept slots answered and not yet taken by
	// Results, newest on top (CompletionOrder only): whoever completes a
	// slot, its worker or its submit, pushes it; Results takes the whole
	// stack at once.
	done atomic.Pointer[groupSlot[R]]

	mu      sync.Mutex
	settled sync.Cond // the reader waits on it for submits in progress
	// kept, to lastKept, are the kept slots in submission order, linked
	// by after; Results in submission order takes them from the front.
	// Once a Results range in completion order has begun, slots are kept
	// in pending alone.
	kept, lastKept *groupSlot[R]
	count          int           // slots kept: the next one's index
	free           *groupSlot[R] // slots to reuse, linked by next
	chunk          int           // the size of the last chunk of slots allocated
	slots          int           // slots allocated
	reserving      int           // submits in progress
	pending        int           // kept slots Results has not yielded
	waiting        bool          // the reader waits on settled
	taken          bool          // a Results range has begun: the group keeps no value it yields
	finished       bool          // Wait or Results has collected the results
	batch          *groupSlot[R] // CompletionOrder: taken off done, not yet yielded
	// yielded: the failures Results has yielded, which the group's error
	// still needs once their slots are reused.
	yielded []failure

	waitMu sync.Mutex // one Wait collects; the others return its result
	res    []R
	err    error
}

// groupSlot is one task of a group: its result slot, whose request the
// dispatcher answers by its ordinary path (value, error, panic, Goexit,
// cancellation, abandon). The slot owns its request, so the worker that
// runs it reports a failure to it as it happens; the request runs with
// the group's context.
type groupSlot[R any] struct {
	resultSlot[R]
	g     *Group[R]
	index int           // position in Wait's result
	after *groupSlot[R] // the next kept slot
	next  *groupSlot[R] // the next free slot, or the one below on done or in batch
}

// taskFailed: the group is told of a failure while its other tasks still
// run, not when Wait looks.
func (s *groupSlot[R]) taskFailed(err error) { s.g.failed(err) }

// answered frees the task's place under the group's Limit, before the
// slot is marked: the reader may then reuse it.
func (s *groupSlot[R]) answered() {
	if sem := s.g.sem; sem != nil {
		<-sem
	}
}

// answer marks the slot answered, and with CompletionOrder pushes it once
// kept: whoever sets the second of kept and answered pushes it. In
// completion order only Results, which takes slots off done, reuses one,
// so s is still the group's to push.
func (s *groupSlot[R]) answer() {
	g := s.g
	if old := s.mark(slotAnswered); g.completion && old&slotKept != 0 {
		g.push(s)
	}
}

// Chunk sizes double from the first to the last: a group of three tasks
// does not allocate a thousand slots, and a large one allocates rarely.
const (
	firstChunk = 8
	lastChunk  = 1024
)

// NewGroup starts a group of tasks returning R on d, whose context
// derives from ctx. Groups of every result type share d's workers,
// schedule and tenants. Bad input (a nil ctx or option, a Dispatcher not made
// by New) does not panic: the group's context is cancelled with the error,
// every Go returns it, TryGo reports false, and Wait returns it.
func NewGroup[R any](ctx context.Context, d *Dispatcher, opts ...GroupOption) *Group[R] {
	g := &Group[R]{d: d}
	g.settled.L = &g.mu
	g.wake = make(chan struct{}, 1)
	c := groupOptions(opts)
	g.collect, g.completion = c.collect, c.completion
	switch {
	case !d.made():
		g.bad = ErrNotStarted
	case ctx == nil:
		g.bad = ErrNilContext
	case c.err != nil:
		g.bad = c.err
	case c.share > 0 && d.schedule != Fair:
		g.bad = fmt.Errorf("%w: %w: Share(%d) needs WithSchedule(Fair): the %v schedule has no shares", ErrBadOption, ErrWrongSchedule, c.share, d.schedule)
	default:
		g.m = meta{prio: uint8(c.prio), tenant: d.groupTenant(&c, "group")}
		if c.limit > 0 {
			g.sem = make(chan struct{}, c.limit)
		}
	}
	if ctx == nil {
		ctx = context.Background()
	}
	g.ctx, g.cancel = context.WithCancelCause(ctx)
	if g.bad != nil {
		g.cancel(g.bad)
	}
	return g
}

// Context returns the group's context: the one its tasks receive. It is
// cancelled by the first failure (unless CollectErrors), when the parent
// ends, and when Wait returns; context.Cause tells which first error it was.
func (g *Group[R]) Context() context.Context { return g.ctx }

// Go submits task, waiting for room while the dispatcher is full
// (backpressure) until the group's context ends. It returns nil once the
// task is accepted. Otherwise the task does not run and Go returns why
// (ErrNilTask, ErrClosed, the context's error, ...); that refusal is also
// the task's answer in Wait, so the i-th Go's result is Wait's i-th
// whatever happens, and without CollectErrors it cancels the group if it
// is the first failure. After Wait has returned, Go returns ErrGroupDone
// and the task has no result.
func (g *Group[R]) Go(task func(context.Context) (R, error)) error {
	return g.submit(g.m, task, true)
}

// TryGo submits task if the dispatcher has room right now and reports
// whether it did. A task not accepted (no room, the group's context
// ended, the dispatcher closed, a nil task, Wait returned) has no result.
func (g *Group[R]) TryGo(task func(context.Context) (R, error)) bool {
	return g.submit(g.m, task, false) == nil
}

// GroupView submits a group's tasks with a routing key and a priority
// class (see Dispatcher.Key and Dispatcher.Priority). Views compose:
// g.Key(k).Priority(p).
type GroupView[R any] struct {
	g *Group[R]
	m meta
}

// Key returns a view of g whose tasks carry the routing key k.
func (g *Group[R]) Key(k uint64) GroupView[R] { return GroupView[R]{g: g, m: g.m}.Key(k) }

// Priority returns a view of g whose tasks are of priority class p (see
// Dispatcher.Priority).
func (g *Group[R]) Priority(p int) GroupView[R] { return GroupView[R]{g: g, m: g.m}.Priority(p) }

// Key returns the view with routing key k.
func (v GroupView[R]) Key(k uint64) GroupView[R] { v.m.key = k; return v }

// Priority returns the view with priority class p. A class out of range
// is refused by Go and TryGo.
func (v GroupView[R]) Priority(p int) GroupView[R] { v.m.prio = classOf(p); return v }

// Go is Group.Go with the view's key and class.
func (v GroupView[R]) Go(task func(context.Context) (R, error)) error {
	return v.g.submit(v.m, task, true)
}

// TryGo is Group.TryGo with the view's key and class.
func (v GroupView[R]) TryGo(task func(context.Context) (R, error)) bool {
	return v.g.submit(v.m, task, false) == nil
}

func (g *Group[R]) submit(m meta, task func(context.Context) (R, error), block bool) error {
	if g == nil || g.d == nil {
		return ErrNotStarted // a zero Group or GroupView: not made by NewGroup
	}
	s, err := g.reserve(block)
	if err != nil {
		return err
	}
	s.fn = task
	s.r.ctx, s.r.job, s.r.meta = g.ctx, &s.typed, m
	err = g.bad
	if err == nil {
		err = g.d.check(g.ctx, task != nil, m)
	}
	if err == nil && g.sem != nil {
		err = g.acquire(block)
	}
	if err == nil {
		err = g.d.enqueue(g.ctx, &s.r, block)
		if err != nil && g.sem != nil {
			<-g.sem
		}
	}
	g.settle(s, err, block)
	return err
}

// acquire takes a place under the group's Limit, waiting for one if block
// until the group's context ends or Close begins (ErrClosed, as a submit
// waiting for the intake gets).
func (g *Group[R]) acquire(block bool) error {
	if g.d.life.Load() != lifeOpen {
		return ErrClosed
	}
	select {
	case g.sem <- struct{}{}:
		return nil
	default:
	}
	if !block {
		return ErrBusy
	}
	select {
	case g.sem <- struct{}{}:
		return nil
	case <-g.ctx.Done():
		return g.ctx.Err()
	case <-g.d.closing:
		return ErrClosed
	}
}

// reserve takes a slot for one submit. Go's slot is kept whatever
// happens, so it takes its place in submission order now, before the
// task runs and submits others (TryGo's, only once accepted).
func (g *Group[R]) reserve(keep bool) (*groupSlot[R], error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.finished {
		return nil, ErrGroupDone
	}
	g.reserving++
	s := g.free
	if s != nil {
		g.free, s.next = s.next, nil
	} else {
		s = g.alloc()
	}
	if keep {
		g.place(s)
	}
	return s, nil
}

// alloc makes a chunk of slots, keeps all but one free and returns that
// one. A chunk never moves: the dispatcher holds pointers into it.
func (g *Group[R]) alloc() *groupSlot[R] {
	g.chunk = min(max(2*g.chunk, firstChunk), lastChunk)
	c := make([]groupSlot[R], g.chunk)
	g.slots += len(c)
	for i := range c {
		s := &c[i]
		s.g = g
		s.init(g.wake, s)
		s.r.owner = s
		if i > 0 {
			g.free, s.next = s, g.free
		}
	}
	return &c[0]
}

// settle records how a submit ended. A slot keeps its place (its index)
// when the dispatcher accepted it, or when Go was refused, whose refusal
// is then its answer; a refused TryGo gives it back for the next submit.
func (g *Group[R]) settle(s *groupSlot[R], err error, keep bool) {
	g.mu.Lock()
	g.reserving--
	bits := slotKept
	switch {
	case err == nil:
		if !keep {
			g.place(s) // an accepted TryGo
		}
	case keep:
		s.r.err = err
		s.r.ctx, s.r.job, s.fn = nil, nil, nil
		bits |= slotAnswered // the refusal is its answer: no other comes
	default:
		s.r.ctx, s.r.job, s.fn = nil, nil, nil
		g.free, s.next = s, g.free
		bits = 0
	}
	if bits != 0 {
		if old := s.mark(bits); g.completion && (old|bits)&slotAnswered != 0 {
			g.push(s) // answered before its submit returned, or refused
		}
	}
	if g.waiting {
		g.settled.Broadcast()
	}
	g.mu.Unlock()
	if err != nil && keep {
		g.failed(err)
	}
}

// place gives s the next index, for Wait's result, and keeps it in
// submission order.
func (g *Group[R]) place(s *groupSlot[R]) {
	s.index = g.count
	g.count++
	g.pending++
	if g.completion && g.taken {
		return // Results takes it off done: nothing keeps it in order
	}
	if g.lastKept == nil {
		g.kept = s
	} else {
		g.lastKept.after = s
	}
	g.lastKept = s
}

// failed notes that a task failed with err as it happened: the first such
// failure is the group's error and, unless the group collects errors,
// cancels its context with err as the cause.
func (g *Group[R]) failed(err error) {
	if g.collect || g.first.Load() != nil {
		return
	}
	p := new(error) // once or so a group: only until the first is in
	*p = err
	if g.first.CompareAndSwap(nil, p) {
		g.cancel(err)
	}
}

// Wait waits for every task submitted before it (and those the tasks
// submit meanwhile) and returns their values in submission order, with
// the zero value for a task that failed (whatever it returned beside its
// error, which only Results yields) or never ran. Its error is the
// first failure, or with CollectErrors every error joined in submission
// order; nil when every task succeeded. Wait then cancels the group's
// context, as errgroup does. Later calls return the same slice and error.
// Once a Results range has begun, the values are the range's: the group
// does not keep them, and Wait returns a nil slice (and the error).
func (g *Group[R]) Wait() ([]R, error) {
	if g == nil || g.d == nil {
		return nil, ErrNotStarted
	}
	g.waitMu.Lock()
	defer g.waitMu.Unlock()
	if g.finished {
		return g.res, g.err
	}
	g.mu.Lock()
	g.drain()
	g.finish()
	return g.res, g.err
}
