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
// allocates in chunks; Wait allocates the result slice. A Results range
// reuses the slots it has yielded, so a group ranged over while it is fed
// holds what is in flight and what waits to be read, not every task.
type Group[R any] struct {
	d          *Dispatcher
	ctx        context.Context
	cancel     context.CancelCauseFunc
	collect    bool
	completion bool  // CompletionOrder
	bad        error // why the group was refused at construction
	// first is the failure that cancelled the group (not with
	// CollectErrors): the error itself, as its slot may be reused.
	first  atomic.Pointer[error]
	tenant *tenant
	m      meta          // the class of its tasks (Priority), which views change
	sem    chan struct{} // a token per task accepted and not answered (Limit); nil without

	// done is the stack of kept slots answered and not yet taken by
	// Results, newest on top (CompletionOrder only): whoever completes a
	// slot, its worker or its submit, pushes it; Results takes the whole
	// stack at once. doneWake (capacity 1) gets a token when a push finds
	// the stack empty: Results sleeps on it only after finding it empty.
	done     atomic.Pointer[groupSlot[R]]
	doneWake chan struct{}

	mu        sync.Mutex
	wake      sync.Cond // Wait and Results wait on it for submits in progress
	chunks    []*groupChunk[R]
	free      *groupSlot[R] // slots to reuse (refused TryGo calls', and those Results yielded), linked by next
	slots     int           // slots allocated
	count     int           // slots kept: the next kept slot's index
	accepts   int           // slots the dispatcher accepted, ever
	reserving int           // slots taken whose submit has not returned
	pending   int           // kept slots Results has not yielded
	waiting   bool          // Wait or Results is in wake.Wait
	taken     bool          // a Results range has begun: the group keeps no value it yields
	finished  bool          // Wait or Results has collected the results

	// The kept slots as a list in index order, for Results in submission
	// order (no allocation: each slot links the next); Results takes them
	// from the front. batch: the slots Results took off done and has not
	// yielded yet, in completion order.
	kept, lastKept *groupSlot[R]
	batch          *groupSlot[R]
	// yielded: the failures Results has yielded, which the group's error
	// still needs once their slots are reused (see note).
	yielded []failure

	waitMu sync.Mutex // one Wait collects; the others return its result
	res    []R
	err    error
}

// groupChunk is a run of slots that never moves (the dispatcher holds
// pointers into it) and the channel its requests are answered on. The
// channel holds one token per slot, so a worker's answer never blocks
// even when nobody is in Wait yet.
//
// Tokens do not say whose answer they are, so a slot Results yields is
// reused only once its chunk has had a token taken for every accepted
// slot freed (received >= freed): the tokens not yet taken are then
// those of slots not yet freed, at most one each, and a worker's answer
// still never blocks. The worker that answered the freed slot may not
// have sent its token yet; after answered it reads only r.fut and r.done,
// which a slot never changes, so reusing the slot races with nothing.
type groupChunk[R any] struct {
	slots    []groupSlot[R]
	used     int // slots handed out
	accepted int // answers that will arrive on done
	received int // answers Wait or Results has taken
	freed    int // accepted slots Results yielded and freed for reuse
	done     chan struct{}
}

// groupSlot is one task of a group: its request, answered by the
// dispatcher's ordinary path (value, error, panic, Goexit, cancellation,
// abandon), is the result slot. The slot is the request's owner, so the
// worker that runs it reports a failure to it as it happens; the request
// runs with the group's context.
type groupSlot[R any] struct {
	r request
	typed[R]
	g     *Group[R]
	c     *groupChunk[R]
	index int // position in Wait's result, or -1 while not kept (or freed)
	// state: slotKept once its submit has settled, slotAnswered once the
	// answer (or a Go's refusal, then also slotRefused) is in r, set
	// before the answer's token; Results in submission order waits for it
	// slot by slot. With CompletionOrder whoever sets the second of kept
	// and answered pushes the slot on g.done.
	state atomic.Uint32
	// next: the next kept slot (index+1), or the next free one, under
	// g.mu; with CompletionOrder, the slot below it on g.done or in
	// g.batch.
	next *groupSlot[R]
}

