package dispatcher_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

// gatedTask is a task that returns v once gate is closed, its context's
// error if that ends first, and an error after 10 s so that a gate never
// opened fails the test instead of hanging it.
func gatedTask(gate <-chan struct{}, v int) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		select {
		case <-gate:
			return v, nil
		case <-ctx.Done():
			return -1, ctx.Err()
		case <-time.After(10 * time.Second):
			return -2, errors.New("gate not opened within 10s")
		}
	}
}

// feed submits task 0 to g, then tasks 1 to n-1 from a goroutine of its
// own, task i returning i (through wrap, if not nil), and reports on the
// returned channel how that went. It keeps the group's range open while it
// feeds: task i returns only once task i+1 is submitted (or the feed has
// ended), so a range never catches up with the feed and ends before it,
// in either order. Before each submit it puts a token in window, if not
// nil: the consumer takes one per result, which bounds what is in flight
// or unread.
func feed(t *testing.T, g *dispatcher.Group[int], n int, window chan struct{}, wrap func(func(context.Context) (int, error)) func(context.Context) (int, error)) <-chan error {
	t.Helper()
	submit := func(i int, gate chan struct{}) error {
		if window != nil {
			window <- struct{}{}
		}
		task := gatedTask(gate, i)
		if wrap != nil {
			task = wrap(task)
		}
		if err := g.Go(task); err != nil {
			return fmt.Errorf("Go %d: %w", i, err)
		}
		return nil
	}
	prev := make(chan struct{})
	require.NoError(t, submit(0, prev))
	fed := make(chan error, 1)
	go func() {
		defer func() { close(prev) }()
		for i := 1; i < n; i++ {
			gate := make(chan struct{})
			if err := submit(i, gate); err != nil {
				fed <- err
				return
			}
			close(prev)
			prev = gate
		}
		fed <- nil
	}()
	return fed
}

// TestGroupCompletionOrder: with CompletionOrder the task made to finish
// first is yielded first, whatever its place in submission order; each
// gate opens only once the answer before it has been yielded.
func TestGroupCompletionOrder(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		const n = 4
		// One worker a task (least-pending spreads them), so only the
		// gates order the answers.
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(n), dispatcher.WithWorkerBuffer(0))
		g := groupIn(d, true)
		gates := make([]chan struct{}, n)
		started := make(chan struct{}, n)
		for i := range gates {
			gates[i] = make(chan struct{})
			task := gatedTask(gates[i], i)
			require.NoError(t, g.Go(func(ctx context.Context) (int, error) {
				started <- struct{}{}
				return task(ctx)
			}))
		}
		within(t, 10*time.Second, "every task started", func() {
			for range n {
				<-started
			}
		})
		order := []int{2, 0, 3, 1}
		close(gates[order[0]])
		var got []int
		within(t, 20*time.Second, "range", func() {
			for v, err := range g.Results() {
				assert.NoError(t, err)
				got = append(got, v)
				if len(got) < n {
					close(gates[order[len(got)]])
				}
			}
		})
		require.Equal(t, order, got)
		res, err := g.Wait()
		require.NoError(t, err)
		require.Nil(t, res, "the range took the values")
	})
}

// TestGroupCompletionOrderSlowHoldsNone: a slow task submitted first
// holds back no answer but its own in completion order.
func TestGroupCompletionOrderSlowHoldsNone(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		const quick = 50
		// No buffer: the slow task's worker is sent nothing while it runs.
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2), dispatcher.WithWorkerBuffer(0))
		g := groupIn(d, true)
		slow := make(chan struct{})
		require.NoError(t, g.Go(gatedTask(slow, -7)))
		for i := range quick {
			require.NoError(t, g.Go(ok(i)))
		}
		var got []int
		within(t, 20*time.Second, "range", func() {
			for v, err := range g.Results() {
				assert.NoError(t, err)
				got = append(got, v)
				if len(got) == quick {
					close(slow)
				}
			}
		})
		require.Len(t, got, quick+1)
		require.Equal(t, -7, got[quick], "the slow task last")
		require.ElementsMatch(t, seq(quick), got[:quick])
	})
}

