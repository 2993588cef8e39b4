package dispatcher_test

import (
	"context"
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

// zeroCtx is a valid context of size zero whose type is not comparable
// (a [0]func() field): the wrapper's reuse test takes any zero-size type
// as safe for ==, and == on two values of an uncomparable type panics.
type zeroCtx struct{ _ [0]func() }

func (zeroCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (zeroCtx) Done() <-chan struct{}       { return nil }
func (zeroCtx) Err() error                  { return nil }
func (zeroCtx) Value(any) any               { return nil }

// TestWorkerIndexZeroSizeUncomparableContext: two tasks in a row
// on one worker under such a context both run and answer; the second must
// not be answered with a panic the task never raised.
func TestWorkerIndexZeroSizeUncomparableContext(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(1), dispatcher.WithWorkerIndex())
		for k := range 3 {
			v, err := dispatcher.Do(zeroCtx{}, d, func(ctx context.Context) (int, error) { return k, nil })
			require.NoError(t, err, "task %d", k)
			require.Equal(t, k, v)
		}
	})
}

// TestWorkerIndexRemovedWorkerReleasesContext: a removed worker that
// has exited keeps no task context reachable. The pool keeps every worker
// it ever made (indices are never reused), and with them each worker's
// indexer, whose last wrapper pins the last context it wrapped: under
// -churn-like membership, one context (and all its values) per removed
// worker stays alive for the dispatcher's lifetime.
func TestWorkerIndexRemovedWorkerReleasesContext(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(1), dispatcher.WithWorkerIndex())
		_, err := d.AddWorker(1)
		require.NoError(t, err)
		require.NoError(t, d.RemoveWorker(1)) // only worker 0 is live: the task runs there
		type key struct{}
		big := make([]byte, 1<<20)
		wp := weak.Make(&big[0])
		ctx := context.WithValue(context.Background(), key{}, big)
		i, err := dispatcher.Do(ctx, d, func(ctx context.Context) (int, error) {
			i, _ := d.WorkerIndex(ctx)
			return i, nil
		})
		require.NoError(t, err)
		require.Equal(t, 0, i)
		_, err = d.AddWorker(1)
		require.NoError(t, err)
		require.NoError(t, d.RemoveWorker(0))
		require.Eventually(t, func() bool { return d.Stats().Workers[0].Pending == 0 }, 5*time.Second, time.Millisecond)
		ctx, big = nil, nil
		_ = ctx
		require.Eventually(t, func() bool { runtime.GC(); return wp.Value() == nil }, 2*time.Second, 10*time.Millisecond,
			"removed worker 0 still pins the last context it ran a task with")
	})
}
