package dispatcher

import (
	"context"
	"fmt"
)

// lifecycle is Dispatcher.life's type.
type lifecycle = int32

const (
	lifeOpen lifecycle = iota
	lifeDraining
	lifeAbandoning
	lifeStopped
)

// advance moves the lifecycle forward to st (never back).
func (d *Dispatcher) advance(st lifecycle) {
	for {
		cur := d.life.Load()
		if cur >= st || d.life.CompareAndSwap(cur, st) {
			return
		}
	}
}

// Close stops intake (later submits get ErrClosed), lets every accepted
// request finish and returns once every goroutine the dispatcher started has
// exited. If ctx ends first, requests that have not started are answered
// with an error wrapping both ErrClosed and ctx's error, Close returns
// ctx.Err(), and running tasks finish in the background (Done tells when).
// Close is idempotent and safe to call concurrently with anything.
func (d *Dispatcher) Close(ctx context.Context) error {
	if ctx == nil {
		return ErrNilContext
	}
	if !d.made() {
		return ErrNotStarted
	}
	d.closeOnce.Do(func() {
		close(d.closing) // a Go waiting for its group's Limit returns ErrClosed
		d.eng.fence()
		d.eng.kick()
	})
	select {
	case <-d.stopped:
		return nil
	case <-ctx.Done():
	}
	// Prefer success when both happened.
	select {
	case <-d.stopped:
		return nil
	default:
	}
	d.abandonOnce.Do(func() {
		d.abandon = fmt.Errorf("%w: %w", ErrClosed, ctx.Err())
		d.advance(lifeAbandoning)
		d.eng.kick()
	})
	return ctx.Err()
}

// Done is closed once the dispatcher has stopped and every goroutine it
// started has exited.
func (d *Dispatcher) Done() <-chan struct{} {
	if !d.made() {
		return closedChan
	}
	return d.stopped
}

// closedChan is what Done returns for a Dispatcher not made by New: there
// is nothing to wait for.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// observe acts on a lifecycle change: draining needs nothing but the
// engine's exit test; abandoning answers everything not yet running.
func (d *Dispatcher) observe() {
	b := &d.b
	st := d.life.Load()
	if st == b.seen {
		return
	}
	was := b.seen
	b.seen = st
	if st >= lifeAbandoning && was < lifeAbandoning {
		d.abandonQueued()
	}
}

// abandonQueued answers, without running them, the requests Close gave up
// on: the held one, those queued at workers and the intake's. The engine's
// own backlog, if any, is answered by the engine.
func (d *Dispatcher) abandonQueued() {
	b := &d.b
	if b.held != nil {
		b.answered++
		d.replyErrB(b.held, d.abandon)
		b.held = nil
	}
	// Requests queued at workers would otherwise wait for (maybe never)
	// the task running ahead of them: take them back and count each as
	// completed, so pending, room and the strategy stay consistent.
	for i := range b.w {
		for b.w[i].pending > 0 {
			r, ok := b.ws.takeBack(i)
			if !ok {
				break
			}
			d.finished(r) // its tenant's and class's count, as a worker would
			d.replyErrB(r, d.abandon)
			b.complete(i, 1)
		}
	}
	for _, r := range b.sched.takeAll() {
		b.flow(r).queued--
		b.answered++
		d.replyErrB(r, d.abandon)
	}
	for _, r := range d.eng.takeIntake() {
		b.answered++
		d.replyErrB(r, d.abandon)
	}
}

// stop ends the balancer: every worker stops, the last completions are
// counted, and the final snapshot is kept for Stats.
func (d *Dispatcher) stop() {
	d.b.ws.stop()
	(*port)(d).reap()
	s := d.snapshot()
	d.final.Store(&s)
	d.life.Store(lifeStopped)
	close(d.stopped)
}