// TestGroupResultsExactlyOnce: a producer goroutine feeds the group while
// the range runs, and the loop body submits too; every task's answer is
// yielded exactly once, the fed ones in submission order unless
// CompletionOrder; the range ends only once both are done.
func TestGroupResultsExactlyOnce(t *testing.T) {
	forEachOrder(t, func(t *testing.T, eng dispatcher.Engine, completion bool) {
		const n, extra = 3000, 40
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(3))
		g := groupIn(d, completion)
		fed := feed(t, g, n, nil, nil)
		seen := make([]int, n+extra)
		var fromFeed []int
		within(t, 20*time.Second, "range", func() {
			for v, err := range g.Results() {
				if !assert.NoError(t, err) {
					continue
				}
				seen[v]++
				if v < n {
					fromFeed = append(fromFeed, v)
				}
				if v < extra {
					assert.NoError(t, g.Go(ok(n+v)), "submit from the body")
				}
			}
		})
		require.NoError(t, <-fed)
		for v, k := range seen {
			require.Equal(t, 1, k, "value %d yielded %d times", v, k)
		}
		if !completion {
			require.True(t, slices.IsSorted(fromFeed), "submission order")
		}
		require.ErrorIs(t, g.Go(ok(1)), dispatcher.ErrGroupDone)
	})
}

// TestGroupResultsBounded: a range that runs while a producer goroutine
// feeds the group 200 000 tasks (at most window of them in flight or
// unread) reuses the slots it yields: the group allocates slots for
// about the window, not for the tasks. Slots never yielded would be
// 200 000.
func TestGroupResultsBounded(t *testing.T) {
	n := 200_000
	if raceEnabled {
		n = 20_000 // the same bound (far below n), in the time the race detector allows
	}
	forEachOrder(t, func(t *testing.T, eng dispatcher.Engine, completion bool) {
		const window = 256
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		g := groupIn(d, completion)
		tokens := make(chan struct{}, window)
		fed := feed(t, g, n, tokens, nil)
		yielded, peak := 0, 0
		within(t, 25*time.Second, "range", func() {
			for v, err := range g.Results() {
				if !assert.NoError(t, err) || !completion && !assert.Equal(t, yielded, v, "submission order") {
					break
				}
				yielded++
				<-tokens
				if yielded%1000 == 0 {
					peak = max(peak, dispatcher.GroupSlots(g))
				}
			}
			peak = max(peak, dispatcher.GroupSlots(g))
		})
		require.NoError(t, <-fed)
		require.Equal(t, n, yielded)
		t.Logf("%d tasks, at most %d in flight or unread: %d slots", n, window, peak)
		// Chunks double (8, 16, ...): the slots allocated are less than
		// twice the most in use at once, which is the window.
		require.Less(t, peak, 2*window)
	})
}

// TestGroupResultsAllocs: a range allocates no more per task than Wait
// does (the slots, in chunks, and fewer of them), in either order.
func TestGroupResultsAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	forEachOrder(t, func(t *testing.T, eng dispatcher.Engine, completion bool) {
		const n = 1024
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		task := ok(1)
		var allocs float64
		within(t, 20*time.Second, "groups", func() {
			allocs = testing.AllocsPerRun(5, func() {
				g := groupIn(d, completion)
				for range n {
					_ = g.Go(task)
				}
				for range g.Results() {
				}
			})
		})
		t.Logf("%.0f allocations per group of %d tasks", allocs, n)
		require.Less(t, allocs/n, 0.25)
	})
}

