package dispatcher_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

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
