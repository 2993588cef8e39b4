package dispatcher

import "sync/atomic"

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

func (e *rings[R]) recycle(r *request[R]) {
	r.ctx, r.fn = nil, nil
	e.free = append(e.free, r)
}

// giveSpare passes the collected Go requests to submitters. Called with
// the intake's mu held.
func (e *rings[R]) giveSpare() { e.free = e.in.refill(e.free, e.freeCap) }
