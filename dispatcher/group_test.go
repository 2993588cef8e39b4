package dispatcher_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

// TestGroupOrder: results come back in submission order whatever the
// schedule, with the tasks spread over 4 workers, and a second Wait
// returns the same answer.
func TestGroupOrder(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		const n = 2000
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(4))
		g := dispatcher.NewGroup[int](context.Background(), d)
		within(t, 20*time.Second, "Go", func() {
			for i := range n {
				assert.NoError(t, g.Go(func(ctx context.Context) (int, error) {
					if i%7 == 0 {
						runtime.Gosched() // let later tasks overtake this one
					}
					return i * 3, ctx.Err()
				}))
			}
		})
		res, err := waitGroup(t, g, 20*time.Second)
		require.NoError(t, err)
		require.Len(t, res, n)
		for i, v := range res {
			require.Equal(t, i*3, v, "result %d", i)
		}
		again, err := g.Wait()
		require.NoError(t, err)
		require.Equal(t, res, again)
		require.ErrorIs(t, g.Go(ok(1)), dispatcher.ErrGroupDone)
		require.False(t, g.TryGo(ok(1)))
		require.ErrorIs(t, g.Context().Err(), context.Canceled, "Wait releases the group's context")
		s := d.Stats()
		require.Equal(t, int64(n), s.Completed)
		for _, w := range s.Workers {
			require.Positive(t, w.Completed, "worker %d served", w.Index)
		}
	})
}

// TestGroupFirstErrorCancels: the first failure cancels the group's
// context with itself as the cause; running tasks see the cancellation,
// queued ones end without running, later Go calls are refused at once,
// and Wait returns the failure, not the cancellations it caused.
func TestGroupFirstErrorCancels(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		const n = 50
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		g := dispatcher.NewGroup[int](context.Background(), d)
		var ran atomic.Int32
		queued := make(chan struct{})
		require.NoError(t, g.Go(func(context.Context) (int, error) {
			<-queued // fail only once every other task is in the group
			return 0, errBoom
		}))
		for range n - 1 {
			require.NoError(t, g.Go(untilCancelled(&ran)))
		}
		close(queued)
		within(t, 10*time.Second, "cancellation", func() { <-g.Context().Done() })
		require.ErrorIs(t, context.Cause(g.Context()), errBoom)
		require.ErrorIs(t, g.Go(ok(1)), context.Canceled, "Go after the cancellation")
		res, err := waitGroup(t, g, 10*time.Second)
		require.ErrorIs(t, err, errBoom)
		require.Len(t, res, n+1, "the refused Go has its slot")
		require.Less(t, int(ran.Load()), n-1, "queued tasks ended without running")
		s := d.Stats()
		require.Positive(t, s.Canceled)
		require.Equal(t, int64(n), s.Completed)
	})
}

// TestGroupPanic: a panicking task is the group's error (a *PanicError with
// the task's stack), cancels the group, and the worker goes on serving.
func TestGroupPanic(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(1))
		g := dispatcher.NewGroup[int](context.Background(), d)
		var ran atomic.Int32
		// The panic waits for the second Go: a panic that cancelled the
		// group first would refuse it, on a machine slow enough.
		second := make(chan struct{})
		require.NoError(t, g.Go(func(context.Context) (int, error) { <-second; return panicTask(7) }))
		require.NoError(t, g.Go(untilCancelled(&ran)))
		close(second)
		_, err := waitGroup(t, g, 10*time.Second)
		var pe *dispatcher.PanicError
		require.ErrorAs(t, err, &pe)
		require.Equal(t, "boom 7", pe.Value)
		require.Contains(t, string(pe.Stack), "dispatcher_test.panicTask")
		require.ErrorIs(t, context.Cause(g.Context()), dispatcher.ErrTaskPanicked)

		var v int
		within(t, 10*time.Second, "Do after the panic", func() { v, err = dispatcher.Do(context.Background(), d, ok(9)) })
		require.NoError(t, err)
		require.Equal(t, 9, v)
		require.Zero(t, d.Stats().Replaced)
	})
}

