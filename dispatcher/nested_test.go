package dispatcher_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

// TestNestedSubmitNoDeadlock: a task that makes a blocking submit (Do,
// Submit, Go) to its own full dispatcher gets ErrNestedSubmit instead of
// waiting until Close; it used to deadlock with one worker.
func TestNestedSubmitNoDeadlock(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		for name, nested := range map[string]func(d *dispatcher.Dispatcher[int], ctx context.Context) error{
			"Do": func(d *dispatcher.Dispatcher[int], ctx context.Context) error {
				_, err := d.Do(ctx, ok(1))
				return err
			},
			"Submit": func(d *dispatcher.Dispatcher[int], ctx context.Context) error {
				_, err := d.Submit(ctx, ok(1))
				return err
			},
			"Go": func(d *dispatcher.Dispatcher[int], ctx context.Context) error { return d.Go(ctx, ok(1)) },
		} {
			t.Run(name, func(t *testing.T) {
				// One worker, no queue, no intake: while the task runs,
				// nothing else fits, so its own submit finds no room.
				d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(1),
					dispatcher.WithWorkerBuffer(0), dispatcher.WithIntakeBuffer(0))
				var inner error
				within(t, 10*time.Second, "the nested submit", func() {
					_, err := d.Do(context.Background(), func(ctx context.Context) (int, error) {
						inner = nested(d, ctx)
						return 0, nil
					})
					assert.NoError(t, err)
				})
				require.ErrorIs(t, inner, dispatcher.ErrNestedSubmit)
				v, err := d.Do(context.Background(), ok(5))
				require.NoError(t, err, "the dispatcher keeps serving")
				require.Equal(t, 5, v)
			})
		}
	})
}

// TestBlockedOutsiderKeepsWaiting: a submitter that is not one of the
// dispatcher's tasks waits for room however long it takes, past the time
// after which a task's own submit gives up.
func TestBlockedOutsiderKeepsWaiting(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		// In a bubble, the outsider's wait lasts exactly as long as the
		// test says, however loaded the machine is.
		synctest.Test(t, func(t *testing.T) {
			d := bubbleDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(1),
				dispatcher.WithWorkerBuffer(0), dispatcher.WithIntakeBuffer(0))
			release := make(chan struct{})
			started := make(chan struct{})
			f, err := d.Submit(context.Background(), func(context.Context) (int, error) {
				close(started)
				<-release
				return 1, nil
			})
			require.NoError(t, err)
			<-started
			var wg sync.WaitGroup
			var outsider error
			wg.Go(func() { _, outsider = d.Do(context.Background(), ok(2)) })
			time.Sleep(50 * time.Millisecond) // five times the nested check's delay
			close(release)
			wg.Wait()
			require.NoError(t, outsider)
			_, err = f.Wait(context.Background())
			require.NoError(t, err)
			closeBubble(t, d)
		})
	})
}
