package dispatcher

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
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

// checkRoom checks, on the balancer goroutine, the invariants adapt must
// keep: room counts live weighted workers with pending < limit, limits stay
// in [base, depth], and a held request's worker is full.
var seenLimits = map[int]int{}

func checkRoom(d *Dispatcher) error {
	return d.call(func() error {
		b := &d.b
		n := 0
		for i := range b.w {
			s := &b.w[i]
			if s.limit < b.lo || s.limit > b.depth {
				return fmt.Errorf("worker %d limit %d outside [%d, %d]", i, s.limit, b.lo, b.depth)
			}
			if !s.removed {
				seenLimits[s.limit]++
			}
			if b.hasRoom(i) {
				n++
			}
		}
		if n != b.room {
			return fmt.Errorf("room %d, but %d workers have room", b.room, n)
		}
		if b.held != nil && b.w[b.heldW].pending < b.w[b.heldW].limit && !b.w[b.heldW].removed {
			return fmt.Errorf("held for worker %d with pending %d < limit %d", b.heldW, b.w[b.heldW].pending, b.w[b.heldW].limit)
		}
		return nil
	})
}

func TestAdaptKeepsRoom(t *testing.T) {
	for _, strat := range []string{"round-robin", "least-pending"} {
		t.Run(strat, func(t *testing.T) {
			d, err := New(WithWorkers(3), WithStrategyName(strat), WithEngine(Rings), WithQueueBudget(2*time.Millisecond))
			require.NoError(t, err)
			ctx := context.Background()
			empty := func(context.Context) error { return nil }
			slow := func(context.Context) error {
				for s := time.Now(); time.Since(s) < 40*time.Microsecond; {
				}
				return nil
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for g := range 3 {
				wg.Go(func() {
					for k := 0; ; k++ {
						select {
						case <-stop:
							return
						default:
						}
						fn := empty
						if (k/500+g)%2 == 1 {
							fn = slow
						}
						if err := d.Go(ctx, fn); err != nil {
							return
						}
					}
				})
			}
			deadline := time.Now().Add(500 * time.Millisecond)
			rng := rand.New(rand.NewPCG(1, 2))
			var live []int
			for i := range 3 {
				live = append(live, i)
			}
			for time.Now().Before(deadline) {
				switch rng.IntN(5) {
				case 0:
					if i, err := d.AddWorker(1); err == nil {
						live = append(live, i)
					}
				case 1:
					if len(live) > 1 {
						k := rng.IntN(len(live))
						if d.RemoveWorker(live[k]) == nil {
							live = append(live[:k], live[k+1:]...)
						}
					}
				case 2:
					_ = d.SetWeight(live[rng.IntN(len(live))], rng.IntN(2))
				case 3:
					_ = d.Resize(1 + rng.IntN(5))
					live = live[:0]
					s := d.Stats()
					for _, w := range s.Workers {
						if !w.Removed {
							live = append(live, w.Index)
						}
					}
				}
				if err := checkRoom(d); !assert.NoError(t, err) {
					break
				}
				time.Sleep(200 * time.Microsecond)
			}
			close(stop)
			wg.Wait()
			t.Logf("limits seen: %d distinct, 64:%d 256:%d", len(seenLimits), seenLimits[64], seenLimits[256])
			require.NoError(t, d.Close(ctx))
		})
	}
	// The limits moved both ways, or the invariants were never under test.
	assert.GreaterOrEqual(t, len(seenLimits), 2, "limits that moved")
	assert.Positive(t, seenLimits[256], "a worker at the deep limit")
}
