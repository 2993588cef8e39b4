package dispatcher

import (
	"context"
	"sync"
	"sync/atomic"
)

// intake is the engines' shared request queue: a slice that submitters
// append to under mu and that the balancer takes whole (the rings engine
// swaps it out; the channel engine receives it as one message). A submit costs one
// uncontended lock and, only when the balancer sleeps, one wake-up; a
// channel cost a lock on both sides per request and a rendezvous whenever
// it was unbuffered or full.
type intake struct {
	mu    sync.Mutex
	q     []*request // submitted, not yet taken by the balancer
	n     int        // accepted and not yet taken by the balancer from its backlog (rings: sent to a worker)
	cap   int        // most requests n may count (WithIntakeBuffer)
	free  int        // with cap 0: requests the balancer could send right now
	spare []*request // finished Go requests for reuse, refilled by the balancer

	// Submitters that found no room wait in line. Room is offered to the
	// first in line, one token per request that can be admitted: a crowd
	// of blocked submitters is not woken for a single slot, and they get
	// in by arrival order.
	waitq   waiters
	offered int // tokens sent whose receivers have not yet taken the lock
	// passed counts newcomers that got in while others waited in line,
	// since the last offer (offerDue).
	passed int
	// left is how many requests had left the accepted state (sent to a
	// worker, or answered by the balancer) when the balancer last told
	// the intake (account).
	left int64

	// lanes are the lanes holding requests (lanes.go); laneDue says a
	// request left a lane while submitters of lanes waited in line.
	lanes   []*lane
	laneDue atomic.Bool
	mode    laneMode // which flows have lanes; set by New, read by submitters
}

// account tells the intake that left requests in all have left the
// accepted state, so n drops by those since the last call. Called by the
// balancer with mu held.
func (in *intake) account(left int64) {
	if left != in.left && in.waitq.lanes.Load() > 0 {
		in.laneDue.Store(true) // room in the second buffer may be back
	}
	in.n -= int(left - in.left)
	in.left = left
}

// admits reports whether one more request may be accepted: the buffer has
// room or, for a zero buffer (Pike's unbuffered request channel), the
// balancer could hand it to a worker right now: nothing is held and the
// workers have more free slots than requests already waiting. Room offered
// to submitters in line and not yet taken is theirs: a newcomer may take
// room nobody was offered (as a send on a buffered channel would), and the
// balancer offers once half a buffer of them did (offerDue), so a
// submitter in line is passed by at most that many before an offer. (Making newcomers queue
// behind any line doubled the cost per request at 10 000 closed-loop
// requesters.) Called with mu held.
func (in *intake) admits() bool {
	n := in.n + in.offered
	return n < in.cap || n < in.free
}

// offer wakes as many waiting submitters, first in line first, as
// requests can be admitted now, minus the offers still on their way.
// Called with mu held.
func (in *intake) offer() {
	k := max(in.cap, in.free) - in.n - in.offered
	for ; k > 0 && in.waitq.n > 0; k-- {
		in.waitq.wakeFront()
		in.offered++
		in.passed = 0
	}
}

// offerDue reports whether a busy balancer offers room to the line now:
// once half the buffer is free, so a submitter that outruns the workers
// parks once per half buffer instead of once per request; or once half a
// buffer of newcomers passed the line since the last offer, so newcomers
// that keep the buffer over half full cannot keep a waiter out for more
// than that. (A balancer about to park offers whenever there is room.)
// Offering at the first newcomer instead cost 1.6x per request at 10 000
// closed-loop requesters: the line woken every turn. Called with mu held.
func (in *intake) offerDue() bool {
	return in.waitq.n > 0 && in.admits() && (in.n <= in.cap/2 || in.passed >= max(1, in.cap/2))
}

// leaveLine takes a waiter that gives up out of the line, passing on room
// offered to it meanwhile, and recycles its channel. Takes mu.
func (in *intake) leaveLine(ch chan struct{}, l *lane) {
	in.mu.Lock()
	if !in.waitq.remove(ch) {
		// Offered room under mu before we took it: the token is in ch.
		// Take it and pass the offer on.
		<-ch
		in.offered--
		if l != nil {
			l.offered--
		}
		in.offer()
	}
	if l != nil {
		// Its lane's offer, or its weight, may be someone else's room now.
		in.laneDue.Store(true)
		in.offerLanes(false)
	}
	in.mu.Unlock()
	in.waitq.recycle(ch)
}

