// Package dispatcher is Pike's heap load balancer as an embeddable,
// generic work dispatcher. Requesters submit tasks on one shared request
// channel; a single balancer goroutine asks a strategy for a worker, hands
// the request to that worker's buffered channel and counts it pending;
// the worker runs it, answers the requester and reports completion on the
// completion channel; the balancer tells the strategy.
//
// Unlike the textbook version, the balancer never blocks on a worker: it
// sends only to a worker with room, and when the picked worker is full it
// stops taking requests and serves completions until there is room.
package dispatcher

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/gobalancer/balancer/pool"
	"github.com/gobalancer/balancer/strategies"
	"github.com/gobalancer/balancer/worker"
)

// Task is the work a request carries. It runs on a worker goroutine with
// the request's context.
type Task[R any] func(ctx context.Context) (R, error)

// Dispatcher balances tasks returning R over a set of workers. Create it
// with New and stop it with Close. All methods are safe for concurrent use.
//
// A task must not call Do on its own dispatcher and wait for the answer,
// nor Close it: when every worker waits on itself nothing can progress.
//
// Cost, measured on 2 cores (see the README): tens to a few hundred
// nanoseconds of dispatch per task; Do allocates nothing, Submit allocates
// the Future.
type Dispatcher[R any] struct {
	intake chan *request[R]
	quit   chan struct{} // closed first by Close: wakes blocked submitters
	// Submitters hold mu's read side while they send; Close takes the write
	// side once, so after it no submitter is between its closed check and
	// its send, and the balancer can drain the intake to empty.
	mu        sync.RWMutex
	closed    atomic.Bool
	closing   chan struct{} // closed when intake is fenced: drain and stop
	abandonCh chan struct{} // closed when Close's ctx ended: answer unstarted requests
	abandoned atomic.Bool
	abandon   error // the answer of abandoned requests; set before abandoned
	ctl       chan func()
	stopped   chan struct{}

	closeOnce   sync.Once
	abandonOnce sync.Once

	reqs  sync.Pool
	final atomic.Pointer[Stats] // the last snapshot, taken when the balancer stopped

	b balancer[R] // owned by the balancer goroutine
}

// New starts a dispatcher and its workers. Bad options yield an error
// wrapping ErrBadOption (and the strategy's own error, if any).
func New[R any](opts ...Option) (*Dispatcher[R], error) {
	c := defaults()
	for _, o := range opts {
		if o == nil {
			c.bad("nil option")
			continue
		}
		o.apply(&c)
	}
	if len(c.errs) > 0 {
		return nil, c.errs[0]
	}
	if c.workers < 1 {
		return nil, fmt.Errorf("%w: workers must be at least 1, got %d", ErrBadOption, c.workers)
	}
	weights := c.weights
	if weights == nil {
		weights = strategies.Equal(c.workers)
	}
	strat := c.strategy
	if strat == nil {
		s, err := strategies.New(c.strategyName, weights, c.strategyOpts...)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadOption, err)
		}
		strat = s
	} else {
		for i, w := range weights {
			if w < 0 {
				return nil, fmt.Errorf("%w: worker %d has negative weight %d", ErrBadOption, i, w)
			}
		}
	}
	depth := c.workerBuffer + 1
	if c.completion < 0 {
		c.completion = c.workers
	}
	if c.intake < 0 {
		c.intake = c.workers * depth
	}

	d := &Dispatcher[R]{
		intake:    make(chan *request[R], c.intake),
		quit:      make(chan struct{}),
		closing:   make(chan struct{}),
		abandonCh: make(chan struct{}),
		ctl:       make(chan func()),
		stopped:   make(chan struct{}),
	}
	d.reqs.New = func() any { return &request[R]{done: make(chan struct{}, 1)} }
	comp := make(chan worker.Completion, c.completion)
	p := pool.New(c.workers, worker.Config[*request[R]]{
		Depth:       depth,
		Run:         d.run,
		Panicked:    func(r *request[R], v any, stack []byte) { r.answerErr(&PanicError{Value: v, Stack: stack}) },
		Exited:      func(r *request[R]) { r.answerErr(ErrTaskExited) },
		Completions: comp,
	})
	d.b.init(strat, p, comp, depth, weights)
	go d.balance()
	return d, nil
}

// run is the worker side of a request: answer without running when the
// dispatcher abandoned it or its requester's context ended while queued.
func (d *Dispatcher[R]) run(r *request[R]) {
	if d.abandoned.Load() {
		r.answerErr(d.abandon)
		return
	}
	if err := r.ctx.Err(); err != nil {
		r.answerErr(err)
		return
	}
	v, err := r.fn(r.ctx)
	r.answer(v, err)
}

// Done is closed once the dispatcher has stopped and every goroutine it
// started has exited.
func (d *Dispatcher[R]) Done() <-chan struct{} { return d.stopped }

// Close stops intake (later submits get ErrClosed), lets every accepted
// request finish and returns once every goroutine the dispatcher started has
// exited. If ctx ends first, requests that have not started are answered
// with an error wrapping both ErrClosed and ctx's error, Close returns
// ctx.Err(), and running tasks finish in the background (Done tells when).
// Close is idempotent and safe to call concurrently with anything.
func (d *Dispatcher[R]) Close(ctx context.Context) error {
	if ctx == nil {
		return ErrNilContext
	}
	d.closeOnce.Do(func() {
		d.closed.Store(true)
		close(d.quit)
		d.mu.Lock()
		d.mu.Unlock() //nolint:staticcheck // an empty critical section is the fence
		close(d.closing)
	})
	select {
	case <-d.stopped:
		return nil
	case <-ctx.Done():
	}
	// Prefer success when both happened.
	select {
	case <-d.stopped:
		return nil
	default:
	}
	d.abandonOnce.Do(func() {
		d.abandon = fmt.Errorf("%w: %w", ErrClosed, ctx.Err())
		d.abandoned.Store(true)
		close(d.abandonCh)
	})
	return ctx.Err()
}

// exec runs f on the balancer goroutine and returns its error, or
// ErrClosed when the dispatcher is closing or stopped.
func (d *Dispatcher[R]) exec(f func() error) error {
	if d.closed.Load() {
		return ErrClosed
	}
	return d.call(f)
}

// call runs f on the balancer goroutine, also while it drains after Close.
func (d *Dispatcher[R]) call(f func() error) error {
	errc := make(chan error, 1)
	select {
	case d.ctl <- func() { errc <- f() }:
	case <-d.stopped:
		return ErrClosed
	}
	return <-errc
}
