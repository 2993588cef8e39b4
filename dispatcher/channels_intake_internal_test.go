package dispatcher

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The channel engine's buffered intake, driven by hand: no balancer runs;
// the test plays it by receiving runs, marking what it took and settling.
// synctest.Wait makes each step deterministic.

func runsChannels(capacity int) *channels {
	d := &Dispatcher{book: newTenantBook()}
	d.b.book, d.b.sched = d.book, new(fifo)
	return newChannels(d, capacity, 1)
}

// fullRuns is runsChannels(capacity) with its buffer full: capacity
// requests accepted, received by the balancer and not yet sent on.
func fullRuns(t *testing.T, capacity int) *channels {
	t.Helper()
	e := runsChannels(capacity)
	for range capacity {
		require.NoError(t, e.enqueue(t.Context(), &request{}, false))
	}
	e.receive(<-e.runs)
	return e
}

// takeAll plays a balancer that hands out everything its schedule holds
// to workers.
func (e *channels) takeAll() []*request {
	b := &e.d.b
	var q []*request
	for r := b.sched.pop(); r != nil; r = b.sched.pop() {
		b.flow(r).queued--
		q = append(q, r)
	}
	b.dispatched += int64(len(q))
	return q
}

// intakeEmpty reports whether nothing waits in the intake.
func (e *channels) intakeEmpty() bool {
	q, _ := e.intake()
	return q == 0
}

// The first request is a run of its own; those that arrive while it is on
// its way join the next run, in order, and the balancer's receive sweeps
// them up: three requests, one channel message.
func TestChannelRunsCoalesce(t *testing.T) {
	e := runsChannels(8)
	rs := []*request{{}, {}, {}}
	for _, r := range rs {
		require.NoError(t, e.enqueue(t.Context(), r, false))
	}
	require.Len(t, e.runs, 1, "one run on its way")
	q := <-e.runs
	require.Equal(t, rs[:1], q)
	e.receive(q)
	assert.Equal(t, rs, e.takeAll(), "the staged requests follow the run, in order")
	assert.False(t, e.sending)
	queued, _ := e.intake()
	assert.Zero(t, queued)

	// The next request starts a new run at once.
	r := &request{}
	require.NoError(t, e.enqueue(t.Context(), r, false))
	require.Equal(t, []*request{r}, <-e.runs)
}

// The buffer counts what is staged, on its way and in the balancer's
// backlog: beyond it a TrySubmit is refused and a blocking submit waits in
// line until the balancer has taken requests and settles.
func TestChannelRunsBufferBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := runsChannels(2)
		require.NoError(t, e.enqueue(t.Context(), &request{}, false))
		require.NoError(t, e.enqueue(t.Context(), &request{}, false))
		require.ErrorIs(t, e.enqueue(t.Context(), &request{}, false), ErrBusy)
		e.receive(<-e.runs) // received, not taken: still counted
		require.ErrorIs(t, e.enqueue(t.Context(), &request{}, false), ErrBusy)

		r := &request{}
		w := lineSubmit(e, t.Context(), r)
		synctest.Wait()
		require.False(t, w.done)
		_, blocked := e.intake()
		require.Equal(t, 1, blocked)

		e.takeAll()
		e.settle(true)
		synctest.Wait()
		require.True(t, w.done)
		require.NoError(t, w.err)
		require.Equal(t, []*request{r}, <-e.runs)
	})
}

// Until half the buffer is free, a busy balancer does not wake a waiter;
// one about to park does.
func TestChannelRunsHysteresis(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := fullRuns(t, 4)
		w := lineSubmit(e, t.Context(), &request{})
		synctest.Wait()
		e.d.b.dispatched++ // one of four sent to a worker
		e.settle(false)
		synctest.Wait()
		require.False(t, w.done, "one free slot of four: no wake-up yet")
		e.settle(true)
		synctest.Wait()
		require.True(t, w.done)
		require.NoError(t, w.err)
	})
}

// Close wakes every waiter with ErrClosed; the abandon gets back every
// request accepted: the backlog, the run on its way and the staged ones.
func TestChannelRunsClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := runsChannels(3)
		rs := []*request{{}, {}, {}}
		require.NoError(t, e.enqueue(t.Context(), rs[0], false))
		e.receive(<-e.runs) // rs[0] in the schedule
		require.NoError(t, e.enqueue(t.Context(), rs[1], false))
		require.NoError(t, e.enqueue(t.Context(), rs[2], false)) // staged behind rs[1]'s run
		ws := make([]*lineResult, 3)
		for i := range ws {
			ws[i] = lineSubmit(e, t.Context(), &request{})
		}
		synctest.Wait()
		e.fence()
		synctest.Wait()
		for i, w := range ws {
			require.True(t, w.done, "waiter %d", i)
			require.ErrorIs(t, w.err, ErrClosed)
		}
		require.ErrorIs(t, e.enqueue(t.Context(), &request{}, true), ErrClosed)
		require.False(t, e.intakeEmpty())
		assert.ElementsMatch(t, rs[1:], e.takeIntake(), "the run on its way and what is staged")
		assert.True(t, e.intakeEmpty())
		assert.Empty(t, e.runs)
		assert.Equal(t, rs[:1], e.takeAll(), "the one received is in the schedule")
	})
}

