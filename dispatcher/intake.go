package dispatcher

import (
	"context"
	"sync"
)

// intake is the shared request queue: a slice that submitters append to
// under mu and that the balancer swaps out whole. A submit costs one
// uncontended lock and, only when the balancer sleeps, one wake-up; a
// channel cost a lock on both sides per request and a rendezvous whenever
// it was unbuffered or full.
type intake[R any] struct {
	mu     sync.Mutex
	q      []*request[R] // submitted, not yet taken by the balancer
	n      int           // accepted and not yet sent to a worker (q, the balancer's backlog, held)
	cap    int           // most requests n may count (WithIntakeBuffer)
	closed bool          // set by Close: no request is accepted after it
	free   int           // with cap 0: requests the balancer could send right now

	// Submitters that found no room wait for room to be closed: a
	// broadcast, rebuilt on demand, so a blocked submit can also watch its
	// context (sync.Cond cannot).
	waiters int
	room    chan struct{}
}

// admits reports whether one more request may be accepted: the buffer has
// room or, for a zero buffer (Pike's unbuffered request channel), the
// balancer could hand it to a worker right now: nothing is held and the
// workers have more free slots than requests already waiting. Admitting up
// to the free slots, not one request per balancer turn, keeps a crowd of
// blocked submitters from being woken once per request. Called with mu
// held.
func (in *intake[R]) admits() bool {
	return in.n < in.cap || in.n < in.free
}

// broadcast wakes every waiting submitter so each tries again. Called with
// mu held.
func (in *intake[R]) broadcast() {
	if in.room != nil {
		close(in.room)
		in.room = nil
	}
	in.waiters = 0
}

// enqueue hands r to the balancer. Once it returns nil, r will be answered
// exactly once.
func (d *Dispatcher[R]) enqueue(ctx context.Context, r *request[R], block bool) error {
	in := &d.in
	in.mu.Lock()
	for !in.closed && !in.admits() {
		if !block {
			in.mu.Unlock()
			return ErrBusy
		}
		if in.room == nil {
			in.room = make(chan struct{})
		}
		room := in.room
		in.waiters++
		in.mu.Unlock()
		// Safe against lost wake-ups: the balancer broadcasts under mu
		// whenever it leaves room with waiters counted, and Close
		// broadcasts after setting closed.
		select {
		case <-room:
		case <-ctx.Done():
			return ctx.Err()
		}
		in.mu.Lock()
	}
	if in.closed {
		in.mu.Unlock()
		return ErrClosed
	}
	in.q = append(in.q, r)
	in.n++
	in.mu.Unlock()
	d.wakeBalancer()
	return nil
}
