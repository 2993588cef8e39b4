package dispatcher_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

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

// TestGroupDropsFinishedTasks: a group keeps a task's result, not the task:
// 100 tasks each capturing 64 KiB are collectable once they have run,
// before Wait. Likewise a Future's task before Release.
func TestGroupDropsFinishedTasks(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		var freed, ran atomic.Int64
		g := dispatcher.NewGroup[int](context.Background(), d)
		const n = 100
		for range n {
			buf := make([]byte, 64<<10)
			runtime.AddCleanup(&buf[0], func(*atomic.Int64) { freed.Add(1) }, &freed)
			require.NoError(t, g.Go(func(context.Context) (int, error) {
				ran.Add(1)
				return len(buf), nil
			}))
		}
		f, err := dispatcher.Submit(context.Background(), d, func() func(context.Context) (int, error) {
			buf := make([]byte, 64<<10)
			runtime.AddCleanup(&buf[0], func(*atomic.Int64) { freed.Add(1) }, &freed)
			return func(context.Context) (int, error) { return len(buf), nil }
		}())
		require.NoError(t, err)
		_, err = f.Wait(context.Background())
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			runtime.GC()
			return ran.Load() == n && freed.Load() == n+1
		}, 10*time.Second, 5*time.Millisecond, "buffers freed before Wait and Release: %d", freed.Load())
		res, err := g.Wait()
		require.NoError(t, err)
		require.Len(t, res, n)
		require.Equal(t, 64<<10, res[n-1], "the results stay")
		f.Release()
	})
}
