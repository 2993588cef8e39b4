package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"sync/atomic"
)

// ErrGroupDone: Go or TryGo on a Group whose Wait has returned. A Group
// runs one batch; start another with Dispatcher.Group.
var ErrGroupDone = errors.New("dispatcher: group already waited")

// Group runs a batch of tasks on a dispatcher, as errgroup.WithContext or
// pond's groups do, and collects their answers in submission order. Make
// it with Dispatcher.Group; submit with Go (waits for room) or TryGo
// (never waits); collect with Wait, or range over Results to take each
// answer as soon as those before it are in. Many groups may share one
// dispatcher: their tasks meet in its intake like any other requests.
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
// allocates in chunks; Wait allocates the result slice.
type Group[R any] struct {
	d       *Dispatcher[R]
	ctx     context.Context
	cancel  context.CancelCauseFunc
	collect bool
	bad     error // why the group was refused at construction
	first   atomic.Pointer[groupSlot[R]]
	tenant  *tenant
	sem     chan struct{} // a token per task accepted and not answered (Limit); nil without

	mu        sync.Mutex
	wake      sync.Cond // Wait waits on it for submits in progress
	chunks    []*groupChunk[R]
	spare     []*groupSlot[R] // slots of refused TryGo calls, for reuse
	count     int             // slots kept: the next kept slot's index
	accepts   int             // slots the dispatcher accepted, ever
	reserving int             // slots taken whose submit has not returned
	waiting   bool            // Wait is in wake.Wait
	finished  bool            // Wait has collected the results

	// The kept slots as a list in index order, for Results (no
	// allocation: each slot links the next).
	kept, lastKept *groupSlot[R]

	waitMu sync.Mutex // one Wait collects; the others return its result
	res    []R
	err    error
}

// groupChunk is a run of slots that never moves (the dispatcher holds
// pointers into it) and the channel its requests are answered on. The
// channel holds one token per slot, so a worker's answer never blocks
// even when nobody is in Wait yet.
type groupChunk[R any] struct {
	slots    []groupSlot[R]
	used     int // slots handed out
	accepted int // answers that will arrive on done
	received int // answers Wait has taken
	done     chan struct{}
}

// groupSlot is one task of a group: its request, answered by the
// dispatcher's ordinary path (value, error, panic, Goexit, cancellation,
// abandon), is the result slot. The slot is the request's owner, so the
// worker that runs it reports a failure to it as it happens; the request
// runs with the group's context.
type groupSlot[R any] struct {
	r     request[R]
	g     *Group[R]
	c     *groupChunk[R]
	index int // position in Wait's result, or -1 while not kept
	// ready: the answer (or a Go's refusal) is in r, set before the
	// answer's token; Results waits for it slot by slot.
	ready atomic.Bool
	next  *groupSlot[R] // the next kept slot (index+1), under g.mu
}

// taskFailed: the group is told of a failure while its other tasks still
// run, not when Wait looks.
func (s *groupSlot[R]) taskFailed(err error) { s.g.failed(s, err) }

// answered frees the task's place under the group's Limit.
func (s *groupSlot[R]) answered() {
	s.ready.Store(true)
	if s.g.sem != nil {
		<-s.g.sem
	}
}

// Chunk sizes double from the first to the last: a group of three tasks
// does not allocate a thousand slots, and a large one allocates rarely.
const (
	firstChunk = 8
	lastChunk  = 1024
)

// GroupOption configures a Group.
type GroupOption interface{ applyGroup(*groupConfig) }

type groupConfig struct {
	collect bool
	limit   int // Limit; 0 without
	share   int // Share; 0 without
	name    string
	err     error // the first bad option
}

func (c *groupConfig) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

type groupOptionFunc func(*groupConfig)

func (f groupOptionFunc) applyGroup(c *groupConfig) { f(c) }

// CollectErrors makes the group run every task whatever the others do, as
// conc's WithErrors: a failure cancels nothing, and Wait returns every
// error, in submission order, joined with errors.Join.
func CollectErrors() GroupOption {
	return groupOptionFunc(func(c *groupConfig) { c.collect = true })
}