// BenchmarkGroupResults: a group of 1024 empty tasks submitted, then
// ranged over, in each order, against Wait.
func BenchmarkGroupResults(b *testing.B) {
	const n = 1024
	for _, eng := range engines {
		for _, mode := range []string{"wait", "submission", "completion"} {
			b.Run(fmt.Sprintf("engine=%v/by=%s", eng, mode), func(b *testing.B) {
				d := newDispatcher(b, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
				task := ok(1)
				b.ReportAllocs()
				for b.Loop() {
					g := groupIn(d, mode == "completion")
					for range n {
						_ = g.Go(task)
					}
					if mode == "wait" {
						_, _ = g.Wait()
						continue
					}
					for range g.Results() {
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/task")
			})
		}
	}
}

// TestGroupResultsLimit: under Limit a producer feeding the group while it
// is ranged over never has more than the limit running, and every answer
// comes once.
func TestGroupResultsLimit(t *testing.T) {
	forEachOrder(t, func(t *testing.T, eng dispatcher.Engine, completion bool) {
		const n, limit = 400, 3
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(4))
		g := groupIn(d, completion, dispatcher.Limit(limit))
		var running, most atomic.Int32
		count := func(task func(context.Context) (int, error)) func(context.Context) (int, error) {
			return func(ctx context.Context) (int, error) {
				r := running.Add(1)
				defer running.Add(-1)
				for m := most.Load(); r > m && !most.CompareAndSwap(m, r); m = most.Load() {
				}
				return task(ctx)
			}
		}
		fed := feed(t, g, n, nil, count)
		sum := 0
		vals, errs := collect(t, g.Results())
		require.NoError(t, <-fed)
		require.Len(t, vals, n)
		for i, v := range vals {
			require.NoError(t, errs[i])
			sum += v
		}
		require.Equal(t, n*(n-1)/2, sum)
		require.LessOrEqual(t, most.Load(), int32(limit))
	})
}

// TestGroupResultsInOrder: Results yields every task's answer in
// submission order, refusals and failures in their place; then the group
// is done: Wait returns the same error and no values (the range took
// them), submits and another range get ErrGroupDone.
func TestGroupResultsInOrder(t *testing.T) {
	boom := errors.New("boom")
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(3))
		g := dispatcher.NewGroup[int](context.Background(), d, dispatcher.CollectErrors())
		const n = 60
		for i := range n {
			switch i {
			case 7:
				require.ErrorIs(t, g.Go(nil), dispatcher.ErrNilTask)
			case 11:
				require.NoError(t, g.Go(func(context.Context) (int, error) { return -1, boom }))
			default:
				require.NoError(t, g.Go(func(context.Context) (int, error) {
					if i%5 == 0 {
						time.Sleep(100 * time.Microsecond)
					}
					return i, nil
				}))
			}
		}
		vals, errs := collect(t, g.Results())
		require.Len(t, vals, n)
		for i := range n {
			switch i {
			case 7:
				require.ErrorIs(t, errs[i], dispatcher.ErrNilTask)
			case 11:
				require.ErrorIs(t, errs[i], boom)
				require.Equal(t, -1, vals[i])
			default:
				require.NoError(t, errs[i])
				require.Equal(t, i, vals[i])
			}
		}
		res, err := g.Wait()
		require.Nil(t, res, "the range took the values")
		require.ErrorIs(t, err, boom)
		require.ErrorIs(t, err, dispatcher.ErrNilTask)
		require.ErrorIs(t, g.Go(ok(1)), dispatcher.ErrGroupDone)
		_, errs = collect(t, g.Results())
		require.Len(t, errs, 1)
		require.ErrorIs(t, errs[0], dispatcher.ErrGroupDone)
		require.ErrorIs(t, g.Context().Err(), context.Canceled)
	})
}

// TestGroupResultsWhileSubmitting: the loop body may submit more tasks;
// they are yielded in their turn, and the range ends when nothing more is
// submitted.
func TestGroupResultsWhileSubmitting(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		g := dispatcher.NewGroup[int](context.Background(), d)
		task := func(i int) func(context.Context) (int, error) {
			return func(context.Context) (int, error) { return i, nil }
		}
		require.NoError(t, g.Go(task(0)))
		var got []int
		within(t, 5*time.Second, "range", func() {
			for v, err := range g.Results() {
				assert.NoError(t, err)
				got = append(got, v)
				if v < 99 {
					assert.NoError(t, g.Go(task(v+1)))
				}
			}
		})
		require.Len(t, got, 100)
		for i, v := range got {
			require.Equal(t, i, v)
		}
	})
}