// wakeAll wakes every waiting submitter (Close: they return ErrClosed).
// Called with mu held.
func (in *intake) wakeAll() {
	in.offered += in.waitq.wakeAll()
}

// admit waits for room for one request of lane l (nil without lanes, see
// lanes.go; w its weight) and returns nil with mu held, or an error with it
// released. A blocked submit waits however long room takes, whoever calls
// it (see Dispatcher on nested submits). life is the dispatcher's
// lifecycle; k wakes the engine's balancer.
func (in *intake) admit(ctx context.Context, l *lane, w int, block bool, life *atomic.Int32, k interface{ kick() }) error {
	in.mu.Lock()
	offered := false
	for life.Load() == lifeOpen && !in.admits() && (l == nil || !in.laneAdmits(l, w, !offered)) {
		if !block {
			in.mu.Unlock()
			return ErrBusy
		}
		ch := in.waitq.newChan()
		if offered {
			// Room was offered to us and someone else took it first: keep
			// our place at the front, and make sure the balancer looks at
			// the line again (whoever took the room woke it, maybe before
			// we were back in line).
			in.waitq.pushFront(ch, l)
			in.mu.Unlock()
			k.kick()
		} else {
			if l != nil {
				l.weight = w
				in.activate(l) // its weight counts while it waits
			}
			in.waitq.pushBack(ch, l)
			in.mu.Unlock()
		}
		// Safe against lost wake-ups: the balancer offers room under mu
		// whenever it leaves room with submitters in line, and Close wakes
		// them all after moving the lifecycle past open.
		select {
		case <-ch:
			in.mu.Lock()
			in.offered--
			if l != nil {
				l.offered--
			}
			offered = true
			in.waitq.recycle(ch)
		case <-ctx.Done():
			in.leaveLine(ch, l)
			return ctx.Err()
		}
	}
	if life.Load() != lifeOpen {
		in.mu.Unlock()
		return ErrClosed
	}
	if !offered && in.waitq.n > 0 {
		in.passed++
	}
	if l != nil {
		in.enter(l, w)
	}
	return nil
}

// spareGo returns a finished Go request for reuse, or a new one. Called
// with mu held.
func (in *intake) spareGo() *request {
	if n := len(in.spare); n > 0 {
		r := in.spare[n-1]
		in.spare = in.spare[:n-1]
		return r
	}
	return &request{async: true}
}

// refill passes the Go requests the balancer collected from the workers
// to submitters, keeping at most max, and returns free emptied for reuse.
// Called with mu held.
func (in *intake) refill(free []*request, max int) []*request {
	if len(in.spare) == 0 && len(free) <= max {
		in.spare, free = free, in.spare[:0]
		return free
	}
	if k := min(len(free), max-len(in.spare)); k > 0 {
		in.spare = append(in.spare, free[:k]...)
	}
	clear(free)
	return free[:0]
}

// stager is an engine whose submits go through the shared intake: it
// stages an admitted request (push, called with in.mu held, which it
// releases) and wakes its balancer (kick).
type stager interface {
	push(r *request)
	kick()
}

// enqueue admits r into in, waiting for room if block, and has e stage
// it. Once it returns nil, r will be answered exactly once.
func (in *intake) enqueue(ctx context.Context, d *Dispatcher, e stager, r *request, block bool) error {
	l, w := d.book.laneOf(in.mode, r.tenant, r.prio)
	if err := in.admit(ctx, l, w, block, &d.life, e); err != nil {
		return err
	}
	e.push(r)
	return nil
}

// enqueueGo is enqueue for Go: it takes a spare request under the lock
// admit holds, so nothing is allocated or recycled unless the request is
// accepted.
func (in *intake) enqueueGo(ctx context.Context, d *Dispatcher, e stager, m meta, fn goTask) error {
	l, w := d.book.laneOf(in.mode, m.tenant, m.prio)
	if err := in.admit(ctx, l, w, true, &d.life, e); err != nil {
		return err
	}
	r := in.spareGo()
	r.ctx, r.job, r.meta = ctx, fn, m
	e.push(r)
	return nil
}
