package dispatcher

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// limits copies, on the balancer goroutine, the base and depth and each
// worker's limit and measured time per task.
func limits[R any](t *testing.T, d *Dispatcher[R]) (base, depth int, limit []int, per []time.Duration) {
	require.NoError(t, d.call(func() error {
		base, depth = d.b.base, d.b.depth
		for i := range d.b.w {
			limit = append(limit, d.b.w[i].limit)
			per = append(per, d.b.w[i].per)
		}
		return nil
	}))
	return base, depth, limit, per
}

// After a batch of empty tasks each worker's limit is what the budget
// gives for the mean run time the balancer measured, whatever the machine
// or the race detector makes of an empty task: queueBudget / per, between
// base and depth. (TestQueuesDeepenForShortTasks checks that a queue
// really fills to its limit.)
func TestAdaptLimitFollowsMeasuredRunTime(t *testing.T) {
	d, err := New[int](WithWorkers(2))
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close(context.Background())) }()
	ctx := context.Background()
	for range 5000 {
		require.NoError(t, d.Go(ctx, func(context.Context) (int, error) { return 0, nil }))
	}
	_, err = d.Do(ctx, func(context.Context) (int, error) { return 0, nil })
	require.NoError(t, err)
	base, depth, limit, per := limits(t, d)
	require.Equal(t, 64, base)
	require.Equal(t, 256, depth)
	for i := range limit {
		require.Positive(t, per[i], "worker %d measured no run time", i)
		want := min(max(int(queueBudget/per[i]), base), depth)
		assert.Equal(t, want, limit[i], "worker %d, %v a task", i, per[i])
	}
}

// Without deepening (a given buffer, the channel engine, or more workers
// than MaxBuffer/256 at New) every limit is the depth, and stays it.
func TestAdaptOffKeepsDepth(t *testing.T) {
	for name, opts := range map[string][]Option{
		"buffer 63": {WithWorkerBuffer(63)},
		"channels":  {WithEngine(Channels)},
		"workers":   {WithWorkers(MaxBuffer/deepDepth + 1), WithStrategyName("round-robin")},
	} {
		t.Run(name, func(t *testing.T) {
			d, err := New[int](opts...)
			require.NoError(t, err)
			defer func() { require.NoError(t, d.Close(context.Background())) }()
			for range 300 {
				_, err := d.Do(context.Background(), func(context.Context) (int, error) { return 0, nil })
				require.NoError(t, err)
			}
			base, depth, limit, _ := limits(t, d)
			assert.Equal(t, 64, depth)
			assert.Equal(t, depth, base)
			for i, l := range limit {
				if l != depth {
					assert.Equal(t, depth, l, "worker %d", i)
					break
				}
			}
		})
	}
}
