package dispatcher_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
	"github.com/gobalancer/balancer/strategies"
)

// recording is a strategy that records the elapsed time the balancer
// reports with each completion (the worker's mean task time, design.md).
type recording struct {
	strategies.Strategy
	mu      sync.Mutex
	elapsed []time.Duration
}

func (r *recording) Done(i int, elapsed time.Duration) {
	r.mu.Lock()
	r.elapsed = append(r.elapsed, elapsed)
	r.mu.Unlock()
	r.Strategy.Done(i, elapsed)
}

// TestReviewDoneElapsedIsPerTask: the strategy is told each completion with
// the worker's mean task time ("busy time ... spread over the tasks it
// covers", policy.go account). One worker runs a queue of ten 2 ms tasks;
// no completion may be reported with several tasks' worth of time.
func TestReviewDoneElapsedIsPerTask(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		s, err := strategies.New("round-robin", strategies.Equal(1))
		require.NoError(t, err)
		rec := &recording{Strategy: s}
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(1), dispatcher.WithWorkerBuffer(15), dispatcher.WithStrategy(rec))
		const n, task = 10, 2 * time.Millisecond
		var fs []*dispatcher.Future[int]
		for i := range n {
			f, err := d.Submit(context.Background(), func(context.Context) (int, error) { time.Sleep(task); return i, nil })
			require.NoError(t, err)
			fs = append(fs, f)
		}
		for _, f := range fs {
			_, err := waitFuture(t, f, 10*time.Second)
			require.NoError(t, err)
		}
		_ = d.Stats() // reap
		rec.mu.Lock()
		defer rec.mu.Unlock()
		var max time.Duration
		for _, e := range rec.elapsed {
			max = maxDur(max, e)
		}
		t.Logf("%v: elapsed per completion %v", eng, rec.elapsed)
		require.Len(t, rec.elapsed, n)
		require.Less(t, max, 3*task, "a completion was reported with %v, several tasks' worth of busy time (tasks take %v)", max, task)
	})
}

func maxDur(a, b time.Duration) time.Duration {
	if a > b {
		return a
	}
	return b
}

// TestReviewDoneElapsedIsPerTaskReapedEach: as above, but Stats (which
// reaps) is read after each answer, so completions are reaped one at a
// time on both engines, as a balancer that keeps up with its workers does.
func TestReviewDoneElapsedIsPerTaskReapedEach(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		s, err := strategies.New("round-robin", strategies.Equal(1))
		require.NoError(t, err)
		rec := &recording{Strategy: s}
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(1), dispatcher.WithWorkerBuffer(15), dispatcher.WithStrategy(rec))
		const n, task = 10, 2 * time.Millisecond
		var fs []*dispatcher.Future[int]
		for i := range n {
			f, err := d.Submit(context.Background(), func(context.Context) (int, error) { time.Sleep(task); return i, nil })
			require.NoError(t, err)
			fs = append(fs, f)
		}
		for _, f := range fs {
			_, err := waitFuture(t, f, 10*time.Second)
			require.NoError(t, err)
			_ = d.Stats()
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		var max time.Duration
		for _, e := range rec.elapsed {
			max = maxDur(max, e)
		}
		t.Logf("%v: elapsed per completion %v", eng, rec.elapsed)
		require.Len(t, rec.elapsed, n)
		require.Less(t, max, 3*task, "a completion was reported with %v, several tasks' worth of busy time (tasks take %v)", max, task)
	})
}
