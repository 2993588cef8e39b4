package dispatcher

import "context"

// request is one submitted task and its answer.
//
// Requests are recycled, by whoever frees them, in the way that costs
// least there: a Do request by its own requester through a sync.Pool (the
// same goroutine puts and gets, so the pool stays P-local); a Go request,
// on either engine, through its worker's return ring and the intake's
// spare list (workers free, the submitter reuses: a sync.Pool paid a steal
// from another P on most gets). Submit's request is its Future.
//
// The worker writes res and err, then signals done as its very last touch
// of the request, so the requester may reuse it as soon as it has
// received from done.
type request[R any] struct {
	// What every request's hand-off touches comes first, on one cache
	// line: the submitter writes ctx, fn and meta; the balancer reads key
	// and tenant and writes ret (and took); the worker reads them all.
	// Spread over three lines (144 bytes in an unaligned size class), they
	// cost a batch of empty tasks a quarter more CPU in line transfers.
	ctx context.Context
	fn  Task[R]
	meta
	async bool // submitted by Go: nobody waits; never leaves the Go free list
	// ret is where the worker running an async request hands it back
	// (its worker's return ring); set by the balancer when it sends r.
	ret *retRing[R]
	// tenant is the flow r belongs to (its group's), nil for the default.
	tenant *tenant
	// took is when the balancer took r, in Unix ns, for a sampled request
	// (0 otherwise): its worker records the wait.
	took int64

	// The answer, and who hears of it.
	res  R
	err  error
	done chan struct{} // capacity 1: the answer never blocks a worker
	fut  *Future[R]    // the Future r belongs to (Submit), which answers it
	// owner, if set, hears of the task's failure as it happens and of its
	// answer (a group: it cancels its other tasks, and frees a place under
	// its Limit): the worker tells it without knowing what it is.
	owner owner
}

// meta is what a submit says about a request beyond its task: the key a
// strategy routes it by and the class a schedule orders it by.
type meta struct {
	key  uint64
	prio uint8
}

// owner is told when the task of a request it owns fails (it returned an
// error, panicked or called runtime.Goexit), and when the request is
// answered, just before the answer.
type owner interface {
	taskFailed(err error)
	answered()
}

// reply answers r on the worker that ran it, or hands it back to the
// balancer when nobody waits for it (Go). The worker must not touch r
// afterwards.
func (d *Dispatcher[R]) reply(r *request[R], v R, err error) {
	if r.async {
		r.ctx, r.fn = nil, nil
		r.ret.push(r)
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
	// Whoever waits keeps the answer, not the task nor its context.
	r.res, r.err, r.fn, r.ctx = v, err, nil, nil
	if r.owner != nil {
		// From here a group's range may read the answer and reuse the
		// request for its next task: touch nothing below but fut and done,
		// which a group never changes.
		r.owner.answered()
	}
	if r.fut != nil {
		r.fut.answer()
		return
	}
	// Capacity 1 and one answer per request: never blocks, even when the
	// requester has given up and left.
	r.done <- struct{}{}
}
