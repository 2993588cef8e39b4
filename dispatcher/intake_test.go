package dispatcher_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

// admittedBehindBlockedWorker counts the requests a one-worker dispatcher
// accepts while its worker is blocked: those at the worker plus the
// intake's.
func admittedBehindBlockedWorker(t *testing.T, opts ...dispatcher.Option) int {
	d := newDispatcher(t, append([]dispatcher.Option{dispatcher.WithWorkers(1)}, opts...)...)
	ctx := context.Background()
	gate := make(chan struct{})
	open := sync.OnceFunc(func() { close(gate) })
	defer open()
	task := func(context.Context) (int, error) { <-gate; return 1, nil }
	var fs []*dispatcher.Future[int]
	// Busy 50 times in a row, a millisecond apart: the balancer has moved
	// all it can to the worker and the intake is full.
	for busy := 0; busy < 50; {
		f, err := dispatcher.TrySubmit(ctx, d, task)
		if err != nil {
			require.True(t, errors.Is(err, dispatcher.ErrBusy), err)
			busy++
			time.Sleep(time.Millisecond)
			continue
		}
		busy = 0
		fs = append(fs, f)
		require.Less(t, len(fs), 10000)
	}
	open()
	for _, f := range fs {
		_, err := f.Wait(ctx)
		require.NoError(t, err)
		f.Release()
	}
	return len(fs)
}

// The default intake is workers × (worker buffer + 1), with the depth the
// queues may reach: on rings by default 256 (the worker, whose blocked
// tasks are not short, keeps 64), with WithWorkerBuffer(63) 64. From the
// review that found the first: it holds as documented.
func TestDefaultIntakeFollowsWorkerBuffer(t *testing.T) {
	assert.Equal(t, 64+256, admittedBehindBlockedWorker(t, dispatcher.WithEngine(dispatcher.Rings)))
	assert.Equal(t, 64+64, admittedBehindBlockedWorker(t, dispatcher.WithEngine(dispatcher.Rings), dispatcher.WithWorkerBuffer(63)))
	assert.Equal(t, 64+64, admittedBehindBlockedWorker(t)) // the default engine, channels
}

// TestIntakeBufferBound: WithIntakeBuffer(n) with 0 < n < workers × depth
// accepts at most n requests that no worker has taken. With 2 workers
// (buffer 0) each running a blocker and intake 1, one more request is
// accepted (held for a full worker) and the next TrySubmit is ErrBusy.
// Regression: the zero-buffer admission count (free slots) was seeded with
// workers × depth for every buffer size, so a positive buffer smaller than
// that admitted workers × depth.
func TestIntakeBufferBound(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		synctest.Test(t, func(t *testing.T) {
			d := bubbleDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2), dispatcher.WithWorkerBuffer(0), dispatcher.WithIntakeBuffer(1))
			release := make(chan struct{})
			released := false
			defer func() { // on failure, leave nothing blocked in the bubble
				if !released {
					close(release)
					_ = d.Close(context.Background())
					<-d.Done()
				}
			}()
			var futures []*dispatcher.Future[int]
			for range 2 {
				f, err := dispatcher.Submit(context.Background(), d, blocker(release))
				require.NoError(t, err)
				futures = append(futures, f)
				synctest.Wait()
			}
			require.Equal(t, 2, d.Stats().Pending, "both workers busy")

			f, err := dispatcher.TrySubmit(context.Background(), d, blocker(release))
			require.NoError(t, err, "the intake buffer has room for one")
			futures = append(futures, f)
			synctest.Wait()

			_, err = dispatcher.TrySubmit(context.Background(), d, blocker(release))
			require.ErrorIs(t, err, dispatcher.ErrBusy, "intake buffer 1 already holds one request")

			close(release)
			released = true
			for _, f := range futures {
				v, err := f.Wait(context.Background())
				require.NoError(t, err)
				require.Equal(t, -1, v)
			}
			closeBubble(t, d)
		})
	})
}
