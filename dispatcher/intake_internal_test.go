package dispatcher

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
)

// The line of blocked submitters, driven by hand: no balancer runs (state
// stays running, so wakeBalancer is a no-op); the test plays the balancer
// by changing n and calling offer under mu. synctest.Wait makes every
// interleaving below deterministic: a submitter blocked in its select is
// durably blocked, and a cancel or a token readies it with that case.

type lineResult struct {
	err  error
	done bool
}

// lineSubmit starts a blocking enqueue of r and returns where its result
// lands once it returns.
func lineSubmit(d *Dispatcher[int], ctx context.Context, r *request[int]) *lineResult {
	res := &lineResult{}
	go func() {
		res.err = d.enqueue(ctx, r, true)
		res.done = true
	}()
	return res
}

// fullIntake returns a dispatcher (no balancer) whose intake of cap 1 is
// full, with n1 and n2 waiting in line in that order.
func fullIntake(t *testing.T, ctx1, ctx2 context.Context) (d *Dispatcher[int], r1, r2 *request[int], w1, w2 *lineResult) {
	t.Helper()
	d = &Dispatcher[int]{wake: make(chan struct{}, 1)}
	d.in.cap, d.in.n = 1, 1
	r1, r2 = &request[int]{}, &request[int]{}
	w1 = lineSubmit(d, ctx1, r1)
	synctest.Wait()
	w2 = lineSubmit(d, ctx2, r2)
	synctest.Wait()
	require.Len(t, d.in.waitq, 2)
	require.False(t, w1.done || w2.done)
	return
}

// A submitter whose context ends after it was readied by the cancel but
// before it took the lock, while the balancer offers it the room: it takes
// the token and passes the offer to the next in line, which gets in.
func TestLineCancelledWhileOfferedPassesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx1, cancel1 := context.WithCancel(t.Context())
		d, _, r2, w1, w2 := fullIntake(t, ctx1, t.Context())

		d.in.mu.Lock()
		cancel1()    // w1 wakes on its context, blocks on mu
		d.in.n = 0   // the balancer sent the request that filled the intake
		d.in.offer() // the room goes to w1, first in line
		require.Equal(t, 1, d.in.offered)
		require.Len(t, d.in.waitq, 1)
		d.in.mu.Unlock()
		synctest.Wait()

		require.True(t, w1.done)
		require.ErrorIs(t, w1.err, context.Canceled)
		require.True(t, w2.done, "the offer made to a cancelled submitter was lost")
		require.NoError(t, w2.err)
		require.Equal(t, []*request[int]{r2}, d.in.q)
		require.Equal(t, 1, d.in.n)
		require.Zero(t, d.in.offered)
		require.Empty(t, d.in.waitq)
	})
}

// A submitter offered the room that someone else took first goes back to
// the front of the line, and the next offer is its.
func TestLineOfferedKeepsItsPlace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, r1, _, w1, w2 := fullIntake(t, t.Context(), t.Context())

		d.in.mu.Lock()
		d.in.n = 0
		d.in.offer()
		d.in.n = 1 // a new submitter took the room before w1 got the lock
		d.in.mu.Unlock()
		synctest.Wait()
		require.False(t, w1.done || w2.done)
		require.Len(t, d.in.waitq, 2)
		require.Zero(t, d.in.offered)

		d.in.mu.Lock()
		d.in.n = 0
		d.in.offer()
		d.in.mu.Unlock()
		synctest.Wait()
		require.True(t, w1.done, "the first in line lost its place")
		require.NoError(t, w1.err)
		require.False(t, w2.done)
		require.Equal(t, []*request[int]{r1}, d.in.q)

		// Close wakes the rest; they are refused.
		d.in.mu.Lock()
		d.life.Store(lifeDraining)
		d.in.wakeAll()
		d.in.mu.Unlock()
		synctest.Wait()
		require.True(t, w2.done)
		require.ErrorIs(t, w2.err, ErrClosed)
		require.Zero(t, d.in.offered)
	})
}

// Close while one submitter holds an offer it has not acted on and another
// waits in line: both are refused, nothing is accepted, no offer is left
// counted.
func TestLineCloseRacesOffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, _, _, w1, w2 := fullIntake(t, t.Context(), t.Context())

		d.in.mu.Lock()
		d.in.n = 0
		d.in.offer()
		d.life.Store(lifeDraining)
		d.in.wakeAll()
		require.Equal(t, 2, d.in.offered)
		d.in.mu.Unlock()
		synctest.Wait()

		require.True(t, w1.done && w2.done)
		require.ErrorIs(t, w1.err, ErrClosed)
		require.ErrorIs(t, w2.err, ErrClosed)
		require.Empty(t, d.in.q)
		require.Zero(t, d.in.n)
		require.Zero(t, d.in.offered)
		require.Empty(t, d.in.waitq)
	})
}