// Group starts a group of tasks on d whose context derives from ctx. It is
// a method, not a generic function, because the group's result type is
// the dispatcher's. Bad input (a nil ctx or option, a Dispatcher not made
// by New) does not panic: the group's context is cancelled with the error,
// every Go returns it, TryGo reports false, and Wait returns it.
func (d *Dispatcher[R]) Group(ctx context.Context, opts ...GroupOption) *Group[R] {
	g := &Group[R]{d: d}
	g.wake.L = &g.mu
	var c groupConfig
	for _, o := range opts {
		if o == nil {
			c.fail(fmt.Errorf("%w: nil group option", ErrBadOption))
			continue
		}
		o.applyGroup(&c)
	}
	g.collect = c.collect
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
		g.tenant = d.groupTenant(&c)
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
func (g *Group[R]) Go(task Task[R]) error { return g.submit(meta{}, task, true) }

// TryGo submits task if the dispatcher has room right now and reports
// whether it did. A task not accepted (no room, the group's context
// ended, the dispatcher closed, a nil task, Wait returned) has no result.
func (g *Group[R]) TryGo(task Task[R]) bool { return g.submit(meta{}, task, false) == nil }

// GroupView submits a group's tasks with a routing key and a priority
// class (see Dispatcher.Key and Dispatcher.Priority). Views compose:
// g.Key(k).Priority(p).
type GroupView[R any] struct {
	g *Group[R]
	m meta
}

// KeyedGroup is the view Group.Key returns.
type KeyedGroup[R any] = GroupView[R]

// Key returns a view of g whose tasks carry the routing key k.
func (g *Group[R]) Key(k uint64) GroupView[R] { return GroupView[R]{g: g, m: meta{key: k}} }

// Priority returns a view of g whose tasks are of priority class p (see
// Dispatcher.Priority).
func (g *Group[R]) Priority(p int) GroupView[R] { return GroupView[R]{g: g}.Priority(p) }

// Key returns the view with routing key k.
func (v GroupView[R]) Key(k uint64) GroupView[R] { v.m.key = k; return v }

// Priority returns the view with priority class p. A class out of range
// is refused by Go and TryGo.
func (v GroupView[R]) Priority(p int) GroupView[R] { v.m.prio = classOf(p); return v }

// Go is Group.Go with the view's key and class.
func (v GroupView[R]) Go(task Task[R]) error { return v.g.submit(v.m, task, true) }

// TryGo is Group.TryGo with the view's key and class.
func (v GroupView[R]) TryGo(task Task[R]) bool { return v.g.submit(v.m, task, false) == nil }

func (g *Group[R]) submit(m meta, task Task[R], block bool) error {
	if g == nil || g.d == nil {
		return ErrNotStarted // a zero Group or GroupView: not made by Dispatcher.Group
	}
	s, err := g.reserve()
	if err != nil {
		return err
	}
	s.r.ctx, s.r.fn, s.r.meta, s.r.owner, s.r.tenant = g.ctx, task, m, s, g.tenant
	err = g.bad
	if err == nil {
		err = g.d.check(g.ctx, task, m)
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

// reserve takes a slot for one submit.
func (g *Group[R]) reserve() (*groupSlot[R], error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.finished {
		return nil, ErrGroupDone
	}
	g.reserving++
	if n := len(g.spare); n > 0 {
		s := g.spare[n-1]
		g.spare = g.spare[:n-1]
		return s, nil
	}
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
	}
	s := &c.slots[c.used]
	c.used++
	s.g, s.c, s.index = g, c, -1
	s.r.done = c.done
	return s, nil
}

// settle records how a submit ended. A slot keeps its place (its index)
// when the dispatcher accepted it, or when Go was refused; a refused TryGo
// gives it back for the next submit.
func (g *Group[R]) settle(s *groupSlot[R], err error, keep bool) {
	g.mu.Lock()
	g.reserving--
	switch {
	case err == nil:
		s.index = g.count
		g.count++
		s.c.accepted++
		g.accepts++
		g.keep(s)
	case keep:
		s.index = g.count
		g.count++
		s.r.err = err // no answer will come: the refusal is the answer
		s.r.ctx, s.r.fn = nil, nil
		s.ready.Store(true)
		g.keep(s)
	default:
		s.r.ctx, s.r.fn = nil, nil
		g.spare = append(g.spare, s)
	}
	if g.waiting && g.reserving == 0 {
		g.wake.Broadcast()
	}
	g.mu.Unlock()
	if err != nil && keep {
		g.failed(s, err)
	}
}

// keep appends the slot just given its index to the list of kept slots.
func (g *Group[R]) keep(s *groupSlot[R]) {
	if g.lastKept == nil {
		g.kept = s
	} else {
		g.lastKept.next = s
	}
	g.lastKept = s
}

// failed notes that s failed with err as it happened: the first such
// failure is the group's error and, unless the group collects errors,
// cancels its context with err as the cause.
func (g *Group[R]) failed(s *groupSlot[R], err error) {
	if !g.collect && g.first.CompareAndSwap(nil, s) {
		g.cancel(err)
	}
}

// Wait waits for every task submitted before it (and those the tasks
// submit meanwhile) and returns their values in submission order, with
// the zero value for a task that failed or never ran. Its error is the
// first failure, or with CollectErrors every error joined in submission
// order; nil when every task succeeded. Wait then cancels the group's
// context, as errgroup does. Later calls return the same slice and error.
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
	for {
		gen := g.accepts
		// chunks may grow while the lock is released: index, not range.
		for i := 0; i < len(g.chunks); i++ {
			c := g.chunks[i]
			for c.received < c.accepted {
				g.mu.Unlock()
				<-c.done
				g.mu.Lock()
				c.received++
			}
		}
		if g.reserving > 0 {
			g.waiting = true
			g.wake.Wait()
			g.waiting = false
			continue
		}
		if g.accepts == gen {
			break
		}
	}
	g.finish()
	return g.res, g.err
}

// finish collects the results once every kept slot is answered and no
// submit is in progress; g.mu is held, and released.
func (g *Group[R]) finish() {
	g.finished = true
	chunks, count := g.chunks, g.count
	g.chunks, g.spare, g.kept, g.lastKept = nil, nil, nil, nil
	g.mu.Unlock()

	g.res, g.err = g.results(chunks, count)
	g.cancel(nil)
}

// Results returns the group's answers as an iterator: each task's value
// and error, in submission order, each yielded as soon as it and every
// task before it are answered, while tasks still run and others are
// submitted (from the loop body too). A Go that was refused yields its
// refusal. The sequence ends as Wait returns: once every task submitted
// before (and by the tasks meanwhile) has been yielded. The group is
// then done, as after Wait: Wait returns the results and error it would
// have, later submits get ErrGroupDone, the context is cancelled.
//
// Leaving the range early cancels the group's context and waits for
// every task, as Wait does, before the range returns; Wait then returns
// the results. Results on a group already done (Wait or a Results range
// has ended) yields one (zero, ErrGroupDone); on a group not made by
// Dispatcher.Group, (zero, ErrNotStarted). A range and a Wait, or two
// ranges, run one after the other, as two Waits do. Results has no
// completion order: the answers of a group are collected in submission
// order (Map is the stream's tool).
func (g *Group[R]) Results() iter.Seq2[R, error] {
	return func(yield func(R, error) bool) {
		var zero R
		if g == nil || g.d == nil {
			yield(zero, ErrNotStarted)
			return
		}
		g.waitMu.Lock()
		defer g.waitMu.Unlock()
		if g.finished {
			yield(zero, ErrGroupDone)
			return
		}
		g.mu.Lock()
		more := true
		var last *groupSlot[R] // the last slot taken; nil before the first
		for {
			for {
				s := g.kept
				if last != nil {
					s = last.next
				}
				if s == nil {
					break
				}
				last = s
				for !s.ready.Load() {
					// Each token follows one slot's ready: take them until
					// this slot's has come.
					g.mu.Unlock()
					<-s.c.done
					g.mu.Lock()
					s.c.received++
				}
				if !more {
					continue
				}
				v, err := s.r.res, s.r.err
				g.mu.Unlock()
				more = yield(v, err) // unlocked: the body may submit
				if !more {
					g.cancel(context.Canceled)
				}
				g.mu.Lock()
			}
			if g.reserving > 0 {
				g.waiting = true
				g.wake.Wait()
				g.waiting = false
				continue
			}
			break
		}
		g.finish()
	}
}

// results reads every kept slot once all are answered.
func (g *Group[R]) results(chunks []*groupChunk[R], count int) ([]R, error) {
	res := make([]R, count)
	var errs []error
	if g.collect {
		errs = make([]error, count)
	}
	var firstErr error
	firstAt := count
	for _, c := range chunks {
		for i := range c.used {
			s := &c.slots[i]
			if s.index < 0 {
				continue
			}
			res[s.index] = s.r.res
			if s.r.err == nil {
				continue
			}
			if errs != nil {
				errs[s.index] = s.r.err
			}
			if s.index < firstAt {
				firstAt, firstErr = s.index, s.r.err
			}
		}
	}
	switch {
	case g.bad != nil:
		return res, g.bad
	case g.collect:
		return res, errors.Join(errs...)
	}
	if s := g.first.Load(); s != nil {
		// The failure that cancelled the group, not the cancellations it
		// caused in the tasks queued before it.
		return res, s.r.err
	}
	// Only failures the group did not see happen (a request answered
	// without running: the parent context ended, Close gave up, a strategy
	// picked no worker): the first in submission order.
	return res, firstErr
}
