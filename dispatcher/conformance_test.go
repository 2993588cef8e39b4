package dispatcher_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
	"github.com/gobalancer/balancer/strategies"
)

// TestStrategyConformance: every registered strategy keeps the
// dispatcher's promises on both engines, not only the two that the larger
// tests use. The cells are small: they look for a strategy whose picks
// break the balancer (a lost or doubled request, a deadlock at the
// tightest buffers, a drained worker that is still fed), not for load.
func TestStrategyConformance(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		for _, strategy := range strategies.Names() {
			t.Run("strategy="+strategy, func(t *testing.T) {
				opts := []dispatcher.Option{dispatcher.WithEngine(eng), dispatcher.WithStrategyName(strategy)}
				t.Run("exactly-once", func(t *testing.T) { conformExactlyOnce(t, opts) })
				t.Run("rendezvous", func(t *testing.T) { conformRendezvous(t, opts) })
				t.Run("drain", func(t *testing.T) {
					s, err := strategies.New(strategy, []int{1})
					require.NoError(t, err)
					if _, dynamic := s.(strategies.Dynamic); !dynamic {
						// No weights to change: the promise is the refusal.
						d := newDispatcher(t, opts...)
						require.ErrorIs(t, d.SetWeight(0, 0), dispatcher.ErrNotDynamic)
						return
					}
					conformDrain(t, opts)
				})
			})
		}
	})
}

const conformBound = 10 * time.Second

// conformExactlyOnce: keyed requesters (so affinity strategies spread them)
// mix Do and Submit; every request runs once and is answered once with its
// own value.
func conformExactlyOnce(t *testing.T, opts []dispatcher.Option) {
	const requesters, per = 8, 40
	d := newDispatcher(t, append(opts, dispatcher.WithWorkers(3), dispatcher.WithWorkerBuffer(2))...)
	runs := make([]atomic.Int32, requesters*per)
	answers := make([]atomic.Int32, requesters*per)
	within(t, conformBound, "requesters", func() {
		var wg sync.WaitGroup
		for g := range requesters {
			k := d.Key(uint64(g))
			wg.Go(func() {
				for j := range per {
					id := g*per + j
					task := func(context.Context) (int, error) { runs[id].Add(1); return id, nil }
					var v int
					var err error
					if j%2 == 0 {
						v, err = k.Do(context.Background(), task)
					} else {
						var f *dispatcher.Future[int]
						if f, err = k.Submit(context.Background(), task); err == nil {
							v, err = f.Wait(context.Background())
						}
					}
					if errors.Is(err, dispatcher.ErrClosed) {
						return // the bound failed the test and its cleanup closed d
					}
					if assert.NoError(t, err) && assert.Equal(t, id, v) {
						answers[id].Add(1)
					}
				}
			})
		}
		wg.Wait()
	})
	for id := range runs {
		require.Equal(t, int32(1), runs[id].Load(), "request %d runs", id)
		require.Equal(t, int32(1), answers[id].Load(), "request %d answers", id)
	}
	closeWithin(t, d, conformBound)
	s := d.Stats()
	require.Equal(t, int64(requesters*per), s.Completed)
	require.Equal(t, s.Dispatched, s.Completed)
}

// conformRendezvous: worker buffer 0 and intake 0 with four times as many
// closed-loop requesters as workers, the tightest buffers, where a pick of
// a busy worker must hold the balancer without wedging it.
func conformRendezvous(t *testing.T, opts []dispatcher.Option) {
	const workers, requesters, per = 2, 8, 25
	d := newDispatcher(t, append(opts, dispatcher.WithWorkers(workers), dispatcher.WithWorkerBuffer(0), dispatcher.WithIntakeBuffer(0))...)
	var answered atomic.Int64
	within(t, conformBound, "requesters at buffer 0, intake 0", func() {
		requestLoop(t, d, requesters, per, &answered)
	})
	require.Equal(t, int64(requesters*per), answered.Load())
	closeWithin(t, d, conformBound)
	require.Zero(t, d.Stats().Pending)
}

// conformDrain: worker 0 starts as the only weighted worker, so it
// provably holds a blocked task and a full queue behind it; the others are
// weighted in, requesters flow, and SetWeight(0, 0) is called while
// worker 0 is still full. Nothing can reach it between the change and the
// release of its blocker, so every request it completes beyond those it
// held at the change was sent to it after SetWeight returned.
func conformDrain(t *testing.T, opts []dispatcher.Option) {
	const buffer, requesters, per = 2, 6, 30
	const depth = buffer + 1
	d := newDispatcher(t, append(opts, dispatcher.WithWeights(1, 0, 0), dispatcher.WithWorkerBuffer(buffer))...)
	release := make(chan struct{})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(unblock) // before the dispatcher's Close, also on failure

	var queued []*dispatcher.Future[int]
	for i := range depth {
		task := ok(-1 - i)
		if i == 0 {
			task = blocker(release)
		}
		f, err := d.Submit(context.Background(), task)
		require.NoError(t, err)
		queued = append(queued, f)
	}
	if !assert.Eventually(t, func() bool { return d.Stats().Workers[0].Pending == depth }, conformBound, time.Millisecond) {
		t.Fatalf("worker 0 never filled: %+v", d.Stats())
	}
	require.NoError(t, d.SetWeight(1, 1))
	require.NoError(t, d.SetWeight(2, 1))

	var answered atomic.Int64
	flowing := make(chan struct{})
	go func() {
		defer close(flowing)
		requestLoop(t, d, requesters, per, &answered)
	}()
	// Let requests flow before the change; a strategy that picks the full
	// worker 0 holds the balancer, so a held request also counts as flow.
	require.Eventually(t, func() bool { return answered.Load() >= 20 || d.Stats().Held }, conformBound, time.Millisecond)

	require.NoError(t, d.SetWeight(0, 0))
	at := d.Stats()
	require.Equal(t, depth, at.Workers[0].Pending, "worker 0 is still full at the change")
	require.Zero(t, at.Workers[0].Completed)
	unblock()

	within(t, conformBound, "requesters after the drain", func() { <-flowing })
	require.Equal(t, int64(requesters*per), answered.Load())
	for i, f := range queued {
		v, err := waitFuture(t, f, conformBound)
		require.NoError(t, err)
		require.Equal(t, -1-i, v)
	}
	require.Eventually(t, func() bool { return d.Stats().Workers[0].Pending == 0 }, conformBound, time.Millisecond, "the drained worker's pending reaches 0")
	w := d.Stats().Workers[0]
	require.Equal(t, 0, w.Weight)
	require.Equal(t, int64(depth), w.Completed,
		"worker 0 completed %d requests sent to it after SetWeight(0, 0) returned (a request was held at the change: %v)",
		w.Completed-int64(depth), at.Held)
}
