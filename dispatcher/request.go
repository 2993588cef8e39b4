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
type request struct {
	// What every request's hand-off touches comes first, on one cache
	// line: the submitter writes ctx, fn and meta; the balancer reads key
	// and tenant and writes ret (and took); the worker reads them all.
	// Spread over three lines (144 bytes in an unaligned size class), they
	// cost a batch of empty tasks a quarter more CPU in line transfers.
	ctx context.Context
	job job // what the worker runs: a Go task, or the typed holder of a Do, a Future or a group slot
	meta
	async bool // submitted by Go: nobody waits; never leaves the Go free list
	// ret is where the worker running an async request hands it back
	// (its worker's return ring); set by the balancer when it sends r.
	ret *retRing
	// took is when the balancer took r, in Unix ns, for a sampled request
	// (0 otherwise): its worker records the wait.
	took int64

	// The answer, and who hears of it. A typed task's value is kept by
	// its holder (typed), which the worker wrote before the answer.
	err  error
	done chan struct{} // capacity 1: the answer never blocks a worker
	fut  answerer      // the Future r belongs to (Submit), which answers it
	// owner, if set, hears of the task's failure as it happens and of its
	// answer (a group: it cancels its other tasks, and frees a place under
	// its Limit): the worker tells it without knowing what it is.
	owner owner
}

// meta is what a submit says about a request beyond its task: the key a
// strategy routes it by, the class a schedule orders it by and the flow
// it belongs to (its group's, stream's or view's tenant; nil for the
// default one).
type meta struct {
	key    uint64
	prio   uint8
	tenant *tenant
}

// owner is told when the task of a request it owns fails (it returned an
// error, panicked or called runtime.Goexit), and when the request is
// answered, just before the answer.
type owner interface {
	taskFailed(err error)
	answered()
}

// answerer is a Future: it publishes the answer of the request it holds.
type answerer interface{ answer() }

// job is what a worker runs for a request. A typed task's holder runs it
// and keeps its value; the error is the request's.
type job interface {
	run(ctx context.Context) error
}

// goTask is a Go task: it has no value to keep, and being a func it fits
// in the job interface without an allocation.
type goTask func(context.Context) error

func (t goTask) run(ctx context.Context) error { return t(ctx) }

// typed holds a task that returns a value of type R, and that value once
// it ran: the job of a Do, a Future, a group's slot or a stream's slot,
// which embed it beside their request. The value is written on the
// worker before the answer, so whoever receives the answer reads it.
type typed[R any] struct {
	fn  func(context.Context) (R, error)
	res R
}

func (t *typed[R]) run(ctx context.Context) error {
	// The task is dropped before it runs: the holder keeps its result,
	// not the closure and what it captured.
	fn := t.fn
	t.fn = nil
	v, err := fn(ctx)
	t.res = v
	return err
}

// clear drops the task and the value, for the holder's reuse.
func (t *typed[R]) clear() {
	var zero R
	t.fn, t.res = nil, zero
}

// reply answers r on the worker that ran it, or hands it back to the
// balancer when nobody waits for it (Go). The worker must not touch r
// afterwards.
func (d *Dispatcher) reply(r *request, err error) {
	if r.async {
		r.ctx, r.job = nil, nil
		r.ret.push(r)
		return
	}
	r.answer(err)
}

func (r *request) answer(err error) {
	// Whoever waits keeps the answer, not the task nor its context.
	r.err, r.job, r.ctx = err, nil, nil
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
