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
func queuedBehind(t *testing.T, want int, warm func(context.Context) (int, error), opts ...dispatcher.Option) int {
	d := newDispatcher(t, append([]dispatcher.Option{dispatcher.WithWorkers(1)}, opts...)...)
	ctx := context.Background()
	// A batch, as the deepening is for: the worker times runs of tasks.
	for range 2000 {
		require.NoError(t, d.Go(ctx, func(ctx context.Context) error { _, err := warm(ctx); return err }))
	}
	_, err := dispatcher.Do(ctx, d, warm) // one worker, first in first out: after the batch
	require.NoError(t, err)
	gate := make(chan struct{})
	open := sync.OnceFunc(func() { close(gate) })
	var submitter sync.WaitGroup
	// However the test ends, the submitter has returned before it does: no
	// assertion can fire after the test.
	defer func() { open(); submitter.Wait() }()
	require.NoError(t, d.Go(ctx, func(context.Context) error { <-gate; return nil }))
	// The intake holds only so many: the submitter may block until the
	// gate opens.
	submitter.Go(func() {
		for range 400 {
			assert.NoError(t, d.Go(ctx, func(ctx context.Context) error { _, err := ok(0)(ctx); return err }))
		}
	})
	// The balancer sends what the limit allows, and has more to send.
	require.Eventually(t, func() bool { return d.Stats().Workers[0].Pending >= want }, 10*time.Second, time.Millisecond)
	// Read before the gate opens: the empty tasks behind it then teach the
	// balancer a shorter run time.
	most := d.Stats().Workers[0].MaxPending
	open()
	submitter.Wait()
	_, err = dispatcher.Do(ctx, d, ok(0))
	require.NoError(t, err)
	return most
}

// A queue really fills to its limit: with a budget no task time can fill
// (a second), the rings engine's default queue deepens to 256, a given
// WithWorkerBuffer(63) and the channel engine (the default) keep 64; with late binding
// off (WithQueueBudget(0)) the default stays at 64. Which limit a measured
// task time gives is TestAdaptLimitForTaskTime's, with the time injected.
func TestQueuesDeepenForShortTasks(t *testing.T) {
	empty := ok(1)
	t.Run("cap", func(t *testing.T) {
		assert.Equal(t, 256, queuedBehind(t, 256, empty, dispatcher.WithEngine(dispatcher.Rings), dispatcher.WithQueueBudget(time.Second)))
	})
	t.Run("given buffer", func(t *testing.T) {
		assert.Equal(t, 64, queuedBehind(t, 64, empty, dispatcher.WithEngine(dispatcher.Rings), dispatcher.WithWorkerBuffer(63), dispatcher.WithQueueBudget(time.Second)))
	})
	t.Run("channel engine", func(t *testing.T) {
		assert.Equal(t, 64, queuedBehind(t, 64, empty, dispatcher.WithQueueBudget(time.Second))) // the default engine
	})
	t.Run("late binding off", func(t *testing.T) {
		assert.Equal(t, 64, queuedBehind(t, 64, empty, dispatcher.WithEngine(dispatcher.Rings), dispatcher.WithQueueBudget(0)))
	})
}

// A rings dispatcher whose queues may deepen holds MaxBuffer/256 workers;
// one given WithWorkerBuffer(63), and the default engine (channels, whose
// queues keep their depth), hold four times as many.
func TestDeepQueuesBoundWorkers(t *testing.T) {
	d := newDispatcher(t, dispatcher.WithWorkers(1), dispatcher.WithEngine(dispatcher.Rings))
	require.ErrorIs(t, d.Resize(dispatcher.MaxBuffer/256+1), dispatcher.ErrBadOption)
	d63 := newDispatcher(t, dispatcher.WithWorkers(1), dispatcher.WithEngine(dispatcher.Rings), dispatcher.WithWorkerBuffer(63), dispatcher.WithStrategyName("round-robin"))
	require.ErrorIs(t, d63.Resize(dispatcher.MaxBuffer/64+1), dispatcher.ErrBadOption)
	dc := newDispatcher(t, dispatcher.WithWorkers(1), dispatcher.WithStrategyName("round-robin"))
	require.ErrorIs(t, dc.Resize(dispatcher.MaxBuffer/64+1), dispatcher.ErrBadOption)
}
