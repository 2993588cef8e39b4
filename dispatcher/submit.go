package dispatcher

import (
	"context"
	"fmt"
	"sync"
)

// Do submits fn to t (a *Dispatcher, or a View of one) and waits for its
// answer: fn's value and error, a *PanicError, ErrTaskExited, or ctx's
// error if ctx ends first (fn then never starts if it had not). It blocks
// while there is no room (backpressure) and returns ErrClosed once Close
// has begun. R is inferred from fn: tasks of any result type share one
// dispatcher, its workers, schedule and tenants. Do allocates nothing.
func Do[R any, T Target](ctx context.Context, t T, fn func(context.Context) (R, error)) (R, error) {
	d, m := t.target()
	var zero R
	if err := d.check(ctx, fn != nil, m); err != nil {
		return zero, err
	}
	p := callPool[R](d)
	c := p.Get().(*call[R])
	c.fn = fn
	c.r.ctx, c.r.job, c.r.meta = ctx, &c.typed, m
	if err := d.enqueue(ctx, &c.r, true); err != nil {
		c.release(p)
		return zero, err
	}
	if !await(ctx, &c.r) {
		// The worker still owns c; leave it to the garbage collector.
		return zero, ctx.Err()
	}
	v, err := c.res, c.r.err
	c.release(p)
	return v, err
}

// Submit submits fn to t and returns its Future without waiting for the
// answer. It blocks while there is no room, until ctx ends. Submit
// allocates nothing when it reuses a Future handed back by Release, one
// small object otherwise.
func Submit[R any, T Target](ctx context.Context, t T, fn func(context.Context) (R, error)) (*Future[R], error) {
	d, m := t.target()
	return submit(ctx, d, m, fn, true)
}

// TrySubmit is Submit that never waits for room: it returns ErrBusy when
// there is no room for the request right now. With a zero intake buffer
// on the channel engine, "room" is a worker with room and no request
// waiting, and TrySubmit waits for the balancer to receive the request
// (microseconds) while that holds.
func TrySubmit[R any, T Target](ctx context.Context, t T, fn func(context.Context) (R, error)) (*Future[R], error) {
	d, m := t.target()
	return submit(ctx, d, m, fn, false)
}

// Go submits fn and returns without waiting: fn's error is discarded, a
// panic is contained (the worker survives; Stats counts it in Panics).
// Like Submit it blocks while there is no room, until ctx ends, and
// returns ErrClosed once Close has begun. Close waits for fn. Go
// allocates nothing: it suits batches where the task itself records its
// outcome; a Group collects values and errors.
func (d *Dispatcher) Go(ctx context.Context, fn func(context.Context) error) error {
	return d.goMeta(ctx, meta{}, fn)
}

func (d *Dispatcher) goMeta(ctx context.Context, m meta, fn goTask) error {
	if err := d.check(ctx, fn != nil, m); err != nil {
		return err
	}
	if !d.admission {
		return d.eng.enqueueGo(ctx, m, fn)
	}
	if err := d.admitGo(ctx, m); err != nil {
		return err
	}
	err := d.eng.enqueueGo(ctx, m, fn)
	if err != nil {
		d.adm.accepted.Add(-1)
	}
	return err
}

// Target is where Do, Submit and TrySubmit send a task: a *Dispatcher, or
// a View of one, which adds a routing key or a priority class.
type Target interface {
	*Dispatcher | View
	target() (*Dispatcher, meta)
}

func (d *Dispatcher) target() (*Dispatcher, meta) { return d, meta{} }

func (v View) target() (*Dispatcher, meta) { return v.d, v.m }

// View submits requests carrying a routing key, a priority class, a
// tenant, or several; make one with Dispatcher.Key, Dispatcher.Priority or
// Dispatcher.Tenant, and compose: d.Key(k).Priority(p).
//
// Keys: affinity strategies (consistent-hash, bounded-hash) send equal
// keys to the same worker. Under consistent-hash, requests with one key
// go to one worker while the workers stay the same, and one requester's
// requests with a key run in the order it submitted them, within one
// priority class and one tenant (a schedule orders only across those;
// ByDeadline orders by deadline first): the balancer hands requests of a
// class and tenant out in order and a worker runs its queue in order.
// Adding, removing or re-weighting a worker may move the key; requests
// still queued at its old worker may then run after the first ones at
// the new.
//
// Under bounded-hash a key goes to that worker only while the worker is
// under its load bound; when it is at the bound, the request goes on to
// another worker and may run before earlier requests of its key. So a key
// submitted faster than it is served spreads over several workers, and
// its requests keep their order only when the requester waits for each
// answer before submitting the next (Do, or Submit then Wait).
type View struct {
	d *Dispatcher
	m meta
}

// Tenant returns a view of d whose requests form one flow, a tenant
// named name in Stats.Tenants and weighing share (1 to MaxShare) under
// the Fair schedule, as a Group with Tenant(name) and Share(share) does.
// Each call makes a flow of its own: keep the view and submit through it
// (from any number of goroutines) for the tenant's requests to share one
// weight. The name must not be empty or DefaultTenant's, and a share
// other than 1 needs WithSchedule(Fair) (ErrWrongSchedule); either is an
// error wrapping ErrBadOption.
func (d *Dispatcher) Tenant(name string, share int) (View, error) {
	c := groupOptions([]GroupOption{Tenant(name), Share(share)})
	switch {
	case !d.made():
		return View{}, ErrNotStarted
	case c.err != nil:
		return View{}, c.err
	case share != 1 && d.schedule != Fair:
		return View{}, fmt.Errorf("%w: %w: share %d needs WithSchedule(Fair): the %v schedule has no shares", ErrBadOption, ErrWrongSchedule, share, d.schedule)
	}
	return View{d: d, m: meta{tenant: d.groupTenant(&c, name)}}, nil
}

