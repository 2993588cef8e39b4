package dispatcher

import (
	"context"
	"sync/atomic"
)

// rendezvous sends r on Pike's unbuffered request channel
// (WithIntakeBuffer(0)): accepted once the balancer receives it.
func (e *channels) rendezvous(ctx context.Context, r *request, block bool) error {
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
func (e *channels) try(r *request) error {
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
