package dispatcher_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/gobalancer/balancer/dispatcher"
)

// TestMain fails the package if any test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// within runs f on its own goroutine and fails the test with a message
// naming what hung if f has not returned after d, so a hang is reported by
// the test itself instead of the binary's global timeout. f must not call
// t.FailNow (use assert, not require, inside it).
func within(t testing.TB, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		// Print at once, with every goroutine's stack: a hang's evidence,
		// which the test's buffered output might not get to show.
		fmt.Fprintf(os.Stderr, "%s: %s: not done within %v\n", t.Name(), what, d)
		_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
		t.Fatalf("%s: not done within %v (a hang or deadlock)", what, d)
	}
}

// engines and schedules list every engine and schedule, in the order the
// tests and benchmarks show them.
var (
	engines   = []dispatcher.Engine{dispatcher.Channels, dispatcher.Rings}
	schedules = []dispatcher.Schedule{dispatcher.FIFO, dispatcher.ByPriority, dispatcher.ByDeadline, dispatcher.Fair}
)

// forEachEngine runs f as one subtest per engine, named engine=channels
// and engine=rings: both engines promise every guarantee, so each test
// proves it on both with the same code.
func forEachEngine(t *testing.T, f func(t *testing.T, eng dispatcher.Engine)) {
	t.Helper()
	for _, eng := range engines {
		t.Run("engine="+eng.String(), func(t *testing.T) { f(t, eng) })
	}
}

// completionCell is one value of the completion axis.
type completionCell struct {
	name string // "" when the engine has no such axis
	opts []dispatcher.Option
}

// completionAxis returns the completion cells of eng for n workers: an
// unbuffered and an n-buffered completion channel on the channel engine;
// on rings, which has no completion channel and refuses the option, one
// cell without it, so the axis is dropped rather than repeated.
func completionAxis(eng dispatcher.Engine, n int) []completionCell {
	if eng != dispatcher.Channels {
		return []completionCell{{}}
	}
	return []completionCell{
		{"unbuffered", []dispatcher.Option{dispatcher.WithCompletionBuffer(0)}},
		{fmt.Sprintf("buffered-%d", n), []dispatcher.Option{dispatcher.WithCompletionBuffer(n)}},
	}
}

// newDispatcher builds a dispatcher of ints and closes it when the test
// ends, failing the test if that close does not finish in time.
func newDispatcher(t testing.TB, opts ...dispatcher.Option) *dispatcher.Dispatcher {
	t.Helper()
	d, err := dispatcher.New(opts...)
	require.NoError(t, err)
	t.Cleanup(func() { closeWithin(t, d, 20*time.Second) })
	return d
}

// closeWithin closes d, requires success, and waits for Done, all within
// bound.
func closeWithin(t testing.TB, d *dispatcher.Dispatcher, bound time.Duration) {
	t.Helper()
	var err error
	within(t, bound, "Close", func() {
		err = d.Close(context.Background())
		<-d.Done()
	})
	require.NoError(t, err)
}

// waitFuture waits for f's answer within bound.
func waitFuture(t testing.TB, f *dispatcher.Future[int], bound time.Duration) (int, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	select {
	case <-f.Done():
	case <-ctx.Done():
		t.Fatalf("future not answered within %v", bound)
	}
	return f.Wait(context.Background())
}

// ok is a task that returns v.
func ok(v int) func(context.Context) (int, error) {
	return func(context.Context) (int, error) { return v, nil }
}

// bubbleDispatcher builds a dispatcher inside a synctest bubble; stop it
// with closeBubble before the bubble's function returns.
func bubbleDispatcher(t *testing.T, opts ...dispatcher.Option) *dispatcher.Dispatcher {
	t.Helper()
	d, err := dispatcher.New(opts...)
	require.NoError(t, err)
	return d
}

func closeBubble(t *testing.T, d *dispatcher.Dispatcher) {
	t.Helper()
	require.NoError(t, d.Close(context.Background()))
	<-d.Done()
}

// blocker returns a task that holds its worker until release is closed.
func blocker(release <-chan struct{}) func(context.Context) (int, error) {
	return func(context.Context) (int, error) { <-release; return -1, nil }
}