const (
	slotKept uint32 = 1 << iota
	slotAnswered
	slotRefused // kept with a Go's refusal: no token comes
)

// taskFailed: the group is told of a failure while its other tasks still
// run, not when Wait looks.
func (s *groupSlot[R]) taskFailed(err error) { s.g.failed(err) }

// answered frees the task's place under the group's Limit, then marks the
// slot answered: last, as Results may then yield and reuse it.
func (s *groupSlot[R]) answered() {
	g := s.g
	if g.sem != nil {
		<-g.sem
	}
	if s.state.Or(slotAnswered)&slotKept != 0 && g.completion {
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
	g.wake.L = &g.mu
	c := groupOptions(opts)
	g.collect, g.completion = c.collect, c.completion
	if g.completion {
		g.doneWake = make(chan struct{}, 1)
	}
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
		g.tenant = d.groupTenant(&c, "group")
		g.m.prio = uint8(c.prio)
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
	return g.submit(meta{}, task, true)
}

// TryGo submits task if the dispatcher has room right now and reports
// whether it did. A task not accepted (no room, the group's context
// ended, the dispatcher closed, a nil task, Wait returned) has no result.
func (g *Group[R]) TryGo(task func(context.Context) (R, error)) bool {
	return g.submit(meta{}, task, false) == nil
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
	m.tenant = g.tenant
	s.r.ctx, s.r.job, s.r.meta, s.r.owner = g.ctx, &s.typed, m, s
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

// alloc hands out the next slot of the last chunk, or of a new one.
func (g *Group[R]) alloc() *groupSlot[R] {
	var c *groupChunk[R]
	if n := len(g.chunks); n > 0 && g.chunks[n-1].used < len(g.chunks[n-1].slots) {
		c = g.chunks[n-1]
	} else {
		size := firstChunk
		if n > 0 {
			size = min(2*len(g.chunks[n-1].slots), lastChunk)
		}
		c = &groupChunk[R]{slots: make([]groupSlot[R], size), done: make(chan struct{}, size)}
		g.chunks = append(g.chunks, c)
		g.slots += size
	}
	s := &c.slots[c.used]
	c.used++
	s.g, s.c, s.index = g, c, -1
	s.r.done = c.done
	return s
}

// settle records how a submit ended. A slot keeps its place (its index)
// when the dispatcher accepted it, or when Go was refused; a refused TryGo
// gives it back for the next submit. Kept, it may now be yielded once
// answered (it is not before: Results must not free a slot its submit
// still holds).
func (g *Group[R]) settle(s *groupSlot[R], err error, keep bool) {
	g.mu.Lock()
	g.reserving--
	kept := err == nil || keep
	bits := slotKept
	switch {
	case err == nil:
		s.c.accepted++
		g.accepts++
	case keep:
		s.r.err = err // no answer will come: the refusal is the answer
		s.r.ctx, s.r.job, s.fn = nil, nil, nil
		bits |= slotAnswered | slotRefused
	default:
		s.r.ctx, s.r.job, s.fn = nil, nil, nil
		g.free, s.next = s, g.free
	}
	if kept {
		if !keep {
			g.place(s) // an accepted TryGo
		}
		if old := s.state.Or(bits); g.completion && (old|bits)&slotAnswered != 0 {
			g.push(s) // answered before its submit returned, or refused
		}
	}
	if g.waiting && (kept || g.reserving == 0) {
		g.wake.Broadcast()
	}
	g.mu.Unlock()
	if err != nil && keep {
		g.failed(err)
	}
}

// place gives s the next index, for Wait's result, and, in submission
// order, appends it to the list of kept slots Results reads.
func (g *Group[R]) place(s *groupSlot[R]) {
	s.index = g.count
	g.count++
	g.pending++
	if g.completion {
		return
	}
	if g.lastKept == nil {
		g.kept = s
	} else {
		g.lastKept.next = s
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
