package worker

import (
	"sync/atomic"
	"time"

	"github.com/gobalancer/balancer/internal/cacheline"
)

// Chan is a worker of the channel engine, Pike's shape: it receives items
// on its own buffered channel, a message per run of items the producer
// handed over together (Put, then Publish: the items sit in Depth slots
// the message points into), and reports finished items on a completion
// channel shared with the other workers: one message per item, except
// that the completions of quiet items (Config.Quiet: nobody waits for
// their answer) may be carried by one message with their count while more
// items are queued behind them. The producer must send only when the
// worker has room (fewer than Depth items sent and not yet reported on
// the completion channel); then a send never waits for anything but the
// worker reaching its receive.
//
// Put, Publish, Send, TryTake, Close and Closed are for the one producer;
// Busy and Replaced may be called from any goroutine; the rest belongs to
// the worker goroutine.
type Chan[T any] struct {
	cfg  Config[T]
	in   chan run
	done chan<- Done
	// slots hold the items of the runs sent: the producer writes slot
	// put%Depth only while the worker has room, so the item that was
	// there has been reported finished (its report, on done, orders the
	// worker's read of it before the producer's write).
	slots    []T
	index    int
	count    func() // w.finish as a value, made once: no allocation per item
	leaving  func() // w.exiting as a value, made once: no allocation per item
	stopped  chan struct{}
	replaced atomic.Int64

	// The producer's own, written per item Put: off the worker's line,
	// which the worker writes per item too.
	_      cacheline.Pad
	put    uint64 // items Put
	sent   uint64 // items Published (the next run starts here)
	back   run    // the items taken back by TryTake, not yet returned
	closed bool   // Close was called

	// Written by the worker per run of items, read by the producer when
	// it accounts a completion.
	_    cacheline.Pad
	busy atomic.Int64 // nanoseconds spent running finished items

	// The worker's own; the producer touches claim only in TryTake.
	_   cacheline.Pad
	cur run // the rest of the run being run
	// claim is the position of the next item to start: the worker moves
	// it one item at a time, TryTake to put at once, whichever CAS wins
	// owns the items (as Worker's head). A run the worker has received is
	// not yet started: what Close abandons must still be taken back.
	claim   atomic.Uint64
	ran     int // items since the busy time was last published
	counted bool
	quiet   bool // the current item is quiet (Config.Quiet)
	held    int  // finished items not yet reported
	exit    bool
	early   bool // the Goexit that ends this goroutine is counted already
	start   time.Time
	_       cacheline.Pad
}

// run is a channel message: n items from slot at (modulo Depth).
type run struct {
	at uint64
	n  int
}

// Done is a completion message: worker Worker finished N items (N ≥ 1).
type Done struct {
	Worker int
	N      int
}

// holdMost bounds how many quiet completions one message carries.
const holdMost = 32

// NewChan returns worker index of a channel engine: it holds cfg.Depth
// items in its slots, its channel cfg.Depth-1 runs of them (0 is
// unbuffered), and it reports finished items by sending Done{index, n} on
// done. Completed is not used: the completion message is the signal.
func NewChan[T any](cfg Config[T], index int, done chan<- Done) *Chan[T] {
	if cfg.Depth < 1 {
		cfg.Depth = 1
	}
	w := &Chan[T]{
		cfg:     cfg,
		in:      make(chan run, cfg.Depth-1),
		slots:   make([]T, cfg.Depth),
		done:    done,
		index:   index,
		stopped: make(chan struct{}),
	}
	w.count = w.finish
	w.leaving = w.exiting
	return w
}

// Put adds item to the run the next Publish sends. The producer must know
// the worker has room for it (see Chan).
func (w *Chan[T]) Put(item T) {
	w.slots[w.put%uint64(len(w.slots))] = item
	w.put++
}

// Publish sends the items Put since the last Publish as one run: one
// channel send however many there are (a balancer handing a worker
// several requests in a turn paid a send per request, and the worker a
// receive). With a zero buffer the worker is idle when it may be sent to,
// and the send completes as soon as it is back at its receive.
func (w *Chan[T]) Publish() {
	if n := int(w.put - w.sent); n > 0 {
		w.in <- run{at: w.sent, n: n}
		w.sent = w.put
	}
}

// TryTake takes back an item not yet started, without blocking, so the
// producer can answer it without running it: the first call claims every
// item Put and not started (published or not, received by the worker or
// not), later calls return them one at a time, oldest first. Safe while
// the worker runs: the worker skips what was claimed. The producer must
// Put nothing afterwards (it is for Close's abandonment).
func (w *Chan[T]) TryTake() (item T, ok bool) {
	if w.back.n == 0 {
		p := w.claim.Load()
		for p < w.put && !w.claim.CompareAndSwap(p, w.put) {
			p = w.claim.Load()
		}
		if p >= w.put {
			return item, false
		}
		w.back = run{at: p, n: int(w.put - p)}
	}
	return w.take(&w.back), true
}