// Many submitters through a tiny buffer, some cancelled, a balancer that
// receives and settles, then Close: every submit either got in (and is
// taken exactly once) or returned an error.
func TestChannelRunsStress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := runsChannels(3)
		const n = 300
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var wg sync.WaitGroup
		var mu sync.Mutex
		in := map[*request]bool{}
		for i := range n {
			wg.Go(func() {
				c := t.Context()
				if i%3 == 0 {
					c = ctx
				}
				r := &request{}
				if e.enqueue(c, r, true) == nil {
					mu.Lock()
					in[r] = true
					mu.Unlock()
				}
			})
		}
		got := map[*request]bool{}
		take := func() {
			for _, r := range e.takeAll() {
				require.False(t, got[r], "taken twice")
				got[r] = true
			}
		}
		for k := 0; k < n/4; k++ {
			synctest.Wait()
			select {
			case q := <-e.runs:
				e.receive(q)
			default:
			}
			take()
			e.settle(k%2 == 0)
			if k == n/8 {
				cancel()
			}
		}
		e.fence()
		wg.Wait()
		for _, r := range e.takeIntake() {
			got[r] = true
		}
		require.Equal(t, in, got)
		assert.Zero(t, e.in.waitq.n)
	})
}

// A newcomer may take room nobody was offered yet, but not room offered
// to a submitter in line: once the balancer offers (at half the buffer,
// or before it parks), the waiter gets in whatever newcomers do.
func TestChannelRunsOfferedRoomIsTheWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := fullRuns(t, 4)
		r := &request{}
		w := lineSubmit(e, t.Context(), r)
		synctest.Wait()
		e.d.b.dispatched += 2 // half the buffer free: the balancer offers
		e.in.mu.Lock()
		e.settleLocked(e.p.left())
		require.Equal(t, 1, e.in.offered, "one waiter, one offer")
		// A newcomer arriving between the offer and the waiter's wake-up
		// takes the room nobody was offered, not the waiter's.
		e.in.mu.Unlock()
		require.NoError(t, e.enqueue(t.Context(), &request{}, false))
		require.ErrorIs(t, e.enqueue(t.Context(), &request{}, false), ErrBusy, "the last room is offered")
		synctest.Wait()
		require.True(t, w.done)
		require.NoError(t, w.err)
		e.receive(<-e.runs) // the newcomer's and the waiter's requests, in whichever order they ran
		q := e.takeAll()
		require.Len(t, q, 6, "the four received before, then these two")
		require.Contains(t, q[4:], r)
	})
}

// The Go requests the balancer collected reach the spare list at its next
// settle on either kind of intake, busy or not: on the unbuffered one too,
// where nothing else takes the intake's lock on the balancer's side.
func TestChannelSettleRefillsSpares(t *testing.T) {
	for _, capacity := range []int{0, 4} {
		d := &Dispatcher{book: newTenantBook()}
		d.b.book, d.b.sched = d.book, new(fifo)
		var in *intake
		var settle func()
		if capacity == 0 {
			e := newPike(d, 1)
			in, settle = &e.in, e.settle
		} else {
			e := newChannels(d, capacity, 1)
			in, settle = &e.in, func() { e.settle(false) }
		}
		sp := &d.b.spares
		sp.most = 8
		for range 3 {
			sp.free = append(sp.free, &request{async: true})
		}
		settle()
		assert.Empty(t, sp.free, "capacity %d", capacity)
		assert.Len(t, in.spare, 3, "capacity %d", capacity)
	}
}

// Newcomers that keep the buffer over half full do not keep a waiter out:
// once half a buffer of them passed the line, the busy balancer offers at
// its next settle.
func TestChannelRunsWaiterNotPassedForEver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := fullRuns(t, 4)
		w := lineSubmit(e, t.Context(), &request{})
		synctest.Wait()
		passed := 0
		for range 1000 {
			e.d.b.dispatched++ // a request sent to a worker: room for one, n 3 of 4
			e.settle(false)
			synctest.Wait()
			if w.done {
				break
			}
			require.NoError(t, e.enqueue(t.Context(), &request{}, false), "room nobody was offered")
			passed++
		}
		require.True(t, w.done, "passed by %d newcomers", passed)
		require.NoError(t, w.err)
		assert.LessOrEqual(t, passed, 2, "half a buffer of newcomers at most")
	})
}
