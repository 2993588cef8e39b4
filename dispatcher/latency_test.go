package dispatcher_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

// TestStatsLatency: tasks that sleep at least 200 µs are timed at no less
// (within the error bound), the percentiles are ordered, and the final
// Stats after Close keep what the live ones had.
func TestStatsLatency(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		const n, least = 64 * 64, 200 * time.Microsecond
		d, err := dispatcher.New(dispatcher.WithEngine(eng), dispatcher.WithWorkers(8))
		require.NoError(t, err)
		require.Zero(t, d.Stats().Latency, "nothing ran yet")
		within(t, 30*time.Second, "Go", func() {
			for range n {
				require.NoError(t, d.Go(context.Background(), func(context.Context) error { time.Sleep(least); return nil }))
			}
		})
		closeWithin(t, d, 30*time.Second)
		s := d.Stats()
		require.Equal(t, int64(n), s.Completed)
		l := s.Latency
		t.Logf("%+v", l)
		// 64 expected; none at all has probability e^-64.
		require.Positive(t, l.Samples)
		require.LessOrEqual(t, l.Samples, int64(n))
		floor := time.Duration(float64(least) * (1 - dispatcher.LatencyRelativeError))
		assert.GreaterOrEqual(t, l.P50, floor)
		assert.LessOrEqual(t, l.P50, l.P90)
		assert.LessOrEqual(t, l.P90, l.P99)
		assert.LessOrEqual(t, l.P99, l.P999)
		assert.LessOrEqual(t, l.P999, l.Max)
		assert.GreaterOrEqual(t, l.Sum, time.Duration(l.Samples)*least)
		assert.LessOrEqual(t, l.Sum, time.Duration(l.Samples)*l.Max)
	})
}

// TestLatencySampleRate: about one task in LatencySampleEvery is timed,
// on Do and Go alike; tasks answered without running are not.
func TestLatencySampleRate(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		const requesters, per = 8, 2000
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		within(t, 60*time.Second, "Do and Go", func() {
			var wg sync.WaitGroup
			for g := range requesters {
				wg.Go(func() {
					for i := range per {
						if g%2 == 0 {
							_, err := dispatcher.Do(context.Background(), d, ok(i))
							assert.NoError(t, err)
						} else {
							assert.NoError(t, d.Go(context.Background(), func(ctx context.Context) error { _, err := ok(i)(ctx); return err }))
						}
					}
				})
			}
			wg.Wait()
		})
		canceled, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := dispatcher.Do(canceled, d, ok(0))
		require.Error(t, err)
		// Go requests may still run: wait for the count to settle.
		var s dispatcher.Stats
		within(t, 10*time.Second, "completions", func() {
			for s = d.Stats(); s.Completed < requesters*per; s = d.Stats() {
				time.Sleep(time.Millisecond)
			}
		})
		// Binomial(16000, 1/64): mean 250, deviation 15.7; 8 deviations.
		got := s.Latency.Samples
		t.Logf("%d of %d timed", got, s.Completed)
		require.InDelta(t, float64(requesters*per/dispatcher.LatencySampleEvery), float64(got), 125)
	})
}

// TestDoAllocatesNothing: sampling adds no allocation to Do or Go.
func TestDoAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		ctx := context.Background()
		goTask := func(context.Context) error { return nil }
		// One dispatcher, tasks of several result types: each type's
		// holders are pooled, so none of them allocates per call.
		allocs := map[string]float64{}
		within(t, 30*time.Second, "Do and Go", func() {
			allocs["Do int"] = doAllocs(ctx, d, 7)
			allocs["Do string"] = doAllocs(ctx, d, "seven")
			allocs["Do [32]byte"] = doAllocs(ctx, d, [32]byte{7})
			allocs["Do struct"] = doAllocs(ctx, d, struct {
				a, b int64
				s    []byte
			}{a: 7})
			allocs["Do *int"] = doAllocs(ctx, d, new(int))
			allocs["Do error"] = doAllocs[error](ctx, d, nil)
			allocs["Go"] = testing.AllocsPerRun(10000, func() { _ = d.Go(ctx, goTask) })
			view := d.Key(3)
			task := ok(1)
			allocs["Do through a View"] = testing.AllocsPerRun(10000, func() { _, _ = dispatcher.Do(ctx, view, task) })
			allocs["Go through a View"] = testing.AllocsPerRun(10000, func() { _ = view.Go(ctx, goTask) })
		})
		require.Positive(t, d.Stats().Latency.Samples, "the runs were sampled")
		for what, n := range allocs {
			// AllocsPerRun rounds down to whole allocations per call: a
			// rare pool miss (a GC cleared the pool) passes, an allocation
			// per call does not.
			assert.Less(t, n, 0.01, what)
		}
	})
}

// doAllocs measures the allocations of one Do of a task returning v.
func doAllocs[R any](ctx context.Context, d *dispatcher.Dispatcher, v R) float64 {
	task := func(context.Context) (R, error) { return v, nil }
	return testing.AllocsPerRun(10000, func() {
		if got, err := dispatcher.Do(ctx, d, task); err != nil || any(got) == nil && any(v) != nil {
			panic("wrong answer")
		}
	})
}
