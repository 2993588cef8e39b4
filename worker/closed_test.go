package worker_test

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/worker"
)

// TestClosed: both kinds of worker report Close, which the pool asks
// instead of keeping its own record; a second Close of a channel worker
// (whose first Close closes its channel) is a no-op, not a panic.
func TestClosed(t *testing.T) {
	t.Run("ring", func(t *testing.T) {
		w, wg := newWorker(t, 2, func(int) {})
		require.False(t, w.Closed())
		w.Close()
		require.True(t, w.Closed())
		w.Close()
		wg.Wait()
		require.True(t, w.Closed())
	})
	t.Run("chan", func(t *testing.T) {
		h := newChan(t, 2, 2, func(int) {})
		require.False(t, h.w.Closed())
		h.w.Close()
		require.True(t, h.w.Closed())
		require.NotPanics(t, h.w.Close)
		h.stop(t)
		require.True(t, h.w.Closed())
	})
}

// TestStopHook: a worker calls Config.Stop once, when it stops for good,
// not when a task's Goexit replaces its goroutine.
func TestStopHook(t *testing.T) {
	for _, kind := range []string{"ring", "chan"} {
		t.Run(kind, func(t *testing.T) {
			var stops atomic.Int32
			var wg sync.WaitGroup
			cfg := worker.Config[int]{
				Depth:    2,
				Run:      func(item int, count func()) { count(); runtime.Goexit() },
				Panicked: func(_ int, _ any, _ []byte, count, _ func()) { count() },
				Exited:   func(int) {},
				Spawn:    func(f func()) { wg.Go(f) },
				Stop:     func() { stops.Add(1) },
			}
			var stopped <-chan struct{}
			switch kind {
			case "ring":
				w := worker.New(cfg)
				w.Start()
				w.Put(1)
				w.Close()
				stopped = w.Stopped()
			default:
				done := make(chan worker.Done, 2)
				w := worker.NewChan(cfg, 0, done)
				w.Start()
				w.Send(1)
				<-done
				w.Close()
				stopped = w.Stopped()
			}
			<-stopped
			wg.Wait()
			require.Equal(t, int32(1), stops.Load())
		})
	}
}
