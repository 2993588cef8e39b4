package dispatcher

import (
	"sync/atomic"

	"github.com/gobalancer/balancer/internal/cacheline"
)

// retRing hands finished Go requests back from one worker (the only
// producer) to the balancer (the only consumer), which passes them on to
// submitters under the intake lock it takes anyway (spares), on either
// engine. The worker publishes
// them retBatch at a time: recycling costs a slot write per request and an
// atomic store per batch, where a sync.Pool paid a steal from another P's
// pool on most Gets (workers Put, the submitter Gets). Up to retBatch-1
// requests may wait at a worker until it finishes more; a full ring drops
// the request for the garbage collector.
type retRing struct {
	buf      []*request
	mask     uint64
	_        cacheline.Pad
	tail     atomic.Uint64 // published by the worker
	put      uint64        // written by the worker, published or not
	headSeen uint64        // the worker's last load of head
	_        cacheline.Pad
	head     atomic.Uint64 // written by the balancer
	_        cacheline.Pad
}

// retBatch is how many returned requests a worker publishes at once.
const retBatch = 16

func newRetRing(depth int) *retRing {
	size := 64
	for size < 2*depth+retBatch {
		size <<= 1
	}
	return &retRing{buf: make([]*request, size), mask: uint64(size - 1)}
}

// push hands r back. Worker only.
func (q *retRing) push(r *request) {
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
func (q *retRing) collect(free []*request) []*request {
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

// spares holds the finished Go requests the balancer collected from the
// workers' return rings (and those it answered itself) until it passes
// them to the intake's spare list under the lock it takes anyway. Both
// engines embed one. Balancer only.
type spares struct {
	free []*request
	most int // most Go requests kept for reuse
}

func newSpares(workers, depth int) spares {
	return spares{most: max(1024, 2*depth*workers)}
}

// recycle keeps an async request the balancer answered itself (links).
func (s *spares) recycle(r *request) {
	r.ctx, r.job = nil, nil
	s.free = append(s.free, r)
}

// collect takes what worker ring q handed back.
func (s *spares) collect(q *retRing) { s.free = q.collect(s.free) }

// give passes the collected requests to in's spare list. Called with in.mu
// held.
func (s *spares) give(in *intake) {
	if len(s.free) > 0 {
		s.free = in.refill(s.free, s.most)
	}
}
