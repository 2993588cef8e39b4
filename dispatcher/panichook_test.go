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

// panicLog records what a panic handler was called with.
type panicLog struct {
	mu     sync.Mutex
	values []any
	stacks []string
}

func (l *panicLog) handle(pe *dispatcher.PanicError) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.values = append(l.values, pe.Value)
	l.stacks = append(l.stacks, string(pe.Stack))
}

func (l *panicLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.values)
}

// TestPanicHandler: the handler is called once per panic of every kind of
// submit (Do, Submit, Go, a group's Go) with the value and the stack of
// the panicking task, before the requester has the answer.
func TestPanicHandler(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		var log panicLog
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2), dispatcher.WithPanicHandler(log.handle))
		ctx := context.Background()
		task := func(id int) func(context.Context) (int, error) {
			return func(context.Context) (int, error) { return panicTask(id) }
		}
		within(t, 10*time.Second, "panics", func() {
			_, err := dispatcher.Do(ctx, d, task(1))
			assert.ErrorIs(t, err, dispatcher.ErrTaskPanicked)
			assert.Equal(t, 1, log.len(), "called before Do returned")

			f, err := dispatcher.Submit(ctx, d, task(2))
			assert.NoError(t, err)
			_, err = f.Wait(ctx)
			assert.ErrorIs(t, err, dispatcher.ErrTaskPanicked)
			assert.Equal(t, 2, log.len(), "called before the future was answered")

			g := dispatcher.NewGroup[int](ctx, d)
			assert.NoError(t, g.Go(task(3)))
			_, err = g.Wait()
			assert.ErrorIs(t, err, dispatcher.ErrTaskPanicked)
			assert.Equal(t, 3, log.len(), "called before the group's Wait returned")

			assert.NoError(t, d.Go(ctx, func(ctx context.Context) error { _, err := task(4)(ctx); return err }))
		})
		require.Eventually(t, func() bool { return log.len() == 4 }, 10*time.Second, time.Millisecond, "Go's panic reaches the handler")
		log.mu.Lock()
		defer log.mu.Unlock()
		require.ElementsMatch(t, []any{"boom 1", "boom 2", "boom 3", "boom 4"}, log.values)
		for _, s := range log.stacks {
			require.Contains(t, s, "dispatcher_test.panicTask", "the stack names the task's function")
		}
		st := d.Stats()
		require.Equal(t, int64(4), st.Panics)
		require.Zero(t, st.PanicHandlerFailures)
	})
}

// TestPanicHandlerFails: a handler that panics (also with a nil value or
// an error) or calls runtime.Goexit is contained: each request is still
// answered exactly once with the task's *PanicError, the workers keep
// serving, and Stats counts every failure of the handler.
func TestPanicHandlerFails(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		const n, workers = 200, 3
		var calls sync.Map
		handler := func(pe *dispatcher.PanicError) {
			id := pe.Value.(int)
			_, again := calls.LoadOrStore(id, true)
			if again {
				panic(fmt.Sprintf("handler called twice for %d", id))
			}
			switch id % 4 {
			case 0:
				panic(fmt.Sprintf("handler %d", id))
			case 1:
				panic(errors.New("handler error"))
			case 2:
				runtime.Goexit()
			}
		}
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(workers), dispatcher.WithPanicHandler(handler))
		errs := make([]error, n)
		within(t, 20*time.Second, "panicking tasks", func() {
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					_, errs[i] = dispatcher.Do(context.Background(), d, func(context.Context) (int, error) { panic(i) })
				})
			}
			wg.Wait()
		})
		for i, err := range errs {
			var pe *dispatcher.PanicError
			require.ErrorAs(t, err, &pe, "request %d", i)
			require.Equal(t, i, pe.Value)
		}
		var v int
		var err error
		within(t, 10*time.Second, "Do after", func() { v, err = dispatcher.Do(context.Background(), d, ok(5)) })
		require.NoError(t, err)
		require.Equal(t, 5, v)
		s := d.Stats()
		require.Equal(t, int64(n), s.Panics)
		require.Equal(t, int64(3*n/4), s.PanicHandlerFailures)
		// A handler's Goexit costs its goroutine, replaced, and counted
		// before the answer given on its way out.
		require.Equal(t, int64(n/4), s.Replaced)
		require.Equal(t, int64(n+1), s.Completed)
		for _, w := range s.Workers {
			require.False(t, w.Removed)
		}
	})
}

// TestPanicHandlerOption: a nil handler and a second handler are refused.
func TestPanicHandlerOption(t *testing.T) {
	_, err := dispatcher.New(dispatcher.WithPanicHandler(nil))
	require.ErrorIs(t, err, dispatcher.ErrBadOption)
	h := func(*dispatcher.PanicError) {}
	_, err = dispatcher.New(dispatcher.WithPanicHandler(h), dispatcher.WithPanicHandler(h))
	require.ErrorIs(t, err, dispatcher.ErrBadOption)
}

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

