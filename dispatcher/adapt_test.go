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

// queuedBehind runs a batch of warm tasks on a one-worker dispatcher, so the
// balancer learns their run time, then blocks the worker and submits 400
// empty tasks. It waits for want of them pending at the worker (the
// blocked one included) and returns the most the worker had pending by
// then: its queue's limit for tasks like the warm ones, when that is want.
func queuedBehind(t *testing.T, want int, warm dispatcher.Task[int], opts ...dispatcher.Option) int {
	d := newDispatcher(t, append([]dispatcher.Option{dispatcher.WithWorkers(1)}, opts...)...)
	ctx := context.Background()
	// A batch, as the deepening is for: the worker times runs of tasks.
	for range 2000 {
		require.NoError(t, d.Go(ctx, warm))
	}
	_, err := d.Do(ctx, warm) // one worker, first in first out: after the batch
	require.NoError(t, err)
	gate := make(chan struct{})
	open := sync.OnceFunc(func() { close(gate) })
	defer open()
	require.NoError(t, d.Go(ctx, func(context.Context) (int, error) { <-gate; return 0, nil }))
	// The intake holds only so many: the submitter may block until the
	// gate opens.
	var submitter sync.WaitGroup
	submitter.Go(func() {
		for range 400 {
			assert.NoError(t, d.Go(ctx, ok(0)))
		}
	})
	// The balancer sends what the limit allows, and has more to send.
	require.Eventually(t, func() bool { return d.Stats().Workers[0].Pending >= want }, 10*time.Second, time.Millisecond)
	// Read before the gate opens: the empty tasks behind it then teach the
	// balancer a shorter run time.
	most := d.Stats().Workers[0].MaxPending
	open()
	submitter.Wait()
	_, err = d.Do(ctx, ok(0))
	require.NoError(t, err)
	return most
}

// With the default worker buffer the rings engine deepens a worker's
// queue to 256 for empty tasks and keeps 64 for tasks of 20 µs (the 32 µs
// budget covers fewer than 64 of them at any speed); a given
// WithWorkerBuffer is kept as given, as is the channel engine's depth.
func TestQueuesDeepenForShortTasks(t *testing.T) {
	empty := ok(1)
	slow := func(context.Context) (int, error) {
		for start := time.Now(); time.Since(start) < 20*time.Microsecond; {
		}
		return 1, nil
	}
	t.Run("empty tasks", func(t *testing.T) {
		// Below 250 ns a task, which an empty one is on any machine
		// uninstrumented, the limit is at least 32 µs / 250 ns. Under the
		// race detector an empty task takes microseconds: the budget is
		// widened by as much (TestAdaptLimitFollowsMeasuredRunTime checks
		// the limit against the measured time at the real budget).
		if raceEnabled {
			t.Cleanup(dispatcher.SetQueueBudget(50 * 32 * time.Microsecond))
		}
		got := queuedBehind(t, 128, empty)
		assert.GreaterOrEqual(t, got, 128)
		assert.LessOrEqual(t, got, 256)
	})
	t.Run("cap", func(t *testing.T) {
		// Restored after the dispatcher's Close: cleanups run last first.
		t.Cleanup(dispatcher.SetQueueBudget(time.Second))
		assert.Equal(t, 256, queuedBehind(t, 256, empty))
	})
	t.Run("20us tasks", func(t *testing.T) {
		assert.Equal(t, 64, queuedBehind(t, 64, slow))
	})
	t.Run("given buffer", func(t *testing.T) {
		assert.Equal(t, 64, queuedBehind(t, 64, empty, dispatcher.WithWorkerBuffer(63)))
	})
	t.Run("channel engine", func(t *testing.T) {
		assert.Equal(t, 64, queuedBehind(t, 64, empty, dispatcher.WithEngine(dispatcher.Channels)))
	})
}

// A dispatcher whose queues may deepen holds MaxBuffer/256 workers; one
// given WithWorkerBuffer(63) holds four times as many.
func TestDeepQueuesBoundWorkers(t *testing.T) {
	d := newDispatcher(t, dispatcher.WithWorkers(1))
	require.ErrorIs(t, d.Resize(dispatcher.MaxBuffer/256+1), dispatcher.ErrBadOption)
	d63 := newDispatcher(t, dispatcher.WithWorkers(1), dispatcher.WithWorkerBuffer(63), dispatcher.WithStrategyName("round-robin"))
	require.ErrorIs(t, d63.Resize(dispatcher.MaxBuffer/64+1), dispatcher.ErrBadOption)
}
