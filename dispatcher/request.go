package dispatcher

import (
	"context"
)

// request is one submitted task and its answer.
//
// Requests are recycled, by whoever frees them, in the way that costs
// least there: a Do request by its own requester through a sync.Pool (the
// same goroutine puts and gets, so the pool stays P-local); a Go request
// on the rings engine through its worker's return ring and the intake's
// spare list (workers free, the submitter reuses: a sync.Pool paid a steal
// from another P on most gets; 151 -> 130 ns per batch task in 12
// interleaved runs, f88b1fa); a Go request on the channel engine through a
// sync.Pool (no ring to return it on). Submit's request is its Future.
//
// The worker writes res and err, then signals done as its very last touch
// of the request, so the requester may reuse it as soon as it has
// received from done.
type request[R any] struct {
	ctx    context.Context
	fn     Task[R]
	key    uint64
	res    R
	err    error
	done   chan struct{} // capacity 1: the answer never blocks a worker
	future bool          // done is closed (many may wait) instead of sent on
	async  bool          // submitted by Go: nobody waits; never leaves the Go free list
	// ret is where the worker running an async request hands it back
	// (its worker's return ring, rings engine); set by the balancer when
	// it sends r. Nil on the channel engine, which recycles through a
	// sync.Pool.
	ret *retRing[R]
}

// reply answers r on the worker that ran it, or hands it back to the
// balancer when nobody waits for it (Go). The worker must not touch r
// afterwards.
func (d *Dispatcher[R]) reply(r *request[R], v R, err error) {
	if r.async {
		r.ctx, r.fn = nil, nil
		if r.ret != nil {
			r.ret.push(r)
		} else {
			d.chans.goReqs.Put(r)
		}
		return
	}
	r.answer(v, err)
}

// replyErr answers r with err (see reply). Worker goroutines only.
func (d *Dispatcher[R]) replyErr(r *request[R], err error) {
	var zero R
	d.reply(r, zero, err)
}

func (r *request[R]) answer(v R, err error) {
	r.res, r.err = v, err
	if r.future {
		close(r.done)
		return
	}
	// Capacity 1 and one answer per request: never blocks, even when the
	// requester has given up and left.
	r.done <- struct{}{}
}

// Future is the pending answer of a submitted task.
type Future[R any] struct{ r request[R] }

// Done is closed when the answer is ready.
func (f *Future[R]) Done() <-chan struct{} { return f.r.done }

// Wait returns the task's answer, or ctx's error if ctx ends first (the
// task is not cancelled by that; Wait may be called again), or
// ErrNilContext for a nil ctx.
func (f *Future[R]) Wait(ctx context.Context) (R, error) {
	if ctx == nil {
		var zero R
		return zero, ErrNilContext
	}
	select {
	case <-f.r.done:
		return f.r.res, f.r.err
	case <-ctx.Done():
		var zero R
		return zero, ctx.Err()
	}
}
