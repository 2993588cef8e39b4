package dispatcher_test

import (
	"context"
	"fmt"
	"slices"
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

// TestDoneElapsedIsPerTask: the strategy is told each completion with
// the worker's mean task time ("busy time ... spread over the tasks it
// covers", policy.go account). One worker runs a queue of ten 2 ms tasks;
// no completion may be reported with several tasks' worth of time (three
// times the slowest task, as the task measured itself), whether
// completions are reaped together or one at a time (Stats, which reaps,
// read after each answer, as a balancer that keeps up with its workers
// does).
func TestDoneElapsedIsPerTask(t *testing.T) {
	for _, reapEach := range []bool{false, true} {
		t.Run(fmt.Sprintf("reapEach=%v", reapEach), func(t *testing.T) {
			forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
				s, err := strategies.New("round-robin", strategies.Equal(1))
				require.NoError(t, err)
				rec := &recording{Strategy: s}
				d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(1), dispatcher.WithWorkerBuffer(15), dispatcher.WithStrategy(rec))
				const n, task = 10, 2 * time.Millisecond
				// Each task's own duration, measured in the task: on a
				// loaded machine a 2 ms sleep takes several, and the bound
				// below is relative to what the tasks really took.
				var took [n]time.Duration
				var fs []*dispatcher.Future[int]
				for i := range n {
					f, err := dispatcher.Submit(context.Background(), d, func(context.Context) (int, error) {
						start := time.Now()
						time.Sleep(task)
						took[i] = time.Since(start)
						return i, nil
					})
					require.NoError(t, err)
					fs = append(fs, f)
				}
				for _, f := range fs {
					_, err := waitFuture(t, f, 10*time.Second)
					require.NoError(t, err)
					if reapEach {
						_ = d.Stats()
					}
				}
				_ = d.Stats() // reap
				rec.mu.Lock()
				defer rec.mu.Unlock()
				t.Logf("%v: elapsed per completion %v", eng, rec.elapsed)
				require.Len(t, rec.elapsed, n)
				longest, slowest := slices.Max(rec.elapsed), slices.Max(took[:])
				require.Less(t, longest, 3*slowest, "a completion was reported with %v, several tasks' worth of busy time (the slowest task took %v)", longest, slowest)
			})
		})
	}
}
