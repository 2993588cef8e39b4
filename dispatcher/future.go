package dispatcher

import (
	"context"
	"sync"
	"sync/atomic"
)

// Future is the pending answer of a submitted task.
//
// A Future can be handed back with Release once its answer is no longer
// needed, so a later Submit reuses it instead of allocating one: a loop of
// Submit, Wait and Release allocates nothing.
type Future[R any] struct {
	r request
	typed[R]
	d *Dispatcher // whose pool Release returns the Future to

	// The answer is a token in r.done (capacity 1) that every Wait takes
	// and puts back, so Waits need no channel of their own and a reused
	// Future no new one. Done's channel, which must be closed to reach
	// every select, is made only when Done is called.
	state atomic.Uint32 // futureAnswered | futureReleased | futureHasCh | futurePooled
	mu    sync.Mutex    // serialises Done's callers
	ch    chan struct{} // Done's channel; nil until Done is called
}

// A Future's state bits. Whoever sets answered or released second
// recycles a released Future; whoever sets answered or hasCh second
// closes Done's channel.
const (
	futureAnswered uint32 = 1 << iota // res and err are set; the token follows
	futureReleased                    // Release was called
	futureHasCh                       // ch is set
	futurePooled                      // in the pool: Release is a no-op
)

// futurePool returns d's pool of Futures of result type R.
func futurePool[R any](d *Dispatcher) *sync.Pool {
	if p, ok := poolOf[R, Future[R]](d); ok {
		return p
	}
	return addPool[R, Future[R]](d, func() any {
		f := &Future[R]{d: d}
		f.r.done = make(chan struct{}, 1)
		f.r.fut = f
		return f
	})
}

// answer publishes r's answer (res and err are set) on the worker that
// ran it. answered is set before the token goes in, so whoever sees the
// token (Wait) also sees answered (Done); a Release that sees answered
// waits for the token, which is the worker's last touch of f.
func (f *Future[R]) answer() {
	old := f.state.Or(futureAnswered)
	if old&futureReleased != 0 {
		f.putBack()
		return
	}
	if old&futureHasCh != 0 {
		close(f.ch)
	}
	f.r.done <- struct{}{} // the first and only token: never blocks
}

// Done returns a channel that is closed when the answer is ready. The
// first call on a Future allocates the channel.
func (f *Future[R]) Done() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ch == nil {
		f.ch = make(chan struct{})
		if f.state.Or(futureHasCh)&futureAnswered != 0 {
			close(f.ch)
		}
	}
	return f.ch
}

// Wait returns the task's answer, or ctx's error if ctx ends first (the
// task is not cancelled by that; Wait may be called again), or
// ErrNilContext for a nil ctx. Any number of goroutines may Wait at once.
func (f *Future[R]) Wait(ctx context.Context) (R, error) {
	if ctx == nil {
		var zero R
		return zero, ErrNilContext
	}
	select {
	case <-f.r.done:
		f.r.done <- struct{}{} // for the next Wait: never blocks, one token
		return f.res, f.r.err
	case <-ctx.Done():
		if f.state.Load()&futureAnswered != 0 {
			// Answered, the token held by another Wait for a moment: the
			// answer is ready, so it wins over the context.
			<-f.r.done
			f.r.done <- struct{}{}
			return f.res, f.r.err
		}
		var zero R
		return zero, ctx.Err()
	}
}

// Release hands f back for a later Submit to reuse, and must be f's last
// use: after it, neither f nor the channel Done returned may be used, by
// any goroutine (f may by then be another task's Future). Releasing a
// Future whose task has not finished is allowed: the task still runs, and
// its answer is dropped, and a channel Done returned before is then never
// closed (nobody may wait on it any more). A second Release before f is
// reused is a no-op; one after cannot be told from the new owner's, so
// goroutines sharing f must all be done with it before one releases it.
func (f *Future[R]) Release() {
	old := f.state.Or(futureReleased)
	if old&(futureReleased|futurePooled) == 0 && old&futureAnswered != 0 {
		f.recycle()
	}
}

// recycle takes back the answered f's token and puts f in its
// dispatcher's pool.
func (f *Future[R]) recycle() {
	<-f.r.done // the token, which follows answered by a few instructions
	f.putBack()
}

// putBack clears f, which holds no token, and puts it in the pool: a
// Future whose request was never accepted goes straight here.
func (f *Future[R]) putBack() {
	f.clear()
	f.r.ctx, f.r.job, f.r.meta, f.r.err, f.r.ret, f.r.took = nil, nil, meta{}, nil, nil, 0
	f.ch = nil
	f.state.Store(futurePooled)
	futurePool[R](f.d).Put(f)
}
