package dispatcher_test

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
	"github.com/gobalancer/balancer/strategies"
)

// TestContradictoryOptions: every contradiction is refused by New with
// ErrBadOption, naming both options, instead of failing (or crashing) at
// the first request or membership change.
func TestContradictoryOptions(t *testing.T) {
	rr, err := strategies.New("round-robin", strategies.Equal(3))
	require.NoError(t, err)
	var typedNil *fixedStrategy
	for _, tc := range []struct {
		name string
		opts []dispatcher.Option
		says []string
	}{
		{"weights and fewer workers", []dispatcher.Option{dispatcher.WithWeights(1, 2, 3), dispatcher.WithWorkers(1)}, []string{"WithWorkers(1)", "WithWeights"}},
		{"weights and more workers", []dispatcher.Option{dispatcher.WithWeights(1, 2), dispatcher.WithWorkers(5)}, []string{"WithWorkers(5)", "WithWeights"}},
		{"strategy of 3 members, 2 workers", []dispatcher.Option{dispatcher.WithStrategy(rr), dispatcher.WithWorkers(2)}, []string{"3 members", "2 workers"}},
		{"two strategy names", []dispatcher.Option{dispatcher.WithStrategyName("swrr"), dispatcher.WithStrategyName("iwrr")}, []string{"WithStrategyName given twice"}},
		{"strategy and strategy name", []dispatcher.Option{dispatcher.WithStrategy(&fixedStrategy{}), dispatcher.WithStrategyName("swrr")}, []string{"WithStrategy", "WithStrategyName"}},
		{"typed nil strategy", []dispatcher.Option{dispatcher.WithStrategy(typedNil)}, []string{"nil strategy"}},
		{"custom strategy, all weights zero", []dispatcher.Option{dispatcher.WithStrategy(&fixedStrategy{}), dispatcher.WithWeights(0, 0)}, []string{"every weight is zero"}},
		{"worker buffer MaxInt", []dispatcher.Option{dispatcher.WithWorkerBuffer(math.MaxInt)}, []string{"worker buffer"}},
		{"worker buffer 1<<62", []dispatcher.Option{dispatcher.WithWorkerBuffer(min(1<<62, math.MaxInt))}, []string{"worker buffer"}},
		{"worker buffer 1<<40", []dispatcher.Option{dispatcher.WithWorkerBuffer(min(1<<40, math.MaxInt))}, []string{"worker buffer"}},
		{"queues too large together", []dispatcher.Option{dispatcher.WithWorkers(1 << 10), dispatcher.WithWorkerBuffer(1 << 12)}, []string{"MaxBuffer"}},
		{"intake MaxInt", []dispatcher.Option{dispatcher.WithIntakeBuffer(math.MaxInt)}, []string{"intake buffer"}},
		{"completion MaxInt", []dispatcher.Option{dispatcher.WithEngine(dispatcher.Channels), dispatcher.WithCompletionBuffer(math.MaxInt)}, []string{"completion buffer"}},
		{"workers MaxInt", []dispatcher.Option{dispatcher.WithWorkers(math.MaxInt)}, []string{"workers"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d *dispatcher.Dispatcher
			var err error
			within(t, 5*time.Second, "New", func() {
				assert.NotPanics(t, func() { d, err = dispatcher.New(tc.opts...) })
			})
			require.ErrorIs(t, err, dispatcher.ErrBadOption)
			require.Nil(t, d)
			for _, s := range tc.says {
				require.Contains(t, err.Error(), s)
			}
		})
	}
}

// TestZeroValueDispatcher: a Dispatcher not made by New answers
// ErrNotStarted from every method, never a panic or a hang.
func TestZeroValueDispatcher(t *testing.T) {
	ctx := context.Background()
	for name, d := range map[string]*dispatcher.Dispatcher{"zero value": {}, "nil pointer": nil} {
		t.Run(name, func(t *testing.T) {
			within(t, 5*time.Second, "calls on "+name, func() {
				assert.NotPanics(t, func() {
					_, err := dispatcher.Do(ctx, d, ok(1))
					assert.ErrorIs(t, err, dispatcher.ErrNotStarted)
					_, err = dispatcher.Submit(ctx, d, ok(1))
					assert.ErrorIs(t, err, dispatcher.ErrNotStarted)
					_, err = dispatcher.TrySubmit(ctx, d, ok(1))
					assert.ErrorIs(t, err, dispatcher.ErrNotStarted)
					assert.ErrorIs(t, d.Go(ctx, func(ctx context.Context) error { _, err := ok(1)(ctx); return err }), dispatcher.ErrNotStarted)
					assert.ErrorIs(t, d.Key(1).Go(ctx, func(ctx context.Context) error { _, err := ok(1)(ctx); return err }), dispatcher.ErrNotStarted)
					_, err = d.AddWorker(1)
					assert.ErrorIs(t, err, dispatcher.ErrNotStarted)
					assert.ErrorIs(t, d.RemoveWorker(0), dispatcher.ErrNotStarted)
					assert.ErrorIs(t, d.SetWeight(0, 1), dispatcher.ErrNotStarted)
					assert.ErrorIs(t, d.Close(ctx), dispatcher.ErrNotStarted)
					assert.Equal(t, dispatcher.Stats{}, d.Stats())
					<-d.Done()
				})
			})
		})
	}
}

