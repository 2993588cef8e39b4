package dispatcher_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
	"github.com/gobalancer/balancer/strategies"
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

// recording is a strategy that records the elapsed time the balancer
// reports with each completion (the worker's mean task time, design.md).
type recording struct {
	strategies.Strategy
	mu      sync.Mutex
	elapsed []time.Duration
}

func (r *recording) Done(i int, elapsed time.Duration) {
	r.mu.Lock()
	r.elapsed = append(r.elapsed, elapsed)
	r.mu.Unlock()
	r.Strategy.Done(i, elapsed)
}

// TestDoneElapsedIsPerTask: the strategy is told each completion with
// the worker's mean task time ("busy time ... spread over the tasks it
// covers", policy.go account). One worker runs a queue of ten 2 ms tasks;
// no completion may be reported with several tasks' worth of time (three
// times the slowest task, as the task measured itself), whether
// completions are reaped together or one at a time (Stats, which reaps,
// read after each answer, as a balancer that keeps up with its workers
// does).
func TestDoneElapsedIsPerTask(t *testing.T) {
	for _, reapEach := range []bool{false, true} {
		t.Run(fmt.Sprintf("reapEach=%v", reapEach), func(t *testing.T) {
			forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
				s, err := strategies.New("round-robin", strategies.Equal(1))
				require.NoError(t, err)
				rec := &recording{Strategy: s}
				d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(1), dispatcher.WithWorkerBuffer(15), dispatcher.WithStrategy(rec))
				const n, task = 10, 2 * time.Millisecond
				// Each task's own duration, measured in the task: on a
				// loaded machine a 2 ms sleep takes several, and the bound
				// below is relative to what the tasks really took.
				var took [n]time.Duration
				var fs []*dispatcher.Future[int]
				for i := range n {
					f, err := dispatcher.Submit(context.Background(), d, func(context.Context) (int, error) {
						start := time.Now()
						time.Sleep(task)
						took[i] = time.Since(start)
						return i, nil
					})
					require.NoError(t, err)
					fs = append(fs, f)
				}
				for _, f := range fs {
					_, err := waitFuture(t, f, 10*time.Second)
					require.NoError(t, err)
					if reapEach {
						_ = d.Stats()
					}
				}
				_ = d.Stats() // reap
				rec.mu.Lock()
				defer rec.mu.Unlock()
				t.Logf("%v: elapsed per completion %v", eng, rec.elapsed)
				require.Len(t, rec.elapsed, n)
				longest, slowest := slices.Max(rec.elapsed), slices.Max(took[:])
				require.Less(t, longest, 3*slowest, "a completion was reported with %v, several tasks' worth of busy time (the slowest task took %v)", longest, slowest)
			})
		})
	}
}

// TestBadPickAnswered: a strategy that picks no live worker gets each
// request answered with ErrBadPick instead of losing it.
func TestBadPickAnswered(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2), dispatcher.WithStrategy(&fixedStrategy{pick: 7}))
		for range 3 {
			var err error
			within(t, 10*time.Second, "Do with a bad pick", func() { _, err = dispatcher.Do(context.Background(), d, ok(1)) })
			require.ErrorIs(t, err, dispatcher.ErrBadPick)
		}
		f, err := dispatcher.Submit(context.Background(), d, ok(1))
		require.NoError(t, err)
		_, err = waitFuture(t, f, 10*time.Second)
		require.True(t, errors.Is(err, dispatcher.ErrBadPick))
	})
}
