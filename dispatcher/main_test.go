package dispatcher_test

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"testing"
	"time"

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
