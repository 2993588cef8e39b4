package dispatcher

import (
	"context"
	"slices"
	"sync"
)

// intake is the rings engine's shared request queue: a slice that submitters append to
// under mu and that the balancer swaps out whole. A submit costs one
// uncontended lock and, only when the balancer sleeps, one wake-up; a
// channel cost a lock on both sides per request and a rendezvous whenever
// it was unbuffered or full.
type intake[R any] struct {
	mu    sync.Mutex
	q     []*request[R] // submitted, not yet taken by the balancer
	n     int           // accepted and not yet sent to a worker (q, the balancer's backlog, held)
	cap   int           // most requests n may count (WithIntakeBuffer)
	free  int           // with cap 0: requests the balancer could send right now
	spare []*request[R] // finished Go requests for reuse, refilled by the balancer

	// Submitters that found no room wait in line, each on its own
	// capacity-1 channel (so a blocked submit can also watch its context,
	// which sync.Cond cannot). Room is offered to the first in line, one
	// token per request that can be admitted: a crowd of blocked submitters
	// is not woken for a single slot, and they get in by arrival order.
	waitq   []chan struct{}
	offered int // tokens sent whose receivers have not yet taken the lock
	// chans recycles waiters' channels, so blocking on a full intake
	// allocates nothing in the steady state. Per dispatcher, not global: a
	// channel belongs to the synctest bubble that made it.
	chans sync.Pool
}

func (in *intake[R]) getChan() chan struct{} {
	if ch, ok := in.chans.Get().(chan struct{}); ok {
		return ch
	}
	return make(chan struct{}, 1)
}

// admits reports whether one more request may be accepted: the buffer has
// room or, for a zero buffer (Pike's unbuffered request channel), the
// balancer could hand it to a worker right now: nothing is held and the
// workers have more free slots than requests already waiting. Called with
// mu held.
func (in *intake[R]) admits() bool {
	return in.n < in.cap || in.n < in.free
}

// offer wakes as many waiting submitters, first in line first, as
// requests can be admitted now, minus the offers still on their way.
// Called with mu held.
func (in *intake[R]) offer() {
	k := max(in.cap, in.free) - in.n - in.offered
	for ; k > 0 && len(in.waitq) > 0; k-- {
		in.waitq[0] <- struct{}{} // capacity 1, one token per queued wait: never blocks
		in.waitq = in.waitq[1:]
		in.offered++
	}
}

// leaveLine takes a waiter that gives up out of the line, passing on room
// offered to it meanwhile, and recycles its channel. Takes mu.
func (in *intake[R]) leaveLine(ch chan struct{}) {
	in.mu.Lock()
	if i := slices.Index(in.waitq, ch); i >= 0 {
		in.waitq = slices.Delete(in.waitq, i, i+1)
	} else {
		// Offered room under mu before we took it: the token is in ch.
		// Take it and pass the offer on.
		<-ch
		in.offered--
		in.offer()
	}
	in.mu.Unlock()
	in.chans.Put(ch)
}

// wakeAll wakes every waiting submitter (Close: they return ErrClosed).
// Called with mu held.
func (in *intake[R]) wakeAll() {
	for _, ch := range in.waitq {
		ch <- struct{}{}
	}
	in.offered += len(in.waitq)
	in.waitq = nil
}

// enqueue hands r to the balancer. Once it returns nil, r will be answered
// exactly once.
func (d *Dispatcher[R]) enqueue(ctx context.Context, r *request[R], block bool) error {
	if d.chans != nil {
		return d.chans.enqueue(ctx, r, block)
	}
	if err := d.admit(ctx, block); err != nil {
		return err
	}
	d.push(r)
	return nil
}

// enqueueGo is enqueue for Go: the request comes from the spare list under
// the lock the submit takes anyway, so nothing is allocated or recycled
// unless the request is accepted.
func (d *Dispatcher[R]) enqueueGo(ctx context.Context, key uint64, fn Task[R]) error {
	if e := d.chans; e != nil {
		r := e.goReqs.Get().(*request[R])
		r.ctx, r.fn, r.key = ctx, fn, key
		err := e.enqueue(ctx, r, true)
		if err != nil {
			e.recycle(r)
		}
		return err
	}
	if err := d.admit(ctx, true); err != nil {
		return err
	}
	in := &d.in
	var r *request[R]
	if n := len(in.spare); n > 0 {
		r = in.spare[n-1]
		in.spare = in.spare[:n-1]
	} else {
		r = &request[R]{async: true}
	}
	r.ctx, r.fn, r.key = ctx, fn, key
	d.push(r)
	return nil
}

// push appends r to the intake, which admit left locked, and unlocks it.
func (d *Dispatcher[R]) push(r *request[R]) {
	in := &d.in
	in.q = append(in.q, r)
	in.n++
	in.mu.Unlock()
	d.wakeBalancer()
}

// admit waits for room for one request and returns nil with in.mu held,
// or an error with it released.
func (d *Dispatcher[R]) admit(ctx context.Context, block bool) error {
	in := &d.in
	in.mu.Lock()
	offered := false
	for d.life.Load() == lifeOpen && !in.admits() {
		if !block {
			in.mu.Unlock()
			return ErrBusy
		}
		ch := in.getChan()
		if offered {
			// Room was offered to us and someone else took it first: keep
			// our place at the front, and make sure the balancer looks at
			// the line again (whoever took the room woke it, maybe before
			// we were back in line).
			in.waitq = slices.Insert(in.waitq, 0, ch)
			in.mu.Unlock()
			d.wakeBalancer()
		} else {
			in.waitq = append(in.waitq, ch)
			in.mu.Unlock()
		}
		// Safe against lost wake-ups: the balancer offers room under mu
		// whenever it leaves room with submitters in line, and Close wakes
		// them all after moving the lifecycle past open. The timer asks,
		// once per wait, whether this is one of the dispatcher's own tasks
		// (nested.go).
		t := d.own.timer()
		nested := t.C
		for woke := false; !woke; {
			select {
			case <-ch:
				in.mu.Lock()
				in.offered--
				offered = true
				woke = true
			case <-ctx.Done():
				d.own.done(t)
				in.leaveLine(ch)
				return ctx.Err()
			case <-nested:
				nested = nil
				if d.own.mine() {
					d.own.done(t)
					in.leaveLine(ch)
					return ErrNestedSubmit
				}
			}
		}
		d.own.done(t)
		in.chans.Put(ch)
	}
	if d.life.Load() != lifeOpen {
		in.mu.Unlock()
		return ErrClosed
	}
	return nil
}
