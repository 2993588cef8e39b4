// Package worker runs one worker goroutine of the balancer: it takes items
// from its own single-producer ring, runs each with panic and Goexit
// containment, and counts completions where the balancer reads them. A
// worker never picks and never sees other workers.
//
// It is a building block of package dispatcher, and exports what the
// dispatcher's two engines need of a worker, nothing more: build on
// dispatcher, not on it.
//
// The hand-off costs no channel operation while the worker is busy: the
// producer (the balancer goroutine) writes a ring slot and publishes it with
// one atomic store; the worker publishes each completion with one atomic
// add. A channel is used only to wake a worker that went to sleep on an
// empty ring, which is what made a channel per request (four channel locks
// per task) the main cost of the previous design.
package worker

import (
	"sync/atomic"
	"time"

	"github.com/gobalancer/balancer/internal/cacheline"
)

// Config says what a worker does with its items. Run, Panicked and Exited
// are called on the worker's goroutine; each must answer the item's
// requester (exactly one of them runs per item).
type Config[T any] struct {
	// Depth is the most items the producer keeps unfinished at this worker
	// (pushed and not yet counted by Done); the ring holds that many.
	Depth int
	// Run runs an item and answers it. It calls count once, after the
	// item's work and before its answer, so that whoever receives the
	// answer and then reads the counters finds the item counted. It may
	// panic or call runtime.Goexit (before calling count).
	Run func(item T, count func())
	// Panicked answers an item whose Run panicked with value v. The item
	// is not yet counted: Panicked calls count once, before the answer,
	// so the worker stays busy, for the producer too, until whatever
	// Panicked does first (a panic handler, say) has returned. If what it
	// does calls runtime.Goexit, Panicked calls exiting before count, so
	// Replaced has the replacement before anyone sees the answer.
	Panicked func(item T, v any, stack []byte, count, exiting func())
	// Exited answers an item whose Run called runtime.Goexit. The item is
	// already counted, and the goroutine's replacement too (Replaced).
	Exited func(item T)
	// Completed, if set, is called after each finished item has been
	// counted, with a lower bound of the items still queued behind it, so
	// the producer can be woken when it waits for room. It must not block.
	Completed func(queued int)
	// Spawn starts a goroutine owned by the worker's owner; it is used to
	// replace the worker's goroutine when a task calls runtime.Goexit.
	Spawn func(func())
	// Quiet, if set, reports whether nobody waits for item's answer, so a
	// channel worker may report its completion later, with others (see
	// Chan). Read by Chan only: a ring worker's completions are
	// per-worker counters, already free per item.
	Quiet func(item T) bool
	// Stop, if set, is called on the worker's goroutine when the worker
	// stops for good, after its last item, so the owner can drop what
	// that worker kept for its items.
	Stop func()
}

// flushEvery bounds how many items a busy worker runs before it publishes
// its busy time: the clock is read once per run of items, not per item.
const flushEvery = 64

// Worker is one worker: its ring and its run loop. Create it with New,
// start it with Start, stop it with Close (after running what is queued).
//
// Put, Publish, TryTake, Close and Closed are for one producer goroutine;
// the counters may be used from any goroutine; the rest belongs to the
// worker goroutine.
type Worker[T any] struct {
	cfg      Config[T]
	ring     []T
	mask     uint64
	wake     chan struct{} // capacity 1: a token per successful wake
	stopped  chan struct{}
	count    func() // w.finish as a value, made once: no allocation per item
	leaving  func() // w.exiting as a value, made once: no allocation per item
	replaced atomic.Int64

	// Written by the producer, read by the worker once per run of items.
	_        cacheline.Pad
	tail     atomic.Uint64 // items published
	put      uint64        // items written, published or not; producer only
	sleeping atomic.Bool   // the worker is, or is about to be, blocked on wake
	closed   atomic.Bool

	// Written by the worker per item, read by the producer when it reaps.
	_    cacheline.Pad
	done atomic.Uint64 // items finished (answered)
	busy atomic.Int64  // nanoseconds spent running them, published per run

	// The worker's own; the producer touches head only in TryTake.
	_       cacheline.Pad
	head    atomic.Uint64 // next slot to take; claimed by CAS (see TryTake)
	seen    uint64        // tail as last loaded: items up to it need no load
	ran     int           // items since the busy time was last published
	counted bool          // the current item has been counted
	exit    bool          // the loop stopped normally: no replacement
	early   bool          // the Goexit that ends this goroutine is counted already
	start   time.Time
	_       cacheline.Pad
}

