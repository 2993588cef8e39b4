package dispatcher_test

import (
	"context"
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

// TestGroupLimit: never more than n of a group's tasks at once; with n
// active, TryGo reports false and Go waits; n < 1 is refused.
func TestGroupLimit(t *testing.T) {
	forEachSchedule(t, func(t *testing.T, s dispatcher.Schedule) {
		const limit, tasks = 2, 8
		d := newDispatcher(t, dispatcher.WithWorkers(4), dispatcher.WithSchedule(s))
		gate := make(chan struct{})
		var gateOnce sync.Once
		open := func() { gateOnce.Do(func() { close(gate) }) }
		t.Cleanup(open)
		var active, peak atomic.Int32
		task := func(v int) func(context.Context) (int, error) {
			return func(context.Context) (int, error) {
				n := active.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				<-gate
				active.Add(-1)
				return v, nil
			}
		}
		g := dispatcher.NewGroup[int](context.Background(), d, dispatcher.Limit(limit), dispatcher.Tenant("limited"))
		for i := range limit {
			require.NoError(t, g.Go(task(i)))
		}
		require.False(t, g.TryGo(task(-1)), "TryGo with %d active", limit)
		require.Eventually(t, func() bool { return active.Load() == limit }, scheduleBound, time.Millisecond)
		rest := make(chan error, 1)
		go func() {
			var err error
			for i := limit; i < tasks && err == nil; i++ {
				err = g.Go(task(i))
			}
			rest <- err
		}()
		select {
		case err := <-rest:
			t.Fatalf("Go did not wait with %d active: %v", limit, err)
		default:
		}
		open()
		within(t, scheduleBound, "the limited group", func() {
			assert.NoError(t, <-rest)
			vs, err := g.Wait()
			assert.NoError(t, err)
			assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7}, vs)
		})
		require.LessOrEqual(t, peak.Load(), int32(limit))
		require.Equal(t, int32(limit), peak.Load())

		for _, n := range []int{0, -1} {
			bad := dispatcher.NewGroup[int](context.Background(), d, dispatcher.Limit(n))
			require.ErrorIs(t, bad.Go(ok(1)), dispatcher.ErrBadOption)
			require.False(t, bad.TryGo(ok(1)))
			_, err := bad.Wait()
			require.ErrorIs(t, err, dispatcher.ErrBadOption)
		}
	})
}

// TestLimitWaitEndsAtClose: a Go waiting for a place under its group's
// Limit returns ErrClosed once Close begins, as a submit waiting for the
// intake does; it used to wait for a running task Close had given up on.
func TestLimitWaitEndsAtClose(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d, err := dispatcher.New(dispatcher.WithEngine(eng), dispatcher.WithWorkers(1))
		require.NoError(t, err)
		release, started := make(chan struct{}), make(chan struct{})
		g := dispatcher.NewGroup[int](context.Background(), d, dispatcher.Limit(1))
		require.NoError(t, g.Go(func(context.Context) (int, error) { close(started); <-release; return 0, nil }))
		<-started
		waiting := make(chan error, 1)
		go func() { waiting <- g.Go(ok(1)) }()
		cctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		require.ErrorIs(t, d.Close(cctx), context.DeadlineExceeded, "Close gives up on the running task")
		cancel()
		within(t, 10*time.Second, "the Go waiting under Limit", func() {
			require.ErrorIs(t, <-waiting, dispatcher.ErrClosed)
		})
		require.Error(t, g.Go(ok(2)), "the refusal cancelled the group: later Go calls are refused too")
		close(release)
		<-d.Done()
		_, err = g.Wait()
		require.Error(t, err)
	})
}
