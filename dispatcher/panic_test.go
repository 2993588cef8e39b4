package dispatcher_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

// TestPanicsContained: 1000 panicking tasks then 1000 normal ones on 4
// workers. Every panic is an error wrapping ErrTaskPanicked whose
// *PanicError has the value and a stack naming the task's function; every
// normal task succeeds; the 4 workers are alive and each serves.
func TestPanicsContained(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		const n, workers = 1000, 4
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(workers))
		errs := make([]error, n)
		within(t, 20*time.Second, "panicking tasks", func() {
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					_, errs[i] = dispatcher.Do(context.Background(), d, func(context.Context) (int, error) { return panicTask(i) })
				})
			}
			wg.Wait()
		})
		for i, err := range errs {
			require.ErrorIs(t, err, dispatcher.ErrTaskPanicked)
			var pe *dispatcher.PanicError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, fmt.Sprintf("boom %d", i), pe.Value)
			require.Contains(t, string(pe.Stack), "dispatcher_test.panicTask", "the stack names the task's function")
			require.Contains(t, err.Error(), fmt.Sprintf("boom %d", i))
		}
		before := d.Stats()

		within(t, 20*time.Second, "normal tasks", func() {
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					v, err := dispatcher.Do(context.Background(), d, func(context.Context) (int, error) {
						burn(20 * time.Microsecond)
						return i, nil
					})
					assert.NoError(t, err)
					assert.Equal(t, i, v)
				})
			}
			wg.Wait()
		})
		after := d.Stats()
		require.Len(t, after.Workers, workers)
		require.Zero(t, after.Replaced, "a panic does not cost the worker its goroutine")
		require.Equal(t, int64(2*n), after.Completed)
		for i, w := range after.Workers {
			assert.False(t, w.Removed)
			assert.Greater(t, w.Completed, before.Workers[i].Completed, "worker %d served after the panics", i)
		}
	})
}

// TestPanicErrorUnwrap: a panic whose value is an error unwraps to it.
func TestPanicErrorUnwrap(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		sentinel := errors.New("inner")
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(1))
		var err error
		within(t, 10*time.Second, "Do", func() {
			_, err = dispatcher.Do(context.Background(), d, func(context.Context) (int, error) { panic(sentinel) })
		})
		require.ErrorIs(t, err, dispatcher.ErrTaskPanicked)
		require.ErrorIs(t, err, sentinel)

		// panic(nil) is a *runtime.PanicNilError since Go 1.21: still a panic.
		within(t, 10*time.Second, "Do", func() {
			_, err = dispatcher.Do(context.Background(), d, func(context.Context) (int, error) { panic(nil) })
		})
		require.ErrorIs(t, err, dispatcher.ErrTaskPanicked)
		var pn *runtime.PanicNilError
		require.ErrorAs(t, err, &pn)
	})
}

// TestGoexitContained: a task calling runtime.Goexit yields ErrTaskExited,
// its worker's goroutine is replaced (Stats.Replaced), the dispatcher keeps
// serving and Close still returns.
func TestGoexitContained(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		for _, tc := range []struct {
			name            string
			workers, buffer int
			exits           int
		}{
			{"workers=1/buffer=0", 1, 0, 1},
			{"workers=1/buffer=4", 1, 4, 20},
			{"workers=4/buffer=16", 4, 16, 200},
		} {
			t.Run(tc.name, func(t *testing.T) {
				d, err := dispatcher.New(dispatcher.WithEngine(eng), dispatcher.WithWorkers(tc.workers), dispatcher.WithWorkerBuffer(tc.buffer))
				require.NoError(t, err)
				within(t, 20*time.Second, "Goexit tasks and normal tasks", func() {
					var wg sync.WaitGroup
					for i := range tc.exits {
						wg.Go(func() {
							_, err := dispatcher.Do(context.Background(), d, func(context.Context) (int, error) {
								runtime.Goexit()
								return 0, nil
							})
							assert.ErrorIs(t, err, dispatcher.ErrTaskExited)
						})
						wg.Go(func() {
							v, err := dispatcher.Do(context.Background(), d, ok(i))
							assert.NoError(t, err)
							assert.Equal(t, i, v)
						})
					}
					wg.Wait()
				})
				s := d.Stats()
				require.Equal(t, int64(tc.exits), s.Replaced)
				require.Equal(t, int64(2*tc.exits), s.Completed)
				// Every worker still serves after its replacement.
				var v int
				within(t, 10*time.Second, "Do after the replacements", func() { v, err = dispatcher.Do(context.Background(), d, ok(7)) })
				require.NoError(t, err)
				require.Equal(t, 7, v)
				closeWithin(t, d, 10*time.Second)
				require.Equal(t, int64(tc.exits), d.Stats().Replaced)
			})
		}
	})
}
