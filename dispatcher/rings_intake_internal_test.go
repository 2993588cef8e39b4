package dispatcher

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
)

// The line of blocked submitters, driven by hand: no balancer runs (state
// stays running, so kick is a no-op); the test plays the balancer
// by changing n and calling offer under mu. synctest.Wait makes every
// interleaving below deterministic: a submitter blocked in its select is
// durably blocked, and a cancel or a token readies it with that case.

// fullIntake returns a dispatcher (no balancer) whose intake of cap 1 is
// full, with n1 and n2 waiting in line in that order.
func fullIntake(t *testing.T, ctx1, ctx2 context.Context) (e *rings, r1, r2 *request, w1, w2 *lineResult) {
	t.Helper()
	e = &rings{d: &Dispatcher{}, wake: make(chan struct{}, 1)}
	e.in.cap, e.in.n = 1, 1
	r1, r2 = &request{}, &request{}
	w1 = lineSubmit(e, ctx1, r1)
	synctest.Wait()
	w2 = lineSubmit(e, ctx2, r2)
	synctest.Wait()
	require.Equal(t, 2, e.in.waitq.n)
	require.False(t, w1.done || w2.done)
	return
}

// A submitter whose context ends after it was readied by the cancel but
// before it took the lock, while the balancer offers it the room: it takes
// the token and passes the offer to the next in line, which gets in.
func TestLineCancelledWhileOfferedPassesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx1, cancel1 := context.WithCancel(t.Context())
		e, _, r2, w1, w2 := fullIntake(t, ctx1, t.Context())

		e.in.mu.Lock()
		cancel1()    // w1 wakes on its context, blocks on mu
		e.in.n = 0   // the balancer sent the request that filled the intake
		e.in.offer() // the room goes to w1, first in line
		require.Equal(t, 1, e.in.offered)
		require.Equal(t, 1, e.in.waitq.n)
		e.in.mu.Unlock()
		synctest.Wait()

		require.True(t, w1.done)
		require.ErrorIs(t, w1.err, context.Canceled)
		require.True(t, w2.done, "the offer made to a cancelled submitter was lost")
		require.NoError(t, w2.err)
		require.Equal(t, []*request{r2}, e.in.q)
		require.Equal(t, 1, e.in.n)
		require.Zero(t, e.in.offered)
		require.Zero(t, e.in.waitq.n)
	})
}

// A submitter offered the room that someone else took first goes back to
// the front of the line, and the next offer is its.
func TestLineOfferedKeepsItsPlace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, r1, _, w1, w2 := fullIntake(t, t.Context(), t.Context())

		e.in.mu.Lock()
		e.in.n = 0
		e.in.offer()
		e.in.n = 1 // a new submitter took the room before w1 got the lock
		e.in.mu.Unlock()
		synctest.Wait()
		require.False(t, w1.done || w2.done)
		require.Equal(t, 2, e.in.waitq.n)
		require.Zero(t, e.in.offered)

		e.in.mu.Lock()
		e.in.n = 0
		e.in.offer()
		e.in.mu.Unlock()
		synctest.Wait()
		require.True(t, w1.done, "the first in line lost its place")
		require.NoError(t, w1.err)
		require.False(t, w2.done)
		require.Equal(t, []*request{r1}, e.in.q)

		// Close wakes the rest; they are refused.
		e.in.mu.Lock()
		e.d.life.Store(lifeDraining)
		e.in.wakeAll()
		e.in.mu.Unlock()
		synctest.Wait()
		require.True(t, w2.done)
		require.ErrorIs(t, w2.err, ErrClosed)
		require.Zero(t, e.in.offered)
	})
}

// Close while one submitter holds an offer it has not acted on and another
// waits in line: both are refused, nothing is accepted, no offer is left
// counted.
func TestLineCloseRacesOffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _, _, w1, w2 := fullIntake(t, t.Context(), t.Context())

		e.in.mu.Lock()
		e.in.n = 0
		e.in.offer()
		e.d.life.Store(lifeDraining)
		e.in.wakeAll()
		require.Equal(t, 2, e.in.offered)
		e.in.mu.Unlock()
		synctest.Wait()

		require.True(t, w1.done && w2.done)
		require.ErrorIs(t, w1.err, ErrClosed)
		require.ErrorIs(t, w2.err, ErrClosed)
		require.Empty(t, e.in.q)
		require.Zero(t, e.in.n)
		require.Zero(t, e.in.offered)
		require.Zero(t, e.in.waitq.n)
	})
}