// TestHardenedCalls covers runtime calls on both engines: Future.Wait with
// a nil context, and one error rule for membership calls.
func TestHardenedCalls(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(e), dispatcher.WithWorkers(2), dispatcher.WithStrategyName("swrr"))
		f, err := dispatcher.Submit(context.Background(), d, ok(3))
		require.NoError(t, err)
		var nilCtx context.Context
		_, err = f.Wait(nilCtx)
		require.ErrorIs(t, err, dispatcher.ErrNilContext)
		v, err := waitFuture(t, f, 5*time.Second)
		require.NoError(t, err)
		require.Equal(t, 3, v)

		err = d.SetWeight(0, -1)
		require.ErrorIs(t, err, dispatcher.ErrBadOption)
		require.ErrorIs(t, err, strategies.ErrNegativeWeight)
		require.NoError(t, d.SetWeight(0, 0))
		err = d.RemoveWorker(1)
		require.ErrorIs(t, err, dispatcher.ErrBadOption, "removing the last weighted worker")
		require.ErrorIs(t, err, strategies.ErrLastMember)
		_, err = d.AddWorker(-1)
		require.ErrorIs(t, err, dispatcher.ErrBadOption)
		require.ErrorIs(t, d.RemoveWorker(7), dispatcher.ErrNoWorker)
	})
}

// TestStatsAccountBusyAtEnd: after a request's answer, Stats has its busy
// time, also when the worker has nothing queued behind it (it used to
// publish busy time only once idle, after the answer).
func TestStatsAccountBusyAtEnd(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e dispatcher.Engine) {
		for range 5 {
			d := newDispatcher(t, dispatcher.WithEngine(e), dispatcher.WithWorkers(1))
			var err error
			within(t, 5*time.Second, "Do", func() {
				_, err = dispatcher.Do(context.Background(), d, func(context.Context) (int, error) {
					time.Sleep(2 * time.Millisecond)
					return 0, nil
				})
			})
			require.NoError(t, err)
			s := d.Stats()
			require.Equal(t, int64(1), s.Workers[0].Completed)
			require.GreaterOrEqual(t, s.Workers[0].Busy, 2*time.Millisecond)
		}
	})
}

// TestPendingFigureAfterRemove: Pike's mean and deviation of pending are
// over live workers; a removed worker still draining its queue used to stay
// in the sums (mean inflated, variance negative and clamped to 0).
func TestPendingFigureAfterRemove(t *testing.T) {
	for _, e := range engines {
		t.Run("engine="+e.String(), func(t *testing.T) {
			d := newDispatcher(t, dispatcher.WithEngine(e), dispatcher.WithWorkers(2),
				dispatcher.WithStrategyName("round-robin"), dispatcher.WithWorkerBuffer(4))
			gate := make(chan struct{})
			release := sync.OnceFunc(func() { close(gate) })
			defer release() // also when a require fails: Close must not wait on gate
			ctx := context.Background()
			var fs []*dispatcher.Future[int]
			// Round-robin alternates: the odd requests go to worker 1 and
			// wait there; the even ones finish on worker 0.
			for k := range 6 {
				f, err := dispatcher.Submit(ctx, d, func(context.Context) (int, error) {
					if k%2 == 1 {
						<-gate
					}
					return 1, nil
				})
				require.NoError(t, err)
				fs = append(fs, f)
			}
			require.Eventually(t, func() bool { return d.Stats().Pending == 3 }, 5*time.Second, time.Millisecond)
			require.NoError(t, d.RemoveWorker(1))
			s := d.Stats()
			require.Equal(t, 3, s.Workers[1].Pending, "the removed worker still drains")
			require.InDelta(t, 0.0, s.PendingMean, 1e-9, "the mean is over the one live worker")
			require.InDelta(t, 0.0, s.PendingStdDev, 1e-9)
			// Many events with the removed worker's 3 requests still queued:
			// counted against the live worker, they would hold the run's
			// mean at 3 or above, where the live worker has at most 1.
			for range 200 {
				_, err := dispatcher.Do(ctx, d, ok(1))
				require.NoError(t, err)
			}
			require.Less(t, d.Stats().RunPendingMean, 1.5)
			release()
			for _, f := range fs {
				_, err := waitFuture(t, f, 5*time.Second)
				require.NoError(t, err)
			}
			s = d.Stats()
			require.InDelta(t, 0.0, s.PendingMean, 1e-9)
			require.Zero(t, s.Pending)
		})
	}
}
