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
