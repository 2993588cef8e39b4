package dispatcher

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/gobalancer/balancer/internal/cacheline"
)

// pike is the channel engine with Pike's unbuffered request channel
// (WithEngine(Channels), WithIntakeBuffer(0)): a submit is a rendezvous
// with the balancer, which receives a request only when a worker has
// room for it beside those the schedule holds, so a submit completes only
// when the balancer takes it. Workers and completions are the channel
// engine's (chanLinks).
type pike struct {
	d *Dispatcher
	chanLinks
	reqs chan *request // Pike's unbuffered request channel

	// closeMu makes Close's "no request accepted after this" exact: a
	// submitter holds it for reading from its closed check to the end of
	// its send; Close takes it for writing once, after closing closing.
	// Alone on its cache lines: every submit writes its reader count.
	_       cacheline.Pad
	closeMu sync.RWMutex
	_       cacheline.Pad
	closing chan struct{} // closed by Close: blocked submitters return ErrClosed

	gate    tryGate      // TrySubmit's
	blocked atomic.Int64 // submitters blocked in the send (Stats.Blocked)
	// in holds only the spare list of Go requests for reuse, under its
	// lock, refilled by the balancer as on the other engines.
	in intake
}

func newPike(d *Dispatcher, completion int) *pike {
	e := &pike{d: d, chanLinks: newChanLinks(d, completion), reqs: make(chan *request), closing: make(chan struct{})}
	e.gate.init(true) // every worker is empty, and some weight is positive
	return e
}

// enqueue sends r on the request channel.
func (e *pike) enqueue(ctx context.Context, r *request, block bool) error {
	return e.rendezvous(ctx, r, block)
}

// enqueueGo takes a spare request under the spare list's lock, and hands
// it back if the send fails.
func (e *pike) enqueueGo(ctx context.Context, m meta, fn goTask) error {
	in := &e.in
	in.mu.Lock()
	r := in.spareGo()
	in.mu.Unlock()
	r.ctx, r.job, r.meta = ctx, fn, m
	err := e.rendezvous(ctx, r, true)
	if err != nil {
		r.ctx, r.job = nil, nil
		in.mu.Lock()
		in.spare = append(in.spare, r)
		in.mu.Unlock()
	}
	return err
}

// poll tells TrySubmit whether the balancer takes a request now, then
// takes the completions and the requests senders offer while it does.
func (e *pike) poll() bool {
	p := e.p
	e.gate.set(p.accepts() > 0 && p.open())
	took := e.completions()
	for k := 0; k < pollBatch && p.accepts() > 0; k++ {
		select {
		case r := <-e.reqs:
			p.take(r)
			took = true
			continue
		default:
		}
		break
	}
	e.settle()
	return took
}

// park is Pike's select over the request and completion channels, with
// control calls and lifecycle kicks beside them. While the workers have
// no room for another request the request case is nil: the balancer
// serves completions only.
func (e *pike) park() {
	e.settle()
	reqs := e.reqs
	if e.p.accepts() <= 0 {
		reqs = nil
	}
	if r, ok := wait(&e.chanLinks, reqs); ok {
		e.p.take(r)
	}
}

// settle hands the spare list the Go requests collected from the workers.
func (e *pike) settle() {
	sp := e.p.spares()
	if len(sp.free) == 0 {
		return
	}
	e.in.mu.Lock()
	sp.give(&e.in)
	e.in.mu.Unlock()
}

// intake: nothing waits in an unbuffered channel; blocked is the senders
// waiting in it.
func (e *pike) intake() (queued, blocked int) { return 0, int(e.blocked.Load()) }

// takeIntake: nothing is accepted before the balancer receives it.
func (e *pike) takeIntake() []*request { return nil }

// fence stops intake for Close: blocked senders leave with ErrClosed,
// those between their check and their send finish, and every later
// submit sees the lifecycle past open.
func (e *pike) fence() {
	close(e.closing)
	e.closeMu.Lock()
	e.d.advance(lifeDraining)
	e.closeMu.Unlock()
}

// rendezvous sends r on the unbuffered request channel: accepted once the
// balancer receives it.
func (e *pike) rendezvous(ctx context.Context, r *request, block bool) error {
	e.closeMu.RLock()
	defer e.closeMu.RUnlock()
	if e.d.life.Load() != lifeOpen {
		return ErrClosed
	}
	// Try without waiting first: a non-blocking send costs no select over
	// three channels.
	select {
	case e.reqs <- r:
		return nil
	default:
		if !block {
			return e.try(r)
		}
	}
	// The send is the rendezvous. A sender that yielded a few turns before
	// blocking, so that the balancer's receives would not each ready it,
	// made batches slower, not faster (docs/performance.md, "The yields"):
	// it blocks at once. Safe to block: the balancer receives
	// whenever it can place a request, ctx's end returns the request to
	// the caller unsent, and Close closes closing before it waits for the
	// fence. It waits however long room takes, whoever calls it (see
	// Dispatcher on nested submits).
	e.blocked.Add(1)
	defer e.blocked.Add(-1)
	select {
	case e.reqs <- r:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-e.closing:
		return ErrClosed
	}
}

// tryGate makes TrySubmit exact on the channel engine's unbuffered request
// channel (WithIntakeBuffer(0)): "accepted when nothing waits and a worker
// has room". A non-blocking send there succeeds only if the balancer is
// parked on its receive at that instant, which it seldom is (it polls and
// yields before it parks), so TrySubmit would refuse with idle workers.
// Instead, while the balancer can take a request, TrySubmit waits in the
// send, and the balancer wakes it with ErrBusy when it stops being able
// to. Balancer writes, submitters read.
type tryGate struct {
	open    atomic.Bool                   // the balancer can take a request now
	waiters atomic.Int32                  // TrySubmit calls waiting in the send
	shut    atomic.Pointer[chan struct{}] // closed when open goes false with waiters
}

func (g *tryGate) init(open bool) {
	ch := make(chan struct{})
	g.shut.Store(&ch)
	g.open.Store(open)
}

// set publishes whether the balancer can take a request. Balancer only.
// Closing shut wakes the waiters; a new channel is made only then, so a
// dispatcher nobody calls TrySubmit on allocates nothing here.
func (g *tryGate) set(open bool) {
	if g.open.Load() == open {
		return
	}
	g.open.Store(open)
	// Dekker-style with try: a waiter counts itself before it reads open,
	// the balancer stores open before it reads the count, so either the
	// waiter sees open false or the balancer sees the waiter.
	if !open && g.waiters.Load() > 0 {
		old := g.shut.Load()
		ch := make(chan struct{})
		g.shut.Store(&ch)
		close(*old)
	}
}

// try sends r while the gate is open; ErrBusy once it is shut.
func (e *pike) try(r *request) error {
	g := &e.gate
	g.waiters.Add(1)
	defer g.waiters.Add(-1)
	shut := *g.shut.Load()
	if !g.open.Load() {
		return ErrBusy
	}
	// Safe to wait: the balancer receives while open, and shuts the gate
	// (or Close closes closing) when it stops.
	select {
	case e.reqs <- r:
		return nil
	case <-shut:
		if e.d.life.Load() != lifeOpen {
			return ErrClosed // shut because Close began
		}
		return ErrBusy
	case <-e.closing:
		return ErrClosed
	}
}