// TestGroupTryGoWhenFull: with the only worker busy and no buffer, TryGo
// reports false and the refused tasks leave no result; once there is room
// TryGo succeeds.
func TestGroupTryGoWhenFull(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(1),
			dispatcher.WithWorkerBuffer(0), dispatcher.WithIntakeBuffer(0))
		g := dispatcher.NewGroup[int](context.Background(), d)
		release, started := make(chan struct{}), make(chan struct{})
		var releaseOnce sync.Once
		t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
		require.NoError(t, g.Go(func(context.Context) (int, error) {
			close(started)
			<-release
			return 1, nil
		}))
		within(t, 10*time.Second, "start", func() { <-started })
		// A control call runs between balancer turns: the turn that sent the
		// blocker has counted its room (none) by the time Stats returns.
		_ = d.Stats()
		for range 100 {
			require.False(t, g.TryGo(ok(2)), "no room")
		}
		releaseOnce.Do(func() { close(release) })
		accepted := false
		within(t, 10*time.Second, "TryGo with room", func() {
			for !accepted {
				accepted = g.TryGo(ok(3))
				runtime.Gosched()
			}
		})
		res, err := waitGroup(t, g, 10*time.Second)
		require.NoError(t, err)
		require.Equal(t, []int{1, 3}, res, "refused TryGo calls have no result")
	})
}

// TestGroupsShareDispatcher: 8 groups submit at once from their own
// goroutines; each gets its own results in its own order, and one group's
// failure cancels only that group.
func TestGroupsShareDispatcher(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		const groups, n = 8, 300
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(4), dispatcher.WithWorkerBuffer(7))
		results := make([][]int, groups)
		errs := make([]error, groups)
		within(t, 20*time.Second, "groups", func() {
			var wg sync.WaitGroup
			for k := range groups {
				wg.Go(func() {
					g := dispatcher.NewGroup[int](context.Background(), d)
					for i := range n {
						_ = g.Go(func(context.Context) (int, error) {
							if k == 0 && i == n/2 {
								return 0, errBoom
							}
							return k*n + i, nil
						})
					}
					results[k], errs[k] = g.Wait()
				})
			}
			wg.Wait()
		})
		require.ErrorIs(t, errs[0], errBoom)
		for k := 1; k < groups; k++ {
			require.NoError(t, errs[k], "group %d", k)
			require.Len(t, results[k], n)
			for i, v := range results[k] {
				require.Equal(t, k*n+i, v, "group %d result %d", k, i)
			}
		}
	})
}

// TestGroupTasksSpawn: tasks add tasks to their own group with TryGo while
// Wait waits (a tree walk); Wait returns once the whole tree is done.
func TestGroupTasksSpawn(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		const depth = 6 // 2^6 - 1 nodes
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		g := dispatcher.NewGroup[int](context.Background(), d)
		var nodes atomic.Int32
		var node func(level int) func(context.Context) (int, error)
		node = func(level int) func(context.Context) (int, error) {
			return func(context.Context) (int, error) {
				nodes.Add(1)
				if level < depth {
					for range 2 {
						for !g.TryGo(node(level + 1)) {
							runtime.Gosched()
						}
					}
				}
				return level, nil
			}
		}
		require.NoError(t, g.Go(node(1)))
		res, err := waitGroup(t, g, 20*time.Second)
		require.NoError(t, err)
		require.Len(t, res, 1<<depth-1)
		require.Equal(t, int32(1<<depth-1), nodes.Load())
		require.Equal(t, 1, res[0])
	})
}

// TestKeyedGroupAffinity: a keyed group's tasks with one key reach one
// worker under consistent-hash, and run there in submission order.
func TestKeyedGroupAffinity(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		const n = 200
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(4), dispatcher.WithStrategyName("consistent-hash"))
		g := dispatcher.NewGroup[int](context.Background(), d)
		var order []int // one worker runs key 7: no race
		for i := range n {
			require.NoError(t, g.Key(7).Go(func(context.Context) (int, error) {
				order = append(order, i)
				return i, nil
			}))
		}
		_, err := waitGroup(t, g, 10*time.Second)
		require.NoError(t, err)
		for i, v := range order {
			require.Equal(t, i, v)
		}
		served := 0
		for _, w := range d.Stats().Workers {
			if w.Completed > 0 {
				served++
				require.Equal(t, int64(n), w.Completed)
			}
		}
		require.Equal(t, 1, served, "one worker for one key")
	})
}

