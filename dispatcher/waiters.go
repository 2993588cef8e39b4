package dispatcher

import "sync"

// waiters is a line of submitters waiting for room, each parked on its
// own capacity-1 channel (so a blocked submit can also watch its context,
// which sync.Cond cannot): the intake (intake.go) keeps one, under its
// lock. A ring, so a waiter sent back to the front (the room offered to
// it taken by a newcomer, common under load) costs O(1), not a copy of
// thousands of waiters. Not safe for concurrent use: its owner's lock
// guards it.
type waiters struct {
	buf  []chan struct{} // len is a power of two
	head int
	n    int
	// free recycles the waiters' channels, so blocking allocates nothing
	// in the steady state. Per dispatcher, not global: a channel belongs
	// to the synctest bubble that made it. Safe without the lock.
	free sync.Pool
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
	buf := make([]chan struct{}, max(16, 2*len(q.buf)))
	for i := range q.n {
		buf[i] = q.buf[(q.head+i)&(len(q.buf)-1)]
	}
	q.buf, q.head = buf, 0
}

func (q *waiters) pushBack(ch chan struct{}) {
	q.grow()
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = ch
	q.n++
}

func (q *waiters) pushFront(ch chan struct{}) {
	q.grow()
	q.head = (q.head - 1) & (len(q.buf) - 1)
	q.buf[q.head] = ch
	q.n++
}

func (q *waiters) popFront() chan struct{} {
	ch := q.buf[q.head]
	q.buf[q.head] = nil
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	return ch
}

// remove takes ch out of the line, keeping the others' order; O(n), for a
// waiter whose context ended.
func (q *waiters) remove(ch chan struct{}) bool {
	mask := len(q.buf) - 1
	for i := range q.n {
		if q.buf[(q.head+i)&mask] != ch {
			continue
		}
		for j := i; j < q.n-1; j++ {
			q.buf[(q.head+j)&mask] = q.buf[(q.head+j+1)&mask]
		}
		q.buf[(q.head+q.n-1)&mask] = nil
		q.n--
		return true
	}
	return false
}

// wakeAll sends every waiter its token and empties the line, returning
// how many there were.
func (q *waiters) wakeAll() int {
	n := q.n
	for q.n > 0 {
		q.popFront() <- struct{}{} // capacity 1, one token per wait: never blocks
	}
	return n
}
