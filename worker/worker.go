// Package worker runs one worker goroutine of the balancer: it receives
// items on its own buffered channel, runs each with panic and Goexit
// containment, and reports completions to the balancer. A worker never
// picks and never sees other workers.
package worker

import (
	"runtime/debug"
	"sync/atomic"
	"time"
)

// Completion is a worker's report that it finished N items, spending Busy
// on them. Workers coalesce reports: one message may cover several items,
// so the balancer pays one channel operation per batch instead of per item.
type Completion struct {
	Worker int
	N      int
	Busy   time.Duration
}

// Config says what a worker does with its items. Run, Panicked and Exited
// are called on the worker's goroutine; each must answer the item's
// requester (exactly one of them runs per item).
type Config[T any] struct {
	// ID is the worker's index, carried in its completions.
	ID int
	// Depth is the channel's capacity. The balancer keeps at most Depth
	// items counted against a worker, so its sends never block.
	Depth int
	// Run runs an item. It may panic or call runtime.Goexit.
	Run func(T)
	// Panicked answers an item whose Run panicked with value v.
	Panicked func(item T, v any, stack []byte)
	// Exited answers an item whose Run called runtime.Goexit.
	Exited func(item T)
	// Completions receives the worker's reports. The balancer must always be
	// ready to receive on it: a worker blocks there until it does.
	Completions chan<- Completion
	// Spawn starts a goroutine owned by the worker's owner; it is used to
	// replace the worker's goroutine when a task calls runtime.Goexit.
	Spawn func(func())
}

// Worker is one worker: its channel and its run loop. Create it with New
// and start its loop with Start; close its channel (Close) to stop it after
// it has run every item already queued.
type Worker[T any] struct {
	cfg      Config[T]
	in       chan T
	flushAt  int
	done     int       // items finished since the last report
	start    time.Time // when the first of those items started
	replaced atomic.Int64
	stopped  chan struct{}
}

// New returns a worker with a channel of capacity cfg.Depth (at least 1).
func New[T any](cfg Config[T]) *Worker[T] {
	if cfg.Depth < 1 {
		cfg.Depth = 1
	}
	// Report at least every half queue so the balancer learns of room before
	// the queue runs dry, and always before waiting for more.
	flush := cfg.Depth / 2
	if flush < 1 {
		flush = 1
	}
	return &Worker[T]{cfg: cfg, in: make(chan T, cfg.Depth), flushAt: flush, stopped: make(chan struct{})}
}

// In is the worker's request channel. Only the balancer sends on it.
func (w *Worker[T]) In() chan<- T { return w.in }

// Close closes the channel: the worker runs what is queued, reports, exits.
func (w *Worker[T]) Close() { close(w.in) }

// Stopped is closed when the worker's loop has exited for good.
func (w *Worker[T]) Stopped() <-chan struct{} { return w.stopped }

// Replaced returns how many times a task's Goexit replaced the goroutine.
func (w *Worker[T]) Replaced() int64 { return w.replaced.Load() }

// TryTake removes an item still queued, without blocking, so the owner can
// answer it without running it (when it abandons its work). It is safe to
// call while the loop runs: each item is received once, by one of them, and
// the worker reports only the items it received itself.
func (w *Worker[T]) TryTake() (item T, ok bool) {
	select {
	case item, ok = <-w.in:
		return item, ok
	default:
		return item, false
	}
}

// Start runs the worker's loop on a goroutine started by cfg.Spawn.
func (w *Worker[T]) Start() { w.cfg.Spawn(w.loop) }

func (w *Worker[T]) loop() {
	for {
		item, ok := <-w.in
		if !ok {
			w.report()
			close(w.stopped)
			return
		}
		if w.done == 0 {
			w.start = time.Now()
		}
		if !w.runOne(item) {
			return // Goexit: a replacement goroutine has taken over the loop
		}
		w.done++
		if w.done >= w.flushAt || len(w.in) == 0 {
			w.report()
		}
	}
}

// runOne runs one item, turning a panic into Panicked and a Goexit into
// Exited plus a replacement goroutine. It returns false after a Goexit.
func (w *Worker[T]) runOne(item T) (ok bool) {
	normal := false
	defer func() {
		if normal {
			return
		}
		if v := recover(); v != nil {
			w.cfg.Panicked(item, v, debug.Stack())
			ok = true
			return
		}
		// recover returned nil without a normal return: runtime.Goexit. This
		// goroutine cannot be kept, so a fresh one continues the same loop
		// with the same state once the item is counted and answered.
		w.cfg.Exited(item)
		w.done++
		w.replaced.Add(1)
		w.report()
		w.cfg.Spawn(w.loop)
	}()
	w.cfg.Run(item)
	normal = true
	return true
}

// report sends the coalesced completion, if any.
func (w *Worker[T]) report() {
	if w.done == 0 {
		return
	}
	w.cfg.Completions <- Completion{Worker: w.cfg.ID, N: w.done, Busy: time.Since(w.start)}
	w.done = 0
}