// TestGroupBadInput: bad input is a named error from Go and Wait, never a
// panic; a Go refused by the dispatcher keeps its slot.
func TestGroupBadInput(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(1))
		var nilContext context.Context // a variable, so linters let the nil check be tested
		nilCtx := dispatcher.NewGroup[int](nilContext, d)
		require.ErrorIs(t, nilCtx.Go(ok(1)), dispatcher.ErrNilContext)
		require.False(t, nilCtx.TryGo(ok(1)))
		_, err := nilCtx.Wait()
		require.ErrorIs(t, err, dispatcher.ErrNilContext)

		_, err = dispatcher.NewGroup[int](context.Background(), d, nil).Wait()
		require.ErrorIs(t, err, dispatcher.ErrBadOption)

		var zero dispatcher.Dispatcher
		_, err = dispatcher.NewGroup[int](context.Background(), &zero).Wait()
		require.ErrorIs(t, err, dispatcher.ErrNotStarted)

		g := dispatcher.NewGroup[int](context.Background(), d)
		require.ErrorIs(t, g.Go(nil), dispatcher.ErrNilTask)
		require.False(t, g.TryGo(nil))
		res, err := waitGroup(t, g, 10*time.Second)
		require.ErrorIs(t, err, dispatcher.ErrNilTask)
		require.Len(t, res, 1)

		closed, err := dispatcher.New(dispatcher.WithEngine(eng), dispatcher.WithWorkers(1))
		require.NoError(t, err)
		closeWithin(t, closed, 10*time.Second)
		g = dispatcher.NewGroup[int](context.Background(), closed, dispatcher.CollectErrors())
		require.ErrorIs(t, g.Go(ok(1)), dispatcher.ErrClosed)
		_, err = waitGroup(t, g, 10*time.Second)
		require.ErrorIs(t, err, dispatcher.ErrClosed)
	})
}

// TestGroupCloseAbandons: tasks Close gives up on are answered with its
// error, so Wait returns instead of waiting for them.
func TestGroupCloseAbandons(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d, err := dispatcher.New(dispatcher.WithEngine(eng), dispatcher.WithWorkers(1))
		require.NoError(t, err)
		release, started := make(chan struct{}), make(chan struct{})
		g := dispatcher.NewGroup[int](context.Background(), d)
		require.NoError(t, g.Go(func(context.Context) (int, error) { close(started); <-release; return 1, nil }))
		for range 10 {
			require.NoError(t, g.Go(ok(2)))
		}
		within(t, 10*time.Second, "start", func() { <-started })
		expired, cancel := context.WithCancel(context.Background())
		cancel()
		require.ErrorIs(t, d.Close(expired), context.Canceled)
		close(release)
		res, err := waitGroup(t, g, 10*time.Second)
		require.ErrorIs(t, err, dispatcher.ErrClosed)
		require.Equal(t, 1, res[0], "the running task finished")
		within(t, 10*time.Second, "Done", func() { <-d.Done() })
	})
}

// TestGroupAllocs: a group allocates no more than a small fraction of an
// object per task (its slots come in chunks), beyond its fixed cost.
func TestGroupAllocs(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		const n = 1024
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		task := ok(1)
		var allocs float64
		within(t, 20*time.Second, "groups", func() {
			allocs = testing.AllocsPerRun(5, func() {
				g := dispatcher.NewGroup[int](context.Background(), d)
				for range n {
					_ = g.Go(task)
				}
				_, _ = g.Wait()
			})
		})
		t.Logf("%.0f allocations per group of %d tasks", allocs, n)
		require.Less(t, allocs/n, 0.25)
	})
}

// TestGroupDropsFinishedTasks: a group keeps a task's result, not the task:
// 100 tasks each capturing 64 KiB are collectable once they have run,
// before Wait. Likewise a Future's task before Release.
func TestGroupDropsFinishedTasks(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		var freed, ran atomic.Int64
		g := dispatcher.NewGroup[int](context.Background(), d)
		const n = 100
		for range n {
			buf := make([]byte, 64<<10)
			runtime.AddCleanup(&buf[0], func(*atomic.Int64) { freed.Add(1) }, &freed)
			require.NoError(t, g.Go(func(context.Context) (int, error) {
				ran.Add(1)
				return len(buf), nil
			}))
		}
		f, err := dispatcher.Submit(context.Background(), d, func() func(context.Context) (int, error) {
			buf := make([]byte, 64<<10)
			runtime.AddCleanup(&buf[0], func(*atomic.Int64) { freed.Add(1) }, &freed)
			return func(context.Context) (int, error) { return len(buf), nil }
		}())
		require.NoError(t, err)
		_, err = f.Wait(context.Background())
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			runtime.GC()
			return ran.Load() == n && freed.Load() == n+1
		}, 10*time.Second, 5*time.Millisecond, "buffers freed before Wait and Release: %d", freed.Load())
		res, err := g.Wait()
		require.NoError(t, err)
		require.Len(t, res, n)
		require.Equal(t, 64<<10, res[n-1], "the results stay")
		f.Release()
	})
}
