package worker

import (
	"sync/atomic"
	"time"
)

// Chan is a worker of the channel engine, Pike's shape: it receives items
// on its own buffered channel and reports finished items on a completion
// channel shared with the other workers: one message per item, except
// that the completions of quiet items (Config.Quiet: nobody waits for
// their answer) may be carried by one message with their count while more
// items are queued behind them. The producer must send only when the
// worker has room (fewer than Depth items sent and not yet reported on
// the completion channel); then a send never waits for anything but the
// worker reaching its receive.
//
// Send, TryTake, Close and Closed are for the one producer; Busy and Replaced may
// be called from any goroutine; the rest belongs to the worker goroutine.
type Chan[T any] struct {
	cfg      Config[T]
	in       chan T
	done     chan<- Done
	index    int
	count    func() // w.finish as a value, made once: no allocation per item
	stopped  chan struct{}
	replaced atomic.Int64
	busy     atomic.Int64 // nanoseconds spent running finished items
	closed   bool         // Close was called; producer only

	ran     int // items since the busy time was last published
	counted bool
	quiet   bool // the current item is quiet (Config.Quiet)
	held    int  // finished items not yet reported
	exit    bool
	start   time.Time
}

// Done is a completion message: worker Worker finished N items (N ≥ 1).
type Done struct {
	Worker int
	N      int
}

// holdMost bounds how many quiet completions one message carries.
const holdMost = 32

// NewChan returns worker index of a channel engine: its channel holds
// cfg.Depth-1 items (the one it runs is the Depth-th; 0 is unbuffered) and
// it reports finished items by sending Done{index, n} on done. Completed
// is not used: the completion message is the signal.
func NewChan[T any](cfg Config[T], index int, done chan<- Done) *Chan[T] {
	if cfg.Depth < 1 {
		cfg.Depth = 1
	}
	w := &Chan[T]{
		cfg:     cfg,
		in:      make(chan T, cfg.Depth-1),
		done:    done,
		index:   index,
		stopped: make(chan struct{}),
	}
	w.count = w.finish
	return w
}

// Send hands item to the worker. The producer must know it has room (see
// Chan); with a zero buffer the worker is then idle and the send completes
// as soon as it is back at its receive.
func (w *Chan[T]) Send(item T) { w.in <- item }

// TryTake takes back an item still queued, without blocking, so the
// producer can answer it without running it. Safe while the worker runs:
// a channel hands each item to one receiver.
func (w *Chan[T]) TryTake() (item T, ok bool) {
	// ok is false for a closed channel too (a removed worker whose queue
	// is empty): there is nothing to take back.
	select {
	case item, ok = <-w.in:
		return item, ok
	default:
		return item, false
	}
}

// Close makes the worker exit once it has run every item already sent.
// Nothing may be sent afterwards. Close is idempotent, as the ring
// worker's is: on a closed worker it leaves the worker closed and does not
// close the channel again (which would panic). The flag, not the channel,
// says it was closed, because a closed channel cannot be asked without
// receiving from it.
func (w *Chan[T]) Close() {
	if !w.closed {
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
		contain(&w.cfg, item, w.count)
		w.finish()
	}
}

// receive takes the next item, publishing the busy time of the run of
// items that ends when it has to wait, and reporting the completions it
// held (the producer may have taken back the items it counted on). (Yielding a few times before
// blocking, as the balancer does, was tried: no measurable gain on 2 cores.)
func (w *Chan[T]) receive() (item T, ok bool) {
	select {
	case item, ok = <-w.in:
		return item, ok
	default:
	}
	w.publishBusy()
	w.report()
	item, ok = <-w.in
	return item, ok
}

// respawn: see Worker.respawn.
func (w *Chan[T]) respawn() {
	if !w.exit {
		w.replaced.Add(1)
		w.cfg.Spawn(w.loop)
	}
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
	q := len(w.in)
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
