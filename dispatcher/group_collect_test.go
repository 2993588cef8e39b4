package dispatcher_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

// TestGroupResultsBreakCompletion: leaving a completion-order range early
// cancels the group and returns once no task runs; the group is done.
func TestGroupResultsBreakCompletion(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		// ok(5), second, goes to the idle worker (least-pending), not
		// behind the first blocking task.
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		g := groupIn(d, true)
		var running atomic.Int64
		blocking := whileRunning(&running)
		require.NoError(t, g.Go(blocking))
		require.NoError(t, g.Go(ok(5)))
		for range 9 {
			require.NoError(t, g.Go(blocking))
		}
		within(t, 10*time.Second, "break", func() {
			for v, err := range g.Results() {
				assert.NoError(t, err)
				assert.Equal(t, 5, v, "the only task that finishes on its own")
				break
			}
		})
		require.Zero(t, running.Load())
		require.ErrorIs(t, g.Context().Err(), context.Canceled)
		res, err := g.Wait()
		require.Nil(t, res)
		require.ErrorIs(t, err, context.Canceled)
		require.ErrorIs(t, g.Go(ok(1)), dispatcher.ErrGroupDone)
		_, errs := collect(t, g.Results())
		require.Len(t, errs, 1)
		require.ErrorIs(t, errs[0], dispatcher.ErrGroupDone)
	})
}

// TestGroupResultsErrors: by default the first failure is yielded, cancels
// the group (the running tasks yield their cancellation) and is Wait's
// error; with CollectErrors every task runs, each error is yielded beside
// its task, and Wait joins them in submission order whatever the order of
// the range. Panics and Goexits are their tasks' errors.
func TestGroupResultsErrors(t *testing.T) {
	forEachOrder(t, func(t *testing.T, eng dispatcher.Engine, completion bool) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(3))

		g := groupIn(d, completion)
		var ran atomic.Int32
		fail := make(chan struct{})
		// First, so it has a worker: it fails once the others are in.
		require.NoError(t, g.Go(func(context.Context) (int, error) { <-fail; return 0, errBoom }))
		for range 5 {
			require.NoError(t, g.Go(untilCancelled(&ran)))
		}
		close(fail)
		vals, errs := collect(t, g.Results())
		require.Len(t, errs, 6)
		require.Equal(t, make([]int, 6), vals)
		booms, cancels := 0, 0
		for _, err := range errs {
			switch {
			case errors.Is(err, errBoom):
				booms++
			case errors.Is(err, context.Canceled):
				cancels++
			}
		}
		require.Equal(t, 1, booms)
		require.Equal(t, 5, cancels)
		require.ErrorIs(t, context.Cause(g.Context()), errBoom)
		_, err := g.Wait()
		require.ErrorIs(t, err, errBoom)
		require.NotErrorIs(t, err, context.Canceled, "the failure, not what it caused")

		g = groupIn(d, completion, dispatcher.CollectErrors())
		const n = 60
		for i := range n {
			require.NoError(t, g.Go(func(context.Context) (int, error) {
				switch {
				case i == 10:
					return panicTask(i)
				case i == 20:
					runtime.Goexit()
				case i%10 == 5:
					return i, fmt.Errorf("task %d: %w", i, errBoom)
				}
				return i, nil
			}))
		}
		got := map[int]bool{}
		within(t, 10*time.Second, "range", func() {
			for v, err := range g.Results() {
				switch {
				case errors.Is(err, dispatcher.ErrTaskPanicked):
					var pe *dispatcher.PanicError
					assert.ErrorAs(t, err, &pe)
					assert.Equal(t, "boom 10", pe.Value)
				case errors.Is(err, dispatcher.ErrTaskExited):
				case err != nil:
					assert.EqualError(t, err, fmt.Sprintf("task %d: boom", v))
					got[v] = true
				default:
					got[v] = true
				}
			}
		})
		require.Len(t, got, n-2, "every other task ran and was yielded")
		_, err = g.Wait()
		joined, isJoin := err.(interface{ Unwrap() []error })
		require.True(t, isJoin, "%T", err)
		errs = joined.Unwrap()
		require.Len(t, errs, 2+n/10)
		require.ErrorIs(t, errs[0], errBoom) // task 5
		require.ErrorIs(t, errs[1], dispatcher.ErrTaskPanicked)
		require.ErrorIs(t, errs[2], errBoom) // task 15
		require.ErrorIs(t, errs[3], dispatcher.ErrTaskExited)
		for k, e := range errs[4:] {
			require.EqualError(t, e, fmt.Sprintf("task %d: boom", 25+10*k), "submission order")
		}
		require.Equal(t, int64(1), d.Stats().Panics)
	})
}