// Key returns a view of d whose requests carry the routing key k.
func (d *Dispatcher) Key(k uint64) View { return View{d: d, m: meta{key: k}} }

// Priority returns a view of d whose requests are of priority class p, 0
// (the default) to MaxPriority, which the ByPriority schedule orders by.
// Under another schedule a class other than 0 is refused with
// ErrWrongSchedule, and a class out of range with ErrBadOption, by every
// submit of the view.
func (d *Dispatcher) Priority(p int) View { return View{d: d}.Priority(p) }

// Key returns the view with routing key k.
func (v View) Key(k uint64) View { v.m.key = k; return v }

// Priority returns the view with priority class p.
func (v View) Priority(p int) View { v.m.prio = classOf(p); return v }

// Go is Dispatcher.Go with the view's key and class.
func (v View) Go(ctx context.Context, fn func(context.Context) error) error {
	return v.d.goMeta(ctx, v.m, fn)
}

// badClass marks a priority class out of range, refused at submit.
const badClass = 255

func classOf(p int) uint8 {
	if p < 0 || p > MaxPriority {
		return badClass
	}
	return uint8(p)
}

// enqueue refuses what admission refuses, then hands r to the engine.
func (d *Dispatcher) enqueue(ctx context.Context, r *request, block bool) error {
	if !d.admission {
		return d.eng.enqueue(ctx, r, block)
	}
	if err := d.admit(ctx, r); err != nil {
		return err
	}
	err := d.eng.enqueue(ctx, r, block)
	if err != nil {
		d.adm.accepted.Add(-1)
	}
	return err
}

func (d *Dispatcher) check(ctx context.Context, hasTask bool, m meta) error {
	if !d.made() {
		return ErrNotStarted
	}
	if ctx == nil {
		return ErrNilContext
	}
	if !hasTask {
		return ErrNilTask
	}
	if m.prio != 0 {
		if m.prio == badClass {
			return fmt.Errorf("%w: priority class out of range [0, %d]", ErrBadOption, MaxPriority)
		}
		if d.schedule != ByPriority {
			return fmt.Errorf("%w: %w: priority class %d needs WithSchedule(ByPriority), not %v", ErrBadOption, ErrWrongSchedule, m.prio, d.schedule)
		}
	}
	// A context already done: the task never runs.
	return ctx.Err()
}

// await waits for r's answer, or for ctx to end first: then it reports
// false, and the worker still owns r.
func await(ctx context.Context, r *request) bool {
	cancel := ctx.Done()
	if cancel == nil {
		// A context that is never done: a plain receive, which costs less
		// than a select (one channel lock instead of sorting and locking a
		// set of cases).
		<-r.done
		return true
	}
	select {
	case <-r.done:
		return true
	case <-cancel:
		select {
		case <-r.done: // answered meanwhile: prefer the answer
			return true
		default:
			return false
		}
	}
}

// call is a Do request and its typed holder, recycled by its requester
// through the pool of its result type.
type call[R any] struct {
	r request
	typed[R]
}

// release clears c and puts it back in p, its result type's pool.
func (c *call[R]) release(p *sync.Pool) {
	c.clear()
	c.r.ctx, c.r.job, c.r.err = nil, nil, nil
	p.Put(c)
}

// poolKey names the pool of the holders of result type R (what
// distinguishes the keys is their type, so one costs nothing to make).
type poolKey[R any, H any] struct{}

// poolOf returns d's pool of holders of type H for result type R. Each
// dispatcher keeps its own, as before it was untyped: a holder's answer
// channel then never crosses from one dispatcher's goroutines to
// another's (a synctest bubble, say).
func poolOf[R, H any](d *Dispatcher) (*sync.Pool, bool) {
	p, ok := d.pools.Load(poolKey[R, H]{})
	if !ok {
		return nil, false
	}
	return p.(*sync.Pool), true
}

// addPool makes the pool poolOf found missing. Callers make mk only then:
// a closure in a generic function carries its type dictionary, so making
// one per call would allocate.
func addPool[R, H any](d *Dispatcher, mk func() any) *sync.Pool {
	p, _ := d.pools.LoadOrStore(poolKey[R, H]{}, &sync.Pool{New: mk})
	return p.(*sync.Pool)
}

func callPool[R any](d *Dispatcher) *sync.Pool {
	if p, ok := poolOf[R, call[R]](d); ok {
		return p
	}
	return addPool[R, call[R]](d, func() any { return &call[R]{r: request{done: make(chan struct{}, 1)}} })
}

func submit[R any](ctx context.Context, d *Dispatcher, m meta, fn func(context.Context) (R, error), block bool) (*Future[R], error) {
	if err := d.check(ctx, fn != nil, m); err != nil {
		return nil, err
	}
	f := futurePool[R](d).Get().(*Future[R])
	f.state.Store(0)
	f.fn = fn
	f.r.ctx, f.r.job, f.r.meta = ctx, &f.typed, m
	if err := d.enqueue(ctx, &f.r, block); err != nil {
		f.putBack()
		return nil, err
	}
	return f, nil
}
