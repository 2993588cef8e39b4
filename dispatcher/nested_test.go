package dispatcher_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

// TestNestedSubmitWaitsForRoom: a task's blocking submit to its own
// dispatcher waits for room like any other, however long that takes: two
// workers, no queue, no intake, the other worker busy for 30 ms; the
// nested Do is accepted when that worker frees and answers. The same
// program gets the same answer whatever the machine's load (the bubble
// makes the 30 ms exact; the answer does not depend on them).
func TestNestedSubmitWaitsForRoom(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		for _, busy := range []time.Duration{5 * time.Millisecond, 30 * time.Millisecond, time.Second} {
			synctest.Test(t, func(t *testing.T) {
				d := bubbleDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2),
					dispatcher.WithWorkerBuffer(0), dispatcher.WithIntakeBuffer(0))
				slow, err := dispatcher.Submit(context.Background(), d, func(context.Context) (int, error) {
					time.Sleep(busy)
					return 1, nil
				})
				require.NoError(t, err)
				synctest.Wait() // the slow task runs on one worker
				v, err := dispatcher.Do(context.Background(), d, func(ctx context.Context) (int, error) {
					return dispatcher.Do(ctx, d, ok(7)) // the other worker is this one: no room until busy ends
				})
				require.NoError(t, err, "after %v", busy)
				require.Equal(t, 7, v)
				_, err = slow.Wait(context.Background())
				require.NoError(t, err)
				closeBubble(t, d)
			})
		}
	})
}

// TestNestedTrySubmitNeverWaits: the way out the docs give a task that
// submits to its own full dispatcher: TrySubmit answers ErrBusy at once,
// and a context that bounds the wait ends a blocking one.
func TestNestedTrySubmitNeverWaits(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		synctest.Test(t, func(t *testing.T) {
			// One worker, no queue, no intake: while the task runs, nothing
			// else fits.
			d := bubbleDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(1),
				dispatcher.WithWorkerBuffer(0), dispatcher.WithIntakeBuffer(0))
			var tryErr, doErr error
			_, err := dispatcher.Do(context.Background(), d, func(ctx context.Context) (int, error) {
				_, tryErr = dispatcher.TrySubmit(ctx, d, ok(1))
				bounded, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
				defer cancel()
				_, doErr = dispatcher.Do(bounded, d, ok(2))
				return 0, nil
			})
			require.NoError(t, err)
			require.ErrorIs(t, tryErr, dispatcher.ErrBusy)
			require.ErrorIs(t, doErr, context.DeadlineExceeded)
			v, err := dispatcher.Do(context.Background(), d, ok(5))
			require.NoError(t, err, "the dispatcher keeps serving")
			require.Equal(t, 5, v)
			closeBubble(t, d)
		})
	})
}

// TestTaskUsesAnotherDispatcher: a task may block on a different
// dispatcher freely, also when that one is full for a while.
func TestTaskUsesAnotherDispatcher(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		synctest.Test(t, func(t *testing.T) {
			opts := []dispatcher.Option{dispatcher.WithEngine(eng), dispatcher.WithWorkers(1),
				dispatcher.WithWorkerBuffer(0), dispatcher.WithIntakeBuffer(0)}
			outer, inner := bubbleDispatcher(t, opts...), bubbleDispatcher(t, opts...)
			release := make(chan struct{})
			hold, err := dispatcher.Submit(context.Background(), inner, func(context.Context) (int, error) {
				<-release
				return 0, nil
			})
			require.NoError(t, err)
			var wg sync.WaitGroup
			var got int
			var gotErr error
			wg.Go(func() {
				got, gotErr = dispatcher.Do(context.Background(), outer, func(ctx context.Context) (int, error) {
					return dispatcher.Do(ctx, inner, ok(3))
				})
			})
			time.Sleep(50 * time.Millisecond)
			close(release)
			wg.Wait()
			require.NoError(t, gotErr)
			require.Equal(t, 3, got)
			_, err = hold.Wait(context.Background())
			require.NoError(t, err)
			closeBubble(t, outer)
			closeBubble(t, inner)
		})
	})
}