// TestGroupResultsParentCancelled: when the parent context ends mid-range
// the running tasks see it, the queued ones end without running, a Go is
// refused with it (its refusal yielded in turn), and the range ends.
func TestGroupResultsParentCancelled(t *testing.T) {
	forEachOrder(t, func(t *testing.T, eng dispatcher.Engine, completion bool) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		parent, cancel := context.WithCancel(context.Background())
		defer cancel()
		opts := []dispatcher.GroupOption{}
		if completion {
			opts = append(opts, dispatcher.CompletionOrder())
		}
		g := dispatcher.NewGroup[int](parent, d, opts...)
		var ran atomic.Int32
		const n = 30
		require.NoError(t, g.Go(ok(1)))
		for range n {
			require.NoError(t, g.Go(untilCancelled(&ran)))
		}
		k := 0
		var errs []error
		within(t, 10*time.Second, "range", func() {
			for v, err := range g.Results() {
				k++
				if k == 1 {
					assert.NoError(t, err)
					assert.Equal(t, 1, v)
					cancel()
					assert.ErrorIs(t, g.Go(ok(2)), context.Canceled)
					continue
				}
				errs = append(errs, err)
			}
		})
		require.Len(t, errs, n+1, "every task and the refused Go")
		for _, err := range errs {
			require.ErrorIs(t, err, context.Canceled)
		}
		require.Less(t, int(ran.Load()), n, "queued tasks ended without running")
		_, err := g.Wait()
		require.ErrorIs(t, err, context.Canceled)
	})
}

// TestGroupResultsEmpty: an empty group's range yields nothing and ends;
// the group is then done, with no error. A group not made by
// NewGroup yields ErrNotStarted.
func TestGroupResultsEmpty(t *testing.T) {
	forEachOrder(t, func(t *testing.T, eng dispatcher.Engine, completion bool) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(1))
		g := groupIn(d, completion)
		vals, errs := collect(t, g.Results())
		require.Empty(t, vals)
		require.Empty(t, errs)
		res, err := g.Wait()
		require.NoError(t, err)
		require.Empty(t, res)
		require.ErrorIs(t, g.Go(ok(1)), dispatcher.ErrGroupDone)

		var zero dispatcher.Group[int]
		_, errs = collect(t, zero.Results())
		require.Len(t, errs, 1)
		require.ErrorIs(t, errs[0], dispatcher.ErrNotStarted)
	})
}

// TestGroupResultsPanicInBody: a panic in the loop body leaves the group
// for Wait or another range: a completion-order range picks up where the
// panic left it, and nothing is yielded twice or lost.
func TestGroupResultsPanicInBody(t *testing.T) {
	forEachOrder(t, func(t *testing.T, eng dispatcher.Engine, completion bool) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		g := groupIn(d, completion)
		const n = 20
		for i := range n {
			require.NoError(t, g.Go(ok(i)))
		}
		_ = d.Stats() // let the answers come in, so a batch is taken at once
		var got []int
		var p any
		within(t, 10*time.Second, "panic", func() {
			defer func() { p = recover() }()
			for v := range g.Results() {
				got = append(got, v)
				if len(got) == 3 {
					panic("body")
				}
			}
		})
		require.Equal(t, "body", p)
		vals, errs := collect(t, g.Results())
		for _, err := range errs {
			require.NoError(t, err)
		}
		got = append(got, vals...)
		if completion {
			slices.Sort(got)
		}
		require.Equal(t, seq(n), got)
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

// TestGroupWaitZeroForFailed: Wait's slice has the zero value for every
// task that failed, whatever the task returned beside its error (and for
// every task that never ran), and the task's value for every task that
// succeeded. Before, a failed task's value was kept. Results is unchanged:
// it yields each task's value beside its error. Both error modes, on both
// engines, under every schedule.
func TestGroupWaitZeroForFailed(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		forEachSchedule(t, func(t *testing.T, sched dispatcher.Schedule) {
			for _, collect := range []bool{false, true} {
				t.Run(fmt.Sprintf("collect=%v", collect), func(t *testing.T) {
					d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(3), dispatcher.WithSchedule(sched))
					var opts []dispatcher.GroupOption
					if collect {
						opts = append(opts, dispatcher.CollectErrors())
					}
					g := dispatcher.NewGroup[int](context.Background(), d, opts...)
					const n = 60
					var mu sync.Mutex
					outcome := map[int]error{} // the tasks that ran, and what they returned
					failAt := make(chan struct{})
					for i := range n {
						require.NoError(t, g.Go(func(ctx context.Context) (int, error) {
							var err error
							if i%4 == 1 {
								// Fails once every task is in the group: a
								// cancelled group would refuse the later Go calls.
								<-failAt
								err = fmt.Errorf("task %d: %w", i, errBoom)
							} else {
								err = ctx.Err()
							}
							mu.Lock()
							outcome[i] = err
							mu.Unlock()
							return i + 1, err // a value beside the error, too
						}))
					}
					close(failAt)
					res, err := waitGroup(t, g, 10*time.Second)
					require.ErrorIs(t, err, errBoom)
					require.Len(t, res, n)
					mu.Lock()
					defer mu.Unlock()
					failed := 0
					for i, v := range res {
						taskErr, ran := outcome[i]
						if ran && taskErr == nil {
							require.Equal(t, i+1, v, "task %d succeeded: its value", i)
							continue
						}
						failed++
						require.Zero(t, v, "task %d failed (ran: %v, %v): the zero value", i, ran, taskErr)
					}
					require.Positive(t, failed)
					if collect {
						require.Len(t, outcome, n, "a failure cancels nothing")
						require.Equal(t, n/4, failed, "the tasks that return an error")
					}
				})
			}
		})
	})
}

