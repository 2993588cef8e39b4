package dispatcher

import (
	"context"
	"fmt"
)

// Do submits fn and waits for its answer: fn's value and error, a
// *PanicError, ErrTaskExited, or ctx's error if ctx ends first (fn then
// never starts if it had not). It blocks while there is no room (backpressure)
// and returns ErrClosed once Close has begun. Do allocates nothing.
func (d *Dispatcher[R]) Do(ctx context.Context, fn Task[R]) (R, error) {
	return d.do(ctx, meta{}, fn)
}

// Submit submits fn and returns its Future without waiting for the answer.
// It blocks while there is no room, until ctx ends. Submit allocates
// nothing when it reuses a Future handed back by Release, two small
// objects otherwise.
func (d *Dispatcher[R]) Submit(ctx context.Context, fn Task[R]) (*Future[R], error) {
	return d.submit(ctx, meta{}, fn, true)
}

// TrySubmit is Submit that never waits for room: it returns ErrBusy when
// there is no room for the request right now. With a zero intake buffer
// on the channel engine, "room" is a worker with room and no request
// waiting, and TrySubmit waits for the balancer to receive the request
// (microseconds) while that holds.
func (d *Dispatcher[R]) TrySubmit(ctx context.Context, fn Task[R]) (*Future[R], error) {
	return d.submit(ctx, meta{}, fn, false)
}

// Go submits fn and returns without waiting: fn's value and error are
// discarded, a panic is contained (the worker survives; Stats counts it in
// Panics). Like Submit it blocks while there is no room, until ctx ends,
// and returns ErrClosed once Close has begun. Close waits for fn. Go
// allocates nothing: it suits batches where the task itself records its
// outcome.
func (d *Dispatcher[R]) Go(ctx context.Context, fn Task[R]) error {
	return d.goMeta(ctx, meta{}, fn)
}

func (d *Dispatcher[R]) goMeta(ctx context.Context, m meta, fn Task[R]) error {
	if err := d.check(ctx, fn, m); err != nil {
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

// View submits requests carrying a routing key, a priority class, or
// both; make one with Dispatcher.Key or Dispatcher.Priority, and compose:
// d.Key(k).Priority(p).
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
type View[R any] struct {
	d *Dispatcher[R]
	m meta
}

// Keyed is the view Dispatcher.Key returns.
type Keyed[R any] = View[R]

// Key returns a view of d whose requests carry the routing key k.
func (d *Dispatcher[R]) Key(k uint64) View[R] { return View[R]{d: d, m: meta{key: k}} }

// Priority returns a view of d whose requests are of priority class p, 0
// (the default) to MaxPriority, which the ByPriority schedule orders by.
// Under another schedule a class other than 0 is refused with
// ErrWrongSchedule, and a class out of range with ErrBadOption, by every
// submit of the view.
func (d *Dispatcher[R]) Priority(p int) View[R] { return View[R]{d: d}.Priority(p) }

// Key returns the view with routing key k.
func (v View[R]) Key(k uint64) View[R] { v.m.key = k; return v }

// Priority returns the view with priority class p.
func (v View[R]) Priority(p int) View[R] { v.m.prio = classOf(p); return v }

// Do is Dispatcher.Do with the view's key and class.
func (v View[R]) Do(ctx context.Context, fn Task[R]) (R, error) { return v.d.do(ctx, v.m, fn) }

// Submit is Dispatcher.Submit with the view's key and class.
func (v View[R]) Submit(ctx context.Context, fn Task[R]) (*Future[R], error) {
	return v.d.submit(ctx, v.m, fn, true)
}

// Go is Dispatcher.Go with the view's key and class.
func (v View[R]) Go(ctx context.Context, fn Task[R]) error { return v.d.goMeta(ctx, v.m, fn) }

// TrySubmit is Dispatcher.TrySubmit with the view's key and class.
func (v View[R]) TrySubmit(ctx context.Context, fn Task[R]) (*Future[R], error) {
	return v.d.submit(ctx, v.m, fn, false)
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
func (d *Dispatcher[R]) enqueue(ctx context.Context, r *request[R], block bool) error {
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

func (d *Dispatcher[R]) check(ctx context.Context, fn Task[R], m meta) error {
	if !d.made() {
		return ErrNotStarted
	}
	if ctx == nil {
		return ErrNilContext
	}
	if fn == nil {
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

func (d *Dispatcher[R]) do(ctx context.Context, m meta, fn Task[R]) (R, error) {
	var zero R
	if err := d.check(ctx, fn, m); err != nil {
		return zero, err
	}
	r := d.reqs.Get().(*request[R])
	r.ctx, r.fn, r.meta = ctx, fn, m
	if err := d.enqueue(ctx, r, true); err != nil {
		d.release(r)
		return zero, err
	}
	if cancel := ctx.Done(); cancel == nil {
		// A context that is never done: a plain receive, which costs less
		// than a select (one channel lock instead of sorting and locking a
		// set of cases).
		<-r.done
	} else {
		select {
		case <-r.done:
		case <-cancel:
			select {
			case <-r.done: // answered meanwhile: prefer the answer
			default:
				// The worker still owns r; leave it to the garbage collector.
				return zero, ctx.Err()
			}
		}
	}
	v, err := r.res, r.err
	d.release(r)
	return v, err
}

// release clears a Do request and returns it to the pool for the next Do.
func (d *Dispatcher[R]) release(r *request[R]) {
	var zero R
	r.ctx, r.fn, r.res, r.err = nil, nil, zero, nil
	d.reqs.Put(r)
}

func (d *Dispatcher[R]) submit(ctx context.Context, m meta, fn Task[R], block bool) (*Future[R], error) {
	if err := d.check(ctx, fn, m); err != nil {
		return nil, err
	}
	f := d.futures.Get().(*Future[R])
	f.state.Store(0)
	f.r.ctx, f.r.fn, f.r.meta = ctx, fn, m
	if err := d.enqueue(ctx, &f.r, block); err != nil {
		f.putBack()
		return nil, err
	}
	return f, nil
}
