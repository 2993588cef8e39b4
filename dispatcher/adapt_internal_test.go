package dispatcher

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// limits copies, on the balancer goroutine, the base and depth and each
// worker's limit and the measured time per task it was set from.
func limits(t *testing.T, d *Dispatcher) (base, depth int, limit []int, per []time.Duration) {
	require.NoError(t, d.call(func() error {
		base, depth = d.b.base, d.b.depth
		for i := range d.b.w {
			limit = append(limit, d.b.w[i].limit)
			per = append(per, d.b.w[i].limitPer)
		}
		return nil
	}))
	return base, depth, limit, per
}

// After a batch of empty tasks each worker's limit is what the budget
// gives for the mean run time the balancer measured, whatever the machine
// or the race detector makes of an empty task: DefaultQueueBudget / per, between
// lo and depth. (TestQueuesDeepenForShortTasks checks that a queue
// really fills to its limit.)
func TestAdaptLimitFollowsMeasuredRunTime(t *testing.T) {
	d, err := New(WithWorkers(2), WithEngine(Rings))
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close(context.Background())) }()
	ctx := context.Background()
	for range 5000 {
		require.NoError(t, d.Go(ctx, func(context.Context) error { return nil }))
	}
	_, err = Do(ctx, d, func(context.Context) (int, error) { return 0, nil })
	require.NoError(t, err)
	base, depth, limit, per := limits(t, d)
	require.Equal(t, 64, base)
	require.Equal(t, 256, depth)
	for i := range limit {
		require.Positive(t, per[i], "worker %d measured no run time", i)
		want := min(max(int(DefaultQueueBudget/per[i]), minLimit), depth)
		assert.Equal(t, want, limit[i], "worker %d, %v a task", i, per[i])
	}
}

// With late binding off (WithQueueBudget(0)) and no deepening (a given
// buffer, the channel engine, or more workers than MaxBuffer/256 at New)
// every limit is the depth, and stays it.
func TestAdaptOffKeepsDepth(t *testing.T) {
	for name, opts := range map[string][]Option{
		"buffer 63": {WithWorkerBuffer(63)},
		"channels":  {WithEngine(Channels)},
		"workers":   {WithWorkers(MaxBuffer/deepDepth + 1), WithStrategyName("round-robin")},
	} {
		t.Run(name, func(t *testing.T) {
			d, err := New(append(opts, WithQueueBudget(0))...)
			require.NoError(t, err)
			defer func() { require.NoError(t, d.Close(context.Background())) }()
			for range 300 {
				_, err := Do(context.Background(), d, func(context.Context) (int, error) { return 0, nil })
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

// The limit for a measured time per task, injected rather than measured:
// the budget's worth of tasks, never fewer than minLimit nor more than the
// depth; room stays counted right across every change.
func TestAdaptLimitForTaskTime(t *testing.T) {
	var b balancer
	b.init(nopStrategy{}, nopEngine{}, 256, 64, 100*time.Microsecond, []int{1})
	b.longFlag(0)
	b.book = newTenantBook()
	for _, c := range []struct {
		per  time.Duration
		want int
	}{
		{30 * time.Nanosecond, 256}, {time.Microsecond, 100}, {10 * time.Microsecond, 10},
		{100 * time.Microsecond, 2}, {time.Millisecond, 2}, {400 * time.Nanosecond, 250},
	} {
		b.w[0].per = c.per
		b.adapt(0)
		assert.Equal(t, c.want, b.w[0].limit, "%v a task", c.per)
		assert.Equal(t, 1, b.room, "an empty worker has room at any limit")
		b.w[0].pending = b.w[0].limit
		assert.False(t, b.hasRoom(0), "full at its limit")
		b.w[0].pending = 0
		b.w[0].per = 0
		b.adapt(0) // nothing measured: back to base
		assert.Equal(t, 64, b.w[0].limit)
		assert.Equal(t, 1, b.room)
	}
}

type nopStrategy struct{}

func (nopStrategy) Pick(uint64) int         { return 0 }
func (nopStrategy) Done(int, time.Duration) {}

// nopEngine is an engine for a balancer driven by hand: only setLimit is
// called.
type nopEngine struct{ engine }

func (nopEngine) setLimit(int, int) {}
