package dispatcher

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The channel engine's line, driven by hand: no balancer runs; the test
// plays it by receiving from the request channel and calling offer.
// synctest.Wait makes each step deterministic.

func lineChannels(capacity int) *channels[int] {
	return &channels[int]{
		d:       &Dispatcher[int]{},
		reqs:    make(chan *request[int], capacity),
		closing: make(chan struct{}),
	}
}

func chanSubmit(e *channels[int], ctx context.Context, r *request[int]) *lineResult {
	res := &lineResult{}
	go func() {
		res.err = e.enqueue(ctx, r, true)
		res.done = true
	}()
	return res
}

// Submitters that find the channel full wait in line and get in first in
// line first, one per slot the balancer frees.
func TestChannelLineFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := lineChannels(1)
		e.reqs <- &request[int]{}
		rs := make([]*request[int], 3)
		ws := make([]*lineResult, 3)
		for i := range rs {
			rs[i] = &request[int]{}
			ws[i] = chanSubmit(e, t.Context(), rs[i])
			synctest.Wait()
		}
		require.Equal(t, int32(3), e.line.waiting.Load())
		require.Equal(t, 3, int(e.blocked.Load()))
		for i := range rs {
			<-e.reqs // the balancer takes one: room for one
			e.offer()
			synctest.Wait()
			require.True(t, ws[i].done, "waiter %d", i)
			require.NoError(t, ws[i].err)
			require.Same(t, rs[i], <-e.reqs)
			e.reqs <- &request[int]{} // full again
			for _, w := range ws[i+1:] {
				require.False(t, w.done)
			}
		}
		assert.Zero(t, e.line.waiting.Load())
		assert.Zero(t, e.line.offered.Load())
		assert.Zero(t, e.blocked.Load())
	})
}

// A waiter whose token a newcomer took keeps its place at the front.
func TestChannelLineStolenTokenKeepsFront(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := lineChannels(1)
		e.reqs <- &request[int]{}
		r1, r2 := &request[int]{}, &request[int]{}
		w1 := chanSubmit(e, t.Context(), r1)
		synctest.Wait()
		w2 := chanSubmit(e, t.Context(), r2)
		synctest.Wait()

		// The balancer offered w1 room a newcomer filled before w1 ran
		// (played by hand: the channel stays full while w1 holds its
		// token, so the newcomer's send and w1's cannot race in the test).
		e.line.mu.Lock()
		ch := e.line.waitq.popFront()
		e.line.waiting.Add(-1)
		e.line.offered.Add(1)
		ch <- struct{}{}
		e.line.mu.Unlock()
		synctest.Wait()
		require.False(t, w1.done || w2.done)
		require.Equal(t, int32(2), e.line.waiting.Load())
		require.Zero(t, e.line.offered.Load())

		<-e.reqs
		e.offer()
		synctest.Wait()
		require.True(t, w1.done, "the first in line gets the next slot")
		require.False(t, w2.done)
		require.Same(t, r1, <-e.reqs)
		e.offer()
		synctest.Wait()
		require.True(t, w2.done)
		require.Same(t, r2, <-e.reqs)
	})
}

// A waiter whose context ends leaves the line; one cancelled after it was
// offered room passes the room on to the next.
func TestChannelLineCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := lineChannels(1)
		e.reqs <- &request[int]{}
		ctx1, cancel1 := context.WithCancel(t.Context())
		ctx2, cancel2 := context.WithCancel(t.Context())
		r3 := &request[int]{}
		w1 := chanSubmit(e, ctx1, &request[int]{})
		synctest.Wait()
		w2 := chanSubmit(e, ctx2, &request[int]{})
		synctest.Wait()
		w3 := chanSubmit(e, t.Context(), r3)
		synctest.Wait()

		cancel2() // in the middle of the line
		synctest.Wait()
		require.True(t, w2.done)
		require.ErrorIs(t, w2.err, context.Canceled)
		require.Equal(t, int32(2), e.line.waiting.Load())

		e.line.mu.Lock()
		cancel1() // wakes on its context, then waits for the lock
		<-e.reqs
		e.offerLocked() // the room goes to w1 all the same
		e.line.mu.Unlock()
		synctest.Wait()
		// w1 was woken by its context before the token came (the select
		// case is chosen at the wake-up), so it leaves and passes the
		// token on to w3, the next in line.
		require.True(t, w1.done)
		require.ErrorIs(t, w1.err, context.Canceled)
		require.True(t, w3.done)
		require.NoError(t, w3.err)
		require.Same(t, r3, <-e.reqs)
		assert.Zero(t, e.line.waiting.Load())
		assert.Zero(t, e.line.offered.Load())
	})
}

// Close wakes every waiter with ErrClosed, and nothing they held gets in.
func TestChannelLineClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := lineChannels(1)
		e.reqs <- &request[int]{}
		ws := make([]*lineResult, 4)
		for i := range ws {
			ws[i] = chanSubmit(e, t.Context(), &request[int]{})
		}
		synctest.Wait()
		<-e.reqs // room that nobody may take once Close has begun
		e.fence()
		synctest.Wait()
		for i, w := range ws {
			require.True(t, w.done, "waiter %d", i)
			require.ErrorIs(t, w.err, ErrClosed)
		}
		require.Zero(t, len(e.reqs))
		require.ErrorIs(t, e.enqueue(t.Context(), &request[int]{}, true), ErrClosed)
	})
}

// Many submitters through a tiny channel, some cancelled, then Close:
// every submit either got in (and is received once) or returned an error.
func TestChannelLineStress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := lineChannels(2)
		const n = 300
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var wg sync.WaitGroup
		var mu sync.Mutex
		in := map[*request[int]]bool{}
		for i := range n {
			wg.Go(func() {
				c := t.Context()
				if i%3 == 0 {
					c = ctx
				}
				r := &request[int]{}
				if e.enqueue(c, r, true) == nil {
					mu.Lock()
					in[r] = true
					mu.Unlock()
				}
			})
		}
		got := map[*request[int]]bool{}
		for k := 0; k < n/2; k++ {
			synctest.Wait()
			r := <-e.reqs
			require.False(t, got[r])
			got[r] = true
			e.offer()
			if k == n/4 {
				cancel()
			}
		}
		e.fence()
		wg.Wait()
		for len(e.reqs) > 0 {
			got[<-e.reqs] = true
		}
		require.Equal(t, in, got)
		assert.Zero(t, e.line.waiting.Load())
	})
}