// take returns the next item of r from its slot, clearing the slot so it
// keeps nothing reachable.
func (w *Chan[T]) take(r *run) T {
	var zero T
	i := r.at % uint64(len(w.slots))
	item := w.slots[i]
	w.slots[i] = zero
	r.at++
	r.n--
	return item
}

// next claims the next item of the current run for the worker, skipping
// the items TryTake claimed, and reports whether there was one.
func (w *Chan[T]) next() (item T, ok bool) {
	for w.cur.n > 0 {
		if w.claim.CompareAndSwap(w.cur.at, w.cur.at+1) {
			return w.take(&w.cur), true
		}
		w.cur.at++ // taken back
		w.cur.n--
	}
	return item, false
}

// Close makes the worker exit once it has run every item already Put
// (Close publishes them). Nothing may be sent afterwards. Close is
// idempotent, as the ring worker's is: on a closed worker it leaves the
// worker closed and does not close the channel again (which would panic). The flag, not the channel,
// says it was closed, because a closed channel cannot be asked without
// receiving from it.
func (w *Chan[T]) Close() {
	if !w.closed {
		w.Publish()
		w.closed = true
		close(w.in)
	}
}

// Closed reports whether Close was called. Producer only.
func (w *Chan[T]) Closed() bool { return w.closed }

// Start runs the worker's loop on a goroutine started by cfg.Spawn.
func (w *Chan[T]) Start() { w.cfg.Spawn(w.loop) }

// Stopped is closed when the worker's loop has exited for good.
func (w *Chan[T]) Stopped() <-chan struct{} { return w.stopped }

// Replaced returns how many times a task's Goexit replaced the goroutine.
func (w *Chan[T]) Replaced() int64 { return w.replaced.Load() }

// Busy returns the time spent running finished items; it is published
// before the completion message of any item the worker finished with
// nothing queued behind it, and at least every 64 items.
func (w *Chan[T]) Busy() time.Duration { return time.Duration(w.busy.Load()) }

func (w *Chan[T]) loop() {
	defer w.respawn()
	for {
		item, ok := w.receive()
		if !ok {
			w.exit = true
			if w.cfg.Stop != nil {
				w.cfg.Stop()
			}
			close(w.stopped)
			return
		}
		if w.ran == 0 {
			w.start = time.Now()
		}
		w.counted = false
		w.quiet = w.cfg.Quiet != nil && w.cfg.Quiet(item)
		contain(&w.cfg, item, w.count, w.leaving)
		w.finish()
	}
}

// receive takes the next item: from the run being run, else from the
// next run on the channel, publishing first the busy time of the items
// run so far and the completions held when it has to wait for one (the
// producer may have taken back the items it counted on). (Yielding a few
// times before blocking, as the balancer does, was tried: no measurable
// gain on 2 cores.)
func (w *Chan[T]) receive() (item T, ok bool) {
	for {
		if item, ok = w.next(); ok {
			return item, true
		}
		var r run
		select {
		case r, ok = <-w.in:
		default:
			w.publishBusy()
			w.report()
			r, ok = <-w.in
		}
		if !ok {
			// Closed (a removed worker, or the owner's stop): what it
			// holds is reported before it exits, whichever case ran.
			w.publishBusy()
			w.report()
			return item, false
		}
		w.cur = r
	}
}

// queued is a lower bound of the items waiting behind the current one:
// the rest of its run and a run per message on the channel.
func (w *Chan[T]) queued() int { return w.cur.n + len(w.in) }

// respawn: see Worker.respawn.
func (w *Chan[T]) respawn() {
	if !w.exit {
		if !w.early {
			w.replaced.Add(1)
		}
		w.early = false
		w.cfg.Spawn(w.loop)
	}
}

// exiting: see Worker.exiting.
func (w *Chan[T]) exiting() {
	w.replaced.Add(1)
	w.early = true
}

// finish reports the current item once on the completion channel, with
// the quiet ones held before it. It blocks while the balancer does not
// take the message (an unbuffered or full completion channel): that is
// the design being measured. The balancer never waits on this worker
// meanwhile (it sends only with room).
//
// A quiet item's completion is held while at least twice as many items
// as are held wait behind it (so the producer hears of the room before
// the queue runs dry) and fewer than holdMost are held: with a batch of
// empty tasks, a message per item cost the balancer a receive, and the
// worker a send, on a channel lock the other side was taking too.
func (w *Chan[T]) finish() {
	if w.counted {
		return
	}
	w.counted = true
	w.held++
	q := w.queued()
	if w.ran++; w.ran >= flushEvery || q == 0 {
		w.publishBusy()
	}
	if w.quiet && w.held < holdMost && 2*w.held <= q {
		return
	}
	w.report()
}

// report sends the completions held, if any.
func (w *Chan[T]) report() {
	if w.held > 0 {
		w.done <- Done{Worker: w.index, N: w.held}
		w.held = 0
	}
}

func (w *Chan[T]) publishBusy() {
	if w.ran > 0 {
		w.busy.Add(int64(time.Since(w.start)))
		w.ran = 0
	}
}
