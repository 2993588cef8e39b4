package dispatcher

import (
	"context"
	"sync"
	"sync/atomic"
)

// line is where submitters wait when the channel engine's buffered request
// channel is full. Blocking in the send itself made every waiting sender a
// sudog on the request channel (and on closing, in the same select): with
// 10 000 closed-loop requesters the balancer's every receive took a lock
// thousands of goroutines were queued on and readied one of them, and the
// cost per request grew 5–10× from 64 requesters to 10 000. In line, each
// waiter parks on its own capacity-1 channel; the balancer, after a
// receive that made room, hands out one token per free slot, first in line
// first, and the woken waiter sends without waiting. The request channel
// stays the only way in: the line decides only who tries next.
type line struct {
	mu     sync.Mutex
	waitq  waiters
	closed bool // Close began: every waiter returns ErrClosed
	// waiting is waitq's length plus the submitters trying the channel
	// under mu before they join it, read by the balancer without the lock.
	waiting atomic.Int32
	offered atomic.Int32 // tokens sent whose receivers have not yet tried
}

// offerLocked sends tokens to the first waiters, one per free slot of the
// request channel minus the offers still on their way. Called with mu held.
func (e *channels[R]) offerLocked() {
	l := &e.line
	k := cap(e.reqs) - len(e.reqs) - int(l.offered.Load())
	for ; k > 0 && l.waitq.n > 0; k-- {
		l.waitq.popFront() <- struct{}{} // capacity 1, one token per wait: never blocks
		l.waiting.Add(-1)
		l.offered.Add(1)
	}
}

// offer is the balancer's call after a receive: nothing but an atomic load
// unless someone waits.
func (e *channels[R]) offer() {
	if e.line.waiting.Load() > 0 {
		e.offerIdle()
	}
}

// offerIdle is offer under the lock, whatever the count says: the
// balancer calls it before it parks, so a waiter whose count it has not
// yet seen is offered the room its receives made (the waiter tried the
// channel under the same lock before it parked).
func (e *channels[R]) offerIdle() {
	e.line.mu.Lock()
	e.offerLocked()
	e.line.mu.Unlock()
}

// wait sends r once the line lets it, after a send found the channel full.
// FIFO among waiters; a submitter arriving while others wait may still get
// in first if it finds a free slot (as on a channel), and a waiter whose
// token was taken that way keeps its place at the front.
func (e *channels[R]) wait(ctx context.Context, r *request[R]) error {
	l := &e.line
	ch := l.waitq.newChan()
	front := false
	e.blocked.Add(1)
	defer e.blocked.Add(-1)
	for {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			l.waitq.recycle(ch)
			return ErrClosed
		}
		// Counted before it tries, under the lock: the balancer either
		// made its room before this try (which then succeeds) or sees the
		// count after its receive, or, at the latest, offers under this
		// lock before it parks.
		l.waiting.Add(1)
		select {
		case e.reqs <- r:
			l.waiting.Add(-1)
			l.mu.Unlock()
			l.waitq.recycle(ch)
			return nil
		default:
		}
		if front {
			l.waitq.pushFront(ch)
		} else {
			l.waitq.pushBack(ch)
		}
		l.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			e.leaveLine(ch)
			return ctx.Err()
		}
		l.offered.Add(-1)
		select {
		case <-e.closing: // woken by closeLine
			l.waitq.recycle(ch)
			return ErrClosed
		default:
		}
		select {
		case e.reqs <- r:
			l.waitq.recycle(ch)
			return nil
		default: // closed, or a newcomer took the slot: back to the front
		}
		front = true
	}
}

// leaveLine takes a waiter whose context ended out of the line, passing on
// a token sent to it meanwhile.
func (e *channels[R]) leaveLine(ch chan struct{}) {
	l := &e.line
	l.mu.Lock()
	if l.waitq.remove(ch) {
		l.waiting.Add(-1)
	} else {
		<-ch // offered under mu before we took it: the token is in ch
		l.offered.Add(-1)
		e.offerLocked()
	}
	l.mu.Unlock()
	l.waitq.recycle(ch)
}

// closeLine wakes every waiter for Close; they return ErrClosed.
func (e *channels[R]) closeLine() {
	l := &e.line
	l.mu.Lock()
	l.closed = true
	n := l.waitq.wakeAll()
	l.offered.Add(int32(n))
	l.waiting.Add(-int32(n))
	l.mu.Unlock()
}
