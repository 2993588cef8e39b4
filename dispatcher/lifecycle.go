package dispatcher

import (
	"context"
	"fmt"
)

// A dispatcher moves open → draining (Close: no new requests, accepted ones
// finish) → abandoning (Close's context ended: requests not started are
// answered with an error) → stopped (every goroutine has exited), never back.

// lifecycle is Dispatcher.life's type.
type lifecycle = int32

const (
	lifeOpen lifecycle = iota
	lifeDraining
	lifeAbandoning
	lifeStopped
)

// closedChan is what Done returns for a Dispatcher not made by New: there
// is nothing to wait for.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// advance moves the lifecycle forward to st (never back).
func (d *Dispatcher[R]) advance(st lifecycle) {
	for {
		cur := d.life.Load()
		if cur >= st || d.life.CompareAndSwap(cur, st) {
			return
		}
	}
}

// Done is closed once the dispatcher has stopped and every goroutine it
// started has exited.
func (d *Dispatcher[R]) Done() <-chan struct{} {
	if !d.made() {
		return closedChan
	}
	return d.stopped
}

// Close stops intake (later submits get ErrClosed), lets every accepted
// request finish and returns once every goroutine the dispatcher started has
// exited. If ctx ends first, requests that have not started are answered
// with an error wrapping both ErrClosed and ctx's error, Close returns
// ctx.Err(), and running tasks finish in the background (Done tells when).
// Close is idempotent and safe to call concurrently with anything.
func (d *Dispatcher[R]) Close(ctx context.Context) error {
	if ctx == nil {
		return ErrNilContext
	}
	if !d.made() {
		return ErrNotStarted
	}
	d.closeOnce.Do(func() {
		if d.chans != nil {
			d.chans.fenceIntake()
		} else {
			// The intake's lock is the fence: no submitter is between its
			// lifecycle check and its append once the state moves under it.
			d.in.mu.Lock()
			d.advance(lifeDraining)
			d.in.wakeAll() // blocked submitters return ErrClosed
			d.in.mu.Unlock()
		}
		d.wakeBalancer()
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
		d.wakeBalancer()
	})
	return ctx.Err()
}
