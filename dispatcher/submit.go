package dispatcher

import "context"

// Do submits fn and waits for its answer: fn's value and error, a
// *PanicError, ErrTaskExited, or ctx's error if ctx ends first (fn then
// never starts if it had not). It blocks while there is no room (backpressure)
// and returns ErrClosed once Close has begun. Do allocates nothing.
func (d *Dispatcher[R]) Do(ctx context.Context, fn Task[R]) (R, error) {
	return d.do(ctx, 0, fn)
}

// Submit submits fn and returns its Future without waiting for the answer.
// It blocks while there is no room, until ctx ends. Submit allocates
// nothing when it reuses a Future handed back by Release, two small
// objects otherwise.
func (d *Dispatcher[R]) Submit(ctx context.Context, fn Task[R]) (*Future[R], error) {
	return d.submit(ctx, 0, fn, true)
}

// TrySubmit is Submit that never waits for room: it returns ErrBusy when
// there is no room for the request right now. With a zero intake buffer
// on the channel engine, "room" is a worker with room and no request
// waiting, and TrySubmit waits for the balancer to receive the request
// (microseconds) while that holds.
func (d *Dispatcher[R]) TrySubmit(ctx context.Context, fn Task[R]) (*Future[R], error) {
	return d.submit(ctx, 0, fn, false)
}

// Go submits fn and returns without waiting: fn's value and error are
// discarded, a panic is contained (the worker survives; Stats counts it in
// Panics). Like Submit it blocks while there is no room, until ctx ends,
// and returns ErrClosed once Close has begun. Close waits for fn. Go
// allocates nothing: it suits batches where the task itself records its
// outcome.
func (d *Dispatcher[R]) Go(ctx context.Context, fn Task[R]) error {
	return d.goKey(ctx, 0, fn)
}

func (d *Dispatcher[R]) goKey(ctx context.Context, key uint64, fn Task[R]) error {
	if err := d.check(ctx, fn); err != nil {
		return err
	}
	return d.eng.enqueueGo(ctx, meta{key: key}, fn)
}

// Keyed submits requests carrying a routing key, which affinity strategies
// (consistent-hash, bounded-hash) use to send equal keys to the same worker.
//
// Under consistent-hash, requests with one key go to one worker while the
// workers stay the same, and one requester's requests with a key run in
// the order it submitted them: the balancer takes requests in order and a
// worker runs its queue in order. Adding, removing or re-weighting a
// worker may move the key; requests still queued at its old worker may
// then run after the first ones at the new.
//
// Under bounded-hash a key goes to that worker only while the worker is
// under its load bound; when it is at the bound, the request goes on to
// another worker and may run before earlier requests of its key. So a key
// submitted faster than it is served spreads over several workers, and
// its requests keep their order only when the requester waits for each
// answer before submitting the next (Do, or Submit then Wait).
type Keyed[R any] struct {
	d   *Dispatcher[R]
	key uint64
}

// Key returns a view of d whose requests carry the routing key k.
func (d *Dispatcher[R]) Key(k uint64) Keyed[R] { return Keyed[R]{d: d, key: k} }

// Do is Dispatcher.Do with the view's key.
func (k Keyed[R]) Do(ctx context.Context, fn Task[R]) (R, error) { return k.d.do(ctx, k.key, fn) }

// Submit is Dispatcher.Submit with the view's key.
func (k Keyed[R]) Submit(ctx context.Context, fn Task[R]) (*Future[R], error) {
	return k.d.submit(ctx, k.key, fn, true)
}

// Go is Dispatcher.Go with the view's key.
func (k Keyed[R]) Go(ctx context.Context, fn Task[R]) error { return k.d.goKey(ctx, k.key, fn) }

// TrySubmit is Dispatcher.TrySubmit with the view's key.
func (k Keyed[R]) TrySubmit(ctx context.Context, fn Task[R]) (*Future[R], error) {
	return k.d.submit(ctx, k.key, fn, false)
}

func (d *Dispatcher[R]) check(ctx context.Context, fn Task[R]) error {
	if !d.made() {
		return ErrNotStarted
	}
	if ctx == nil {
		return ErrNilContext
	}
	if fn == nil {
		return ErrNilTask
	}
	// A context already done: the task never runs.
	return ctx.Err()
}

func (d *Dispatcher[R]) do(ctx context.Context, key uint64, fn Task[R]) (R, error) {
	var zero R
	if err := d.check(ctx, fn); err != nil {
		return zero, err
	}
	r := d.reqs.Get().(*request[R])
	r.ctx, r.fn, r.key = ctx, fn, key
	if err := d.eng.enqueue(ctx, r, true); err != nil {
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

func (d *Dispatcher[R]) submit(ctx context.Context, key uint64, fn Task[R], block bool) (*Future[R], error) {
	if err := d.check(ctx, fn); err != nil {
		return nil, err
	}
	f := d.futures.Get().(*Future[R])
	f.state.Store(0)
	f.r.ctx, f.r.fn, f.r.key = ctx, fn, key
	if err := d.eng.enqueue(ctx, &f.r, block); err != nil {
		f.putBack()
		return nil, err
	}
	return f, nil
}
