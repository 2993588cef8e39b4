package dispatcher_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

var errBoom = errors.New("boom")

// waitGroup runs g.Wait within bound.
func waitGroup(t *testing.T, g *dispatcher.Group[int], bound time.Duration) ([]int, error) {
	t.Helper()
	var res []int
	var err error
	within(t, bound, "Group.Wait", func() { res, err = g.Wait() })
	return res, err
}

// untilCancelled is a task that returns once its context ends, or after
// 10 s so that a missing cancellation fails the test instead of hanging it.
func untilCancelled(ran *atomic.Int32) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		ran.Add(1)
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(10 * time.Second):
			return 0, errors.New("not cancelled within 10s")
		}
	}
}

// whileRunning is a task that counts itself in running while it runs and
// returns once its context ends: a test sees whether any is still running.
func whileRunning(running *atomic.Int64) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		running.Add(1)
		defer running.Add(-1)
		<-ctx.Done()
		return 0, ctx.Err()
	}
}

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

// TestGroupCollectErrors: with CollectErrors every task runs, nothing is
// cancelled, and Wait joins every error (a panic and a Goexit among them)
// in submission order, with the values of the tasks that succeeded.
func TestGroupCollectErrors(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		const n = 300
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(3))
		g := dispatcher.NewGroup[int](context.Background(), d, dispatcher.CollectErrors())
		var ran atomic.Int32
		for i := range n {
			require.NoError(t, g.Go(func(ctx context.Context) (int, error) {
				ran.Add(1)
				switch {
				case i == 100:
					panic("task 100")
				case i == 200:
					runtime.Goexit()
				case i%10 == 0:
					return 0, fmt.Errorf("task %d: %w", i, errBoom)
				}
				return i, ctx.Err()
			}))
		}
		res, err := waitGroup(t, g, 20*time.Second)
		require.Equal(t, int32(n), ran.Load(), "a failure cancels nothing")
		require.ErrorIs(t, err, errBoom)
		require.ErrorIs(t, err, dispatcher.ErrTaskPanicked)
		require.ErrorIs(t, err, dispatcher.ErrTaskExited)
		joined, isJoin := err.(interface{ Unwrap() []error })
		require.True(t, isJoin, "%T", err)
		errs := joined.Unwrap()
		require.Len(t, errs, n/10)
		for k, e := range errs {
			switch i := 10 * k; i {
			case 100:
				var pe *dispatcher.PanicError
				require.ErrorAs(t, e, &pe)
				require.Equal(t, "task 100", pe.Value)
			case 200:
				require.ErrorIs(t, e, dispatcher.ErrTaskExited)
			default:
				require.EqualError(t, e, fmt.Sprintf("task %d: boom", i), "errors in submission order")
			}
		}
		for i, v := range res {
			if i%10 != 0 {
				require.Equal(t, i, v)
			}
		}
		s := d.Stats()
		require.Equal(t, int64(1), s.Panics)
		require.Equal(t, int64(1), s.Goexits)
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

// TestGroupWaitWaitsForSubmit: a Go blocked for room when Wait starts is
// part of the group: Wait returns only once it is accepted and answered.
// (Only rings can tell that the Go is blocked; on channels a Go that had
// not begun may instead find the group done, but never gets lost.)
func TestGroupWaitWaitsForSubmit(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(1),
			dispatcher.WithWorkerBuffer(0), dispatcher.WithIntakeBuffer(0))
		g := dispatcher.NewGroup[int](context.Background(), d)
		release, started := make(chan struct{}), make(chan struct{})
		require.NoError(t, g.Go(func(context.Context) (int, error) { close(started); <-release; return 1, nil }))
		within(t, 10*time.Second, "start", func() { <-started })
		submitted := make(chan error, 1)
		go func() { submitted <- g.Go(ok(2)) }()
		if eng == dispatcher.Rings {
			require.Eventually(t, func() bool { return d.Stats().Blocked == 1 }, 10*time.Second, time.Millisecond)
		}
		time.AfterFunc(5*time.Millisecond, func() { close(release) }) // while Wait waits
		res, err := waitGroup(t, g, 10*time.Second)
		require.NoError(t, err)
		err = <-submitted
		if eng == dispatcher.Channels && errors.Is(err, dispatcher.ErrGroupDone) {
			require.Equal(t, []int{1}, res)
			return
		}
		require.NoError(t, err)
		require.Equal(t, []int{1, 2}, res)
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

// TestGroupTenantNameRefused: Tenant("") and Tenant(DefaultTenant) are
// bad options (ErrBadOption): the group runs nothing, its Go returns the
// error, TryGo reports false, Wait returns it, and no tenant line is
// added or fed; the same names given to a stream end it with the error.
func TestGroupTenantNameRefused(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(1))
		for _, name := range []string{"", dispatcher.DefaultTenant} {
			g := dispatcher.NewGroup[int](context.Background(), d, dispatcher.Tenant(name))
			err := g.Go(ok(1))
			require.ErrorIs(t, err, dispatcher.ErrBadOption, "Tenant(%q): Go", name)
			require.False(t, g.TryGo(ok(1)), "Tenant(%q)", name)
			_, err = waitGroup(t, g, 10*time.Second)
			require.ErrorIs(t, err, dispatcher.ErrBadOption, "Tenant(%q): Wait", name)
			require.ErrorIs(t, context.Cause(g.Context()), dispatcher.ErrBadOption, "Tenant(%q): the context's cause", name)

			var errs []error
			within(t, 10*time.Second, "Map", func() {
				for _, err := range dispatcher.Map(context.Background(), d, count(3, nil), square, dispatcher.Tenant(name)) {
					errs = append(errs, err)
				}
			})
			require.Len(t, errs, 1, "Tenant(%q)", name)
			require.ErrorIs(t, errs[0], dispatcher.ErrBadOption, "Tenant(%q)", name)
		}
		s := d.Stats()
		require.Zero(t, s.Dispatched, "a refused group or stream submitted")
		require.Len(t, s.Tenants, 1, "only the default tenant's line")
		require.Equal(t, dispatcher.DefaultTenant, s.Tenants[0].Name)
		require.Zero(t, s.Tenants[0].Completed)
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

// TestGroupPriorityOption: a group's Priority is its tasks' class, which
// its views change per task; under a schedule without classes its
// submits are refused with ErrWrongSchedule.
func TestGroupPriorityOption(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2), dispatcher.WithSchedule(dispatcher.ByPriority))
		g := dispatcher.NewGroup[int](context.Background(), d, dispatcher.Priority(3))
		for range 4 {
			require.NoError(t, g.Go(ok(1)))
		}
		require.NoError(t, g.Priority(5).Go(ok(1)))
		require.NoError(t, g.Key(9).Go(ok(1)), "a key keeps the group's class")
		_, err := g.Wait()
		require.NoError(t, err)
		require.NoError(t, d.Close(context.Background()))
		cls := d.Stats().Classes
		assert.Equal(t, int64(5), cls[3].Completed)
		assert.Equal(t, int64(1), cls[5].Completed)

		fifo := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(1))
		g = dispatcher.NewGroup[int](context.Background(), fifo, dispatcher.Priority(3))
		err = g.Go(ok(1))
		require.ErrorIs(t, err, dispatcher.ErrWrongSchedule)
		_, err = g.Wait()
		require.ErrorIs(t, err, dispatcher.ErrWrongSchedule)
		_, err = dispatcher.NewGroup[int](context.Background(), fifo, dispatcher.Priority(99)).Wait()
		require.ErrorIs(t, err, dispatcher.ErrBadOption)
	})
}