// TestWorkerSurvivesPanicGoexitMix: tasks that mix panic, recover and
// runtime.Goexit in the orders the runtime allows, on the only worker.
// Each is answered once with a failure, and the worker (or its
// replacement) serves the next Do; Close returns. A worker that lost
// track of which way its task left would answer twice, not at all, or
// leave no goroutine to run the next request, and with one worker the
// next Do or Close would hang.
func TestWorkerSurvivesPanicGoexitMix(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) { survivePanicGoexitMix(t, eng) })
}

func survivePanicGoexitMix(t *testing.T, eng dispatcher.Engine) {
	for _, tc := range []struct {
		name string
		task func()
		want error // the fault's answer
		val  any   // the *PanicError's value, if want is ErrTaskPanicked
		pnil bool  // the value is a *runtime.PanicNilError
	}{
		{
			name: "panic in a deferred call during Goexit",
			task: func() {
				defer func() { panic("boom") }()
				runtime.Goexit()
			},
			want: dispatcher.ErrTaskPanicked, val: "boom",
		},
		{
			name: "re-panic in a deferred call after recover",
			task: func() {
				defer func() {
					if v := recover(); v != nil {
						panic(fmt.Sprintf("again: %v", v))
					}
				}()
				panic("first")
			},
			want: dispatcher.ErrTaskPanicked, val: "again: first",
		},
		{
			name: "panic(nil)",
			task: func() { panic(nil) },
			want: dispatcher.ErrTaskPanicked, pnil: true,
		},
		{
			name: "Goexit in a deferred call during a panic",
			task: func() {
				defer runtime.Goexit()
				panic("boom")
			},
			want: dispatcher.ErrTaskExited,
		},
		{
			name: "recover then Goexit in one deferred call",
			task: func() {
				defer func() {
					recover()
					runtime.Goexit()
				}()
				panic("boom")
			},
			want: dispatcher.ErrTaskExited,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			{
				const bound = 10 * time.Second
				d, err := dispatcher.New(dispatcher.WithEngine(eng), dispatcher.WithWorkers(1))
				require.NoError(t, err)
				// Twice: the replacement goroutine must survive the same
				// fault as the first.
				for round := range 2 {
					var ferr, nerr error
					var v int
					within(t, bound, "the fault's answer", func() {
						_, ferr = dispatcher.Do(context.Background(), d, func(context.Context) (int, error) { tc.task(); return 0, nil })
					})
					require.ErrorIs(t, ferr, tc.want, "round %d", round)
					if tc.want == dispatcher.ErrTaskPanicked {
						var pe *dispatcher.PanicError
						require.ErrorAs(t, ferr, &pe)
						if tc.pnil {
							var pn *runtime.PanicNilError
							assert.ErrorAs(t, ferr, &pn)
						} else {
							assert.Equal(t, tc.val, pe.Value)
						}
					}
					within(t, bound, "the next Do", func() { v, nerr = dispatcher.Do(context.Background(), d, ok(round)) })
					require.NoError(t, nerr, "round %d", round)
					require.Equal(t, round, v)
				}
				var cerr error
				within(t, bound, "Close", func() { cerr = d.Close(context.Background()) })
				require.NoError(t, cerr)
				s := d.Stats()
				require.Equal(t, int64(4), s.Completed)
				require.Equal(t, s.Dispatched, s.Completed)
			}
		})
	}
}

// TestSlowPanicHandlerStallsNothingElse: a panic handler that blocks
// keeps its own worker busy and nothing else: with the channel engine at
// worker buffer 0 the balancer used to count that worker free, block
// sending to it, and hang Stats and every other worker's traffic.
func TestSlowPanicHandlerStallsNothingElse(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		release := make(chan struct{})
		inHandler := make(chan struct{}, 1)
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2),
			dispatcher.WithWorkerBuffer(0), // least-pending: the other worker takes the traffic
			dispatcher.WithPanicHandler(func(*dispatcher.PanicError) {
				inHandler <- struct{}{}
				<-release
			}))
		defer close(release)
		f, err := dispatcher.Submit(context.Background(), d, func(context.Context) (int, error) { panic("boom") })
		require.NoError(t, err)
		<-inHandler
		within(t, 10*time.Second, "traffic beside a blocked panic handler", func() {
			for k := range 20 {
				v, err := dispatcher.Do(context.Background(), d, ok(k))
				require.NoError(t, err)
				require.Equal(t, k, v)
			}
			s := d.Stats()
			require.Equal(t, 1, s.Pending, "the panicking task counts as running while its handler runs")
		})
		select {
		case <-f.Done():
			t.Fatal("answered before the handler returned")
		default:
		}
	})
}
