package dispatcher

import (
	"sync"
	"sync/atomic"
)

// waiters is a line of submitters waiting for room, each parked on its
// own capacity-1 channel (so a blocked submit can also watch its context,
// which sync.Cond cannot): the intake (intake.go) keeps one, under its
// lock. A ring, so a waiter sent back to the front (the room offered to
// it taken by a newcomer, common under load) costs O(1), not a copy of
// thousands of waiters. Not safe for concurrent use: its owner's lock
// guards it.
type waiters struct {
	buf  []waiter // len is a power of two
	head int
	n    int
	// lanes counts the waiters that have a lane (lanes.go); the balancer
	// reads it without the lock.
	lanes atomic.Int32
	// free recycles the waiters' channels, so blocking allocates nothing
	// in the steady state. Per dispatcher, not global: a channel belongs
	// to the synctest bubble that made it. Safe without the lock.
	free sync.Pool
}

// waiter is one submitter in line: the channel it waits on, and its lane
// (nil without lanes).
type waiter struct {
	ch chan struct{}
	l  *lane
}

// newChan returns a capacity-1 channel for a new waiter.
func (q *waiters) newChan() chan struct{} {
	if ch, ok := q.free.Get().(chan struct{}); ok {
		return ch
	}
	return make(chan struct{}, 1)
}

// recycle takes back a channel its waiter is done with (its token taken).
func (q *waiters) recycle(ch chan struct{}) { q.free.Put(ch) }

func (q *waiters) grow() {
	if q.n < len(q.buf) {
		return
	}
	buf := make([]waiter, max(16, 2*len(q.buf)))
	for i := range q.n {
		buf[i] = q.buf[(q.head+i)&(len(q.buf)-1)]
	}
	q.buf, q.head = buf, 0
}

func (q *waiters) joined(l *lane) {
	if l != nil {
		l.waiting++
		q.lanes.Add(1)
	}
}

func (q *waiters) left(l *lane) {
	if l != nil {
		l.waiting--
		q.lanes.Add(-1)
	}
}

func (q *waiters) pushBack(ch chan struct{}, l *lane) {
	q.grow()
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = waiter{ch, l}
	q.n++
	q.joined(l)
}

func (q *waiters) pushFront(ch chan struct{}, l *lane) {
	q.grow()
	q.head = (q.head - 1) & (len(q.buf) - 1)
	q.buf[q.head] = waiter{ch, l}
	q.n++
	q.joined(l)
}

// wakeFront sends the first waiter its token and takes it out of line.
func (q *waiters) wakeFront() {
	w := q.buf[q.head]
	q.buf[q.head] = waiter{}
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	q.left(w.l)
	wake(w)
}

// wake sends w its token; room offered to a lane's submitter counts in
// the lane until it takes it.
func wake(w waiter) {
	if w.l != nil {
		w.l.offered++
	}
	w.ch <- struct{}{} // capacity 1, one token per queued wait: never blocks
}

// remove takes ch out of the line, keeping the others' order; O(n), for a
// waiter whose context ended.
func (q *waiters) remove(ch chan struct{}) bool {
	mask := len(q.buf) - 1
	for i := range q.n {
		w := q.buf[(q.head+i)&mask]
		if w.ch != ch {
			continue
		}
		for j := i; j < q.n-1; j++ {
			q.buf[(q.head+j)&mask] = q.buf[(q.head+j+1)&mask]
		}
		q.buf[(q.head+q.n-1)&mask] = waiter{}
		q.n--
		q.left(w.l)
		return true
	}
	return false
}

// wakeIf sends its token to every waiter ok accepts, in line order, until
// ok says no more, and takes them out of line, keeping the others' order;
// O(n). It returns how many it woke.
func (q *waiters) wakeIf(ok func(l *lane) (wake, more bool)) int {
	mask := len(q.buf) - 1
	k, woke, i := 0, 0, 0
	for ; i < q.n; i++ {
		w := q.buf[(q.head+i)&mask]
		wakeIt, more := ok(w.l)
		if wakeIt {
			q.left(w.l)
			wake(w)
			woke++
		} else {
			q.buf[(q.head+k)&mask] = w
			k++
		}
		if !more {
			i++
			break
		}
	}
	for ; i < q.n; i++ { // the rest, unlooked at, close up
		q.buf[(q.head+k)&mask] = q.buf[(q.head+i)&mask]
		k++
	}
	for j := k; j < q.n; j++ {
		q.buf[(q.head+j)&mask] = waiter{}
	}
	q.n = k
	return woke
}

// wakeAll sends every waiter its token and empties the line, returning
// how many there were.
func (q *waiters) wakeAll() int {
	n := q.n
	for q.n > 0 {
		q.wakeFront()
	}
	return n
}