// New returns a worker whose ring holds cfg.Depth items (at least 1).
func New[T any](cfg Config[T]) *Worker[T] {
	if cfg.Depth < 1 {
		cfg.Depth = 1
	}
	size := 1
	for size < cfg.Depth {
		size <<= 1
	}
	w := &Worker[T]{
		cfg:     cfg,
		ring:    make([]T, size),
		mask:    uint64(size - 1),
		wake:    make(chan struct{}, 1),
		stopped: make(chan struct{}),
	}
	w.count = w.finish
	w.leaving = w.exiting
	return w
}

// Put writes item to the ring without publishing it: the worker sees it
// at the next Publish. Batching the publication saves a cache-line transfer
// per item. The producer must keep written − Done() < Depth before each
// Put (so it never overwrites an item not yet taken) and must not Put
// after Close. Put never blocks.
func (w *Worker[T]) Put(item T) {
	w.ring[w.put&w.mask] = item
	w.put++
}

// Publish makes every item Put so far visible to the worker and wakes it
// if it sleeps.
func (w *Worker[T]) Publish() {
	if w.tail.Load() != w.put { // only this goroutine writes tail
		w.tail.Store(w.put)
		w.rouse()
	}
}

// Done returns how many items the worker has finished. An item counted here
// has been answered and its ring slot released.
func (w *Worker[T]) Done() uint64 { return w.done.Load() }

// Busy returns the time spent running finished items, published after
// every run of up to 64 items and whenever the worker goes idle.
func (w *Worker[T]) Busy() time.Duration { return time.Duration(w.busy.Load()) }

// rouse wakes the worker if it sleeps. Safe from any goroutine; never blocks:
// only the caller whose CompareAndSwap clears sleeping sends, and the worker
// takes exactly one token per such clearing, so the buffer never fills.
func (w *Worker[T]) rouse() {
	if w.sleeping.Load() && w.sleeping.CompareAndSwap(true, false) {
		w.wake <- struct{}{}
	}
}

// Close makes the worker exit once it has run every item already pushed.
func (w *Worker[T]) Close() {
	w.closed.Store(true)
	w.rouse()
}

// Closed reports whether Close was called. Producer only (the load is
// atomic because the worker reads the flag too).
func (w *Worker[T]) Closed() bool { return w.closed.Load() }

// Stopped is closed when the worker's loop has exited for good.
func (w *Worker[T]) Stopped() <-chan struct{} { return w.stopped }

// Replaced returns how many times a task's Goexit replaced the goroutine.
func (w *Worker[T]) Replaced() int64 { return w.replaced.Load() }

// TryTake removes an item still queued, without blocking, so the producer
// can answer it without running it (when it abandons its work). Producer
// only; safe while the loop runs: the worker and TryTake both claim a slot
// with a CompareAndSwap on head, so each item is taken once. An item taken
// here is not counted by Done: the producer accounts for it itself.
//
// TryTake is for giving up: once it has taken an item the producer must
// not Put again, because Done no longer says which slots the worker has
// finished reading (it finishes items in order only among its own).
func (w *Worker[T]) TryTake() (item T, ok bool) {
	for {
		h := w.head.Load()
		if h == w.tail.Load() {
			return item, false
		}
		if w.head.CompareAndSwap(h, h+1) {
			return w.claim(h), true
		}
	}
}