// TestGroupResultsKeepFailedValue: Results, unlike Wait, yields what a
// failed task returned beside its error.
func TestGroupResultsKeepFailedValue(t *testing.T) {
	forEachOrder(t, func(t *testing.T, eng dispatcher.Engine, completion bool) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		g := groupIn(d, completion, dispatcher.CollectErrors())
		for i := range 6 {
			require.NoError(t, g.Go(func(context.Context) (int, error) {
				if i%2 == 1 {
					return i + 1, errBoom
				}
				return i + 1, nil
			}))
		}
		vals, errs := collect(t, g.Results())
		require.Len(t, vals, 6)
		sum := 0
		for k, v := range vals {
			sum += v
			if v%2 == 0 { // task v-1, odd: failed
				require.ErrorIs(t, errs[k], errBoom)
			} else {
				require.NoError(t, errs[k])
			}
		}
		require.Equal(t, 21, sum, "every value yielded, the failed tasks' included")
		res, err := g.Wait()
		require.Nil(t, res)
		require.ErrorIs(t, err, errBoom)
	})
}

// TestGroupResultsBreak: leaving the range cancels the group and returns
// once every task is done; Wait then returns at once; a panic in the
// body leaves the group for Wait to collect.
func TestGroupResultsBreak(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		var running atomic.Int64
		blocking := whileRunning(&running)
		g := dispatcher.NewGroup[int](context.Background(), d)
		require.NoError(t, g.Go(ok(5)))
		for range 10 {
			require.NoError(t, g.Go(blocking))
		}
		within(t, 5*time.Second, "break", func() {
			for v := range g.Results() {
				assert.Equal(t, 5, v)
				break
			}
		})
		require.Zero(t, running.Load())
		res, err := g.Wait()
		require.Nil(t, res, "the range took the values")
		require.ErrorIs(t, err, context.Canceled)

		g = dispatcher.NewGroup[int](context.Background(), d)
		require.NoError(t, g.Go(ok(1)))
		require.NoError(t, g.Go(ok(2)))
		var p any
		within(t, 5*time.Second, "panic", func() {
			defer func() { p = recover() }()
			for range g.Results() {
				panic("body")
			}
		})
		require.Equal(t, "body", p)
		within(t, 5*time.Second, "Wait", func() {
			res, err = g.Wait()
		})
		require.NoError(t, err)
		require.Nil(t, res, "once a range has begun, the group keeps no values")

		var zero dispatcher.Group[int]
		_, errs := collect(t, zero.Results())
		require.Len(t, errs, 1)
		require.ErrorIs(t, errs[0], dispatcher.ErrNotStarted)
		_, errs = collect(t, (*dispatcher.Group[int])(nil).Results())
		require.ErrorIs(t, errs[0], dispatcher.ErrNotStarted)
	})
}
