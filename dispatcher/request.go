package dispatcher

import (
	"context"
	"sync/atomic"
)

// request is one submitted task and its answer. The worker writes res and
// err, then signals done as its very last touch of the request, so the
// requester may reuse it as soon as it has received from done.
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

// replyErrB answers r with err on the balancer goroutine, which owns
// an unsent async request and recycles it itself.
func (d *Dispatcher[R]) replyErrB(r *request[R], err error) {
	if r.async {
		d.b.links.recycle(r)
		return
	}
	var zero R
	r.answer(zero, err)
}

// retRing hands finished Go requests back from one worker (the only
// producer) to the balancer (the only consumer), which passes them on to
// submitters under the intake lock it takes anyway. The worker publishes
// them retBatch at a time: recycling costs a slot write per request and an
// atomic store per batch, where a sync.Pool paid a steal from another P's
// pool on most Gets (workers Put, the submitter Gets). Up to retBatch-1
// requests may wait at a worker until it finishes more; a full ring drops
// the request for the garbage collector.
type retRing[R any] struct {
	buf      []*request[R]
	mask     uint64
	_        [64]byte
	tail     atomic.Uint64 // published by the worker
	put      uint64        // written by the worker, published or not
	headSeen uint64        // the worker's last load of head
	_        [64]byte
	head     atomic.Uint64 // written by the balancer
	_        [64]byte
}

// retBatch is how many returned requests a worker publishes at once.
const retBatch = 16

func newRetRing[R any](depth int) *retRing[R] {
	size := 64
	for size < 2*depth+retBatch {
		size <<= 1
	}
	return &retRing[R]{buf: make([]*request[R], size), mask: uint64(size - 1)}
}

// push hands r back. Worker only.
func (q *retRing[R]) push(r *request[R]) {
	t := q.put
	if t-q.headSeen > q.mask {
		if q.headSeen = q.head.Load(); t-q.headSeen > q.mask {
			return // full: let the garbage collector have it
		}
	}
	q.buf[t&q.mask] = r
	q.put = t + 1
	if q.put%retBatch == 0 {
		q.tail.Store(q.put)
	}
}

// collect appends what the worker handed back to free. Balancer only.
func (q *retRing[R]) collect(free []*request[R]) []*request[R] {
	t := q.tail.Load()
	h := q.head.Load()
	if h == t {
		return free
	}
	for ; h != t; h++ {
		slot := &q.buf[h&q.mask]
		free = append(free, *slot)
		*slot = nil
	}
	q.head.Store(t)
	return free
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