// burn spins the CPU for about d, so tasks are real work.
func burn(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

// panicTask is a named function so the test can find it in a PanicError's
// stack.
func panicTask(id int) (int, error) { panic(fmt.Sprintf("boom %d", id)) }

// fixedStrategy always picks the same index, valid or not.
type fixedStrategy struct{ pick int }

func (s *fixedStrategy) Pick(uint64) int         { return s.pick }
func (s *fixedStrategy) Done(int, time.Duration) {}

// checkQuiescent checks Stats of a dispatcher with nothing in flight.
func checkQuiescent(t *testing.T, s dispatcher.Stats, answered int64) {
	t.Helper()
	var pend int
	comp := s.RetiredCompleted
	for _, w := range s.Workers {
		pend += w.Pending
		comp += w.Completed
		assert.GreaterOrEqual(t, w.Pending, 0, "worker %d pending", w.Index)
	}
	assert.Equal(t, s.Pending, pend, "Pending != sum of worker Pending")
	assert.Equal(t, s.Completed, comp, "Completed != RetiredCompleted + sum of worker Completed")
	assert.Equal(t, s.Dispatched, s.Completed, "Dispatched != Completed after quiescence")
	assert.Zero(t, s.Pending, "Pending after quiescence")
	assert.False(t, s.Held, "Held after quiescence")
	assert.Equal(t, answered, s.Completed, "Completed != answers")
}

const scheduleBound = 10 * time.Second

// forEachSchedule runs f as one subtest per schedule.
func forEachSchedule(t *testing.T, f func(t *testing.T, s dispatcher.Schedule)) {
	t.Helper()
	for _, s := range schedules {
		t.Run("schedule="+s.String(), func(t *testing.T) { f(t, s) })
	}
}

// requestLoop runs requesters goroutines that each Do per requests in turn,
// every task returning its own id, and counts the correct answers.
// Requester g uses routing key g, so affinity strategies spread the
// requesters instead of sending all to the worker of key 0.
func requestLoop(t *testing.T, d *dispatcher.Dispatcher, requesters, per int, answered *atomic.Int64) {
	var wg sync.WaitGroup
	for g := range requesters {
		key := d.Key(uint64(g))
		wg.Go(func() {
			for k := range per {
				id := g*per + k
				v, err := dispatcher.Do(context.Background(), key, func(context.Context) (int, error) {
					if id%3 == 0 {
						runtime.Gosched() // vary completion order
					}
					return id, nil
				})
				if errors.Is(err, dispatcher.ErrClosed) {
					// Only after the cell's bound failed the test and its
					// cleanup closed d: stop without touching t.
					return
				}
				if !assert.NoError(t, err) || !assert.Equal(t, id, v) {
					return
				}
				answered.Add(1)
			}
		})
	}
	wg.Wait()
}

// seq returns 0..n-1.
func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// count is the input 0, 1, ..., n-1, noting in pulled how many items
// were read.
func count(n int, pulled *atomic.Int64) iter.Seq[int] {
	return func(yield func(int) bool) {
		for i := range n {
			if pulled != nil {
				pulled.Add(1)
			}
			if !yield(i) {
				return
			}
		}
	}
}

// square is a task that returns its item squared.
func square(_ context.Context, x int) (int, error) { return x * x, nil }

// collect ranges over seq within a bound and returns what it yielded.
func collect(t *testing.T, seq iter.Seq2[int, error]) (vals []int, errs []error) {
	t.Helper()
	within(t, 10*time.Second, "range over Map", func() {
		for v, err := range seq {
			vals = append(vals, v)
			errs = append(errs, err)
		}
	})
	return vals, errs
}

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

// forEachOrder runs f as one subtest per engine and order of Results:
// order=submission (the default) and order=completion (CompletionOrder).
func forEachOrder(t *testing.T, f func(t *testing.T, eng dispatcher.Engine, completion bool)) {
	t.Helper()
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		for _, completion := range []bool{false, true} {
			name := "order=submission"
			if completion {
				name = "order=completion"
			}
			t.Run(name, func(t *testing.T) { f(t, eng, completion) })
		}
	})
}

// groupIn makes a group whose Results are in completion order or not.
func groupIn(d *dispatcher.Dispatcher, completion bool, opts ...dispatcher.GroupOption) *dispatcher.Group[int] {
	if completion {
		opts = append(opts, dispatcher.CompletionOrder())
	}
	return dispatcher.NewGroup[int](context.Background(), d, opts...)
}