// claim reads and clears slot h, which the caller has just won. The slot is
// read only after the win, so the loser never touches it.
func (w *Worker[T]) claim(h uint64) T {
	slot := &w.ring[h&w.mask]
	item := *slot
	var zero T
	*slot = zero // release the item for the garbage collector
	return item
}

// Start runs the worker's loop on a goroutine started by cfg.Spawn.
func (w *Worker[T]) Start() { w.cfg.Spawn(w.loop) }

func (w *Worker[T]) loop() {
	defer w.respawn()
	for {
		h := w.head.Load()
		// TryTake may have moved head past seen: >=, not ==.
		if h >= w.seen {
			w.seen = w.tail.Load()
		}
		if h >= w.seen {
			w.publishBusy()
			if !w.sleep() {
				w.exit = true
				if w.cfg.Stop != nil {
					w.cfg.Stop()
				}
				close(w.stopped)
				return
			}
			continue
		}
		// Uncontended except when the producer abandons work (TryTake).
		if !w.head.CompareAndSwap(h, h+1) {
			continue
		}
		item := w.claim(h)
		if w.ran == 0 {
			w.start = time.Now()
		}
		w.counted = false
		contain(&w.cfg, item, w.count, w.leaving)
		w.finish() // in case Run returned without counting
	}
}

// respawn continues the loop on a fresh goroutine when this one is leaving
// for any reason but a normal stop: a task's Goexit, including one that
// resumes after a deferred call's panic was recovered (recover cannot stop
// a Goexit, so the loop cannot tell from the item alone). The replacement
// is counted here only if exiting did not count it before the answer
// (the Goexit resumed after a recovered panic: known only now).
func (w *Worker[T]) respawn() {
	if !w.exit {
		if !w.early {
			w.replaced.Add(1)
		}
		w.early = false
		w.cfg.Spawn(w.loop)
	}
}

// exiting counts the replacement of a goroutine that is leaving by a
// Goexit, before its item is answered: whoever reads Replaced after the
// answer finds it, and so does an owner that reuses the worker's index as
// soon as the item is counted (pool.Add reads the old worker's Replaced).
func (w *Worker[T]) exiting() {
	w.replaced.Add(1)
	w.early = true
}

// finish counts the current item once and tells the producer.
func (w *Worker[T]) finish() {
	if w.counted {
		return
	}
	w.counted = true
	w.ran++
	if h := w.head.Load(); h >= w.seen {
		w.seen = w.tail.Load()
	}
	if w.ran >= flushEvery || w.head.Load() >= w.seen {
		// Publish before counting when nothing is queued behind: whoever
		// reads the counters after this item's answer finds its busy time.
		w.publishBusy()
	}
	w.done.Add(1)
	if w.cfg.Completed != nil {
		// seen may be behind tail: a lower bound, and no load of the
		// producer's cache line per item.
		queued := 0
		if h := w.head.Load(); w.seen > h { // TryTake may have passed seen
			queued = int(w.seen - h)
		}
		w.cfg.Completed(queued)
	}
}

func (w *Worker[T]) publishBusy() {
	if w.ran > 0 {
		w.busy.Add(int64(time.Since(w.start)))
		w.ran = 0
	}
}

// sleep blocks until there is an item or the worker is closed; it returns
// false when the worker must exit. It is the consumer half of the wake
// protocol: announce sleeping, then look again, so a producer either sees
// the flag (and sends a token) or the worker sees its item.
func (w *Worker[T]) sleep() bool {
	w.sleeping.Store(true)
	if w.head.Load() != w.tail.Load() || w.closed.Load() {
		if !w.sleeping.CompareAndSwap(true, false) {
			<-w.wake // a producer cleared the flag: take its token
		}
	} else {
		<-w.wake
	}
	return w.head.Load() != w.tail.Load() || !w.closed.Load()
}
