package dispatcher_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

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

// TestCancelBeforeSubmit: a context already done at submit: the task never
// runs, every entry point returns the context's error unchanged.
func TestCancelBeforeSubmit(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		var ran atomic.Bool
		task := func(context.Context) (int, error) { ran.Store(true); return 1, nil }
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		defer cancel2()
		for _, tc := range []struct {
			name string
			ctx  context.Context
			want error
		}{{"canceled", cancelled, context.Canceled}, {"deadline", expired, context.DeadlineExceeded}} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := dispatcher.Do(tc.ctx, d, task)
				require.ErrorIs(t, err, tc.want)
				f, err := dispatcher.Submit(tc.ctx, d, task)
				require.ErrorIs(t, err, tc.want)
				require.Nil(t, f)
				_, err = dispatcher.TrySubmit(tc.ctx, d, task)
				require.ErrorIs(t, err, tc.want)
				_, err = dispatcher.Do(tc.ctx, d.Key(9), task)
				require.ErrorIs(t, err, tc.want)
				_, err = dispatcher.Submit(tc.ctx, d.Key(9), task)
				require.ErrorIs(t, err, tc.want)
			})
		}
		require.False(t, ran.Load(), "a task submitted with a done context ran")
		require.Zero(t, d.Stats().Dispatched)
	})
}

// TestCancelWhileQueued: cancelled while waiting behind a busy worker, the
// task never runs and its answer is the context's error; a Do caller
// returns at once.
func TestCancelWhileQueued(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		synctest.Test(t, func(t *testing.T) {
			d := bubbleDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(1), dispatcher.WithWorkerBuffer(4))
			release := make(chan struct{})
			busy, err := dispatcher.Submit(context.Background(), d, blocker(release))
			require.NoError(t, err)

			var ran atomic.Int32
			task := func(context.Context) (int, error) { ran.Add(1); return 1, nil }
			ctx, cancel := context.WithCancel(context.Background())
			queued, err := dispatcher.Submit(ctx, d, task)
			require.NoError(t, err)

			doCtx, doCancel := context.WithCancel(context.Background())
			var doErr error
			var doReturned time.Time
			go func() {
				_, doErr = dispatcher.Do(doCtx, d, task)
				doReturned = time.Now()
			}()
			synctest.Wait() // both queued behind the busy worker
			require.Equal(t, 3, d.Stats().Pending)

			start := time.Now()
			cancel()
			doCancel()
			synctest.Wait()
			require.ErrorIs(t, doErr, context.Canceled)
			require.Equal(t, start, doReturned, "Do returns as soon as its context ends")

			close(release)
			_, err = queued.Wait(context.Background())
			require.ErrorIs(t, err, context.Canceled)
			_, err = busy.Wait(context.Background())
			require.NoError(t, err)
			closeBubble(t, d)
			require.Zero(t, ran.Load(), "a task cancelled while queued ran")
			require.Equal(t, int64(3), d.Stats().Completed, "each queued request is answered once")
		})
	})
}

type ctxKey struct{}

// TestCancelWhileRunning: a running task gets the request's context, sees
// it end and its answer is what it returns.
func TestCancelWhileRunning(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		synctest.Test(t, func(t *testing.T) {
			d := bubbleDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
			base := context.WithValue(context.Background(), ctxKey{}, "mine")
			ctx, cancel := context.WithTimeout(base, 50*time.Millisecond)
			defer cancel()
			started := make(chan struct{})
			start := time.Now()
			f, err := dispatcher.Submit(ctx, d, func(ctx context.Context) (int, error) {
				assert.Equal(t, "mine", ctx.Value(ctxKey{}), "the task runs with the request's context")
				close(started)
				<-ctx.Done()
				return 0, ctx.Err()
			})
			require.NoError(t, err)
			<-started
			_, err = f.Wait(context.Background())
			require.ErrorIs(t, err, context.DeadlineExceeded)
			require.Equal(t, 50*time.Millisecond, time.Since(start))

			// Cancel explicitly while it runs.
			ctx2, cancel2 := context.WithCancel(base)
			started2 := make(chan struct{})
			f, err = dispatcher.Submit(ctx2, d, func(ctx context.Context) (int, error) {
				close(started2)
				<-ctx.Done()
				return 0, ctx.Err()
			})
			require.NoError(t, err)
			<-started2
			cancel2()
			_, err = f.Wait(context.Background())
			require.ErrorIs(t, err, context.Canceled)
			closeBubble(t, d)
		})
	})
}

// TestBackpressure: with every worker full and a rendezvous intake, Submit
// blocks; it returns as soon as there is room, or with the context's error
// at its deadline (the task then never runs); TrySubmit never blocks.
func TestBackpressure(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		synctest.Test(t, func(t *testing.T) {
			d := bubbleDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(1), dispatcher.WithWorkerBuffer(0), dispatcher.WithIntakeBuffer(0))
			start := time.Now()
			busy, err := dispatcher.Submit(context.Background(), d, func(context.Context) (int, error) {
				time.Sleep(100 * time.Millisecond)
				return 1, nil
			})
			require.NoError(t, err)
			synctest.Wait()

			// TrySubmit: no room, no wait.
			var ran atomic.Int32
			task := func(context.Context) (int, error) { ran.Add(1); return 2, nil }
			_, err = dispatcher.TrySubmit(context.Background(), d, task)
			require.ErrorIs(t, err, dispatcher.ErrBusy)
			require.Zero(t, time.Since(start))

			// Blocked until its deadline: the context's error, exactly then.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
			defer cancel()
			_, err = dispatcher.Submit(ctx, d, task)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			require.Equal(t, 30*time.Millisecond, time.Since(start))
			_, err = dispatcher.Do(ctx, d, task)
			require.ErrorIs(t, err, context.DeadlineExceeded)

			// Blocked until room: returns the moment the busy task completes.
			f, err := dispatcher.Submit(context.Background(), d, task)
			require.NoError(t, err)
			require.Equal(t, 100*time.Millisecond, time.Since(start), "Submit wakes as soon as there is room")
			v, err := f.Wait(context.Background())
			require.NoError(t, err)
			require.Equal(t, 2, v)
			v, err = busy.Wait(context.Background())
			require.NoError(t, err)
			require.Equal(t, 1, v)
			closeBubble(t, d)
			require.Equal(t, int32(1), ran.Load(), "only the accepted task ran")
		})
	})
}

// TestAbandonedRequesters: 10 000 requests whose callers cancel and never
// read the answer. Workers never block on them and keep serving, Close
// drains, and goleak (TestMain) finds nothing left.
func TestAbandonedRequesters(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		const n, requesters = 10_000, 50
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(4), dispatcher.WithWorkerBuffer(8))
		var accepted, ran atomic.Int64
		task := func(context.Context) (int, error) {
			ran.Add(1)
			burn(time.Microsecond)
			return 1, nil
		}
		within(t, 20*time.Second, "abandoning requesters", func() {
			var wg sync.WaitGroup
			for g := range requesters {
				wg.Go(func() {
					for k := range n / requesters {
						ctx, cancel := context.WithCancel(context.Background())
						if k%2 == 0 {
							// Submit, cancel, drop the future unread.
							if _, err := dispatcher.Submit(ctx, d, task); err == nil {
								accepted.Add(1)
							}
							cancel()
							continue
						}
						// Do whose context ends while it waits: it returns,
						// the worker answers into the void.
						go func() { time.Sleep(time.Duration(g%5) * time.Microsecond); cancel() }()
						_, err := dispatcher.Do(ctx, d, task)
						if err != nil {
							assert.ErrorIs(t, err, context.Canceled)
						}
						cancel()
					}
				})
			}
			wg.Wait()
		})
		within(t, 20*time.Second, "workers still serve", func() {
			for i := range 100 {
				v, err := dispatcher.Do(context.Background(), d, ok(i))
				assert.NoError(t, err)
				assert.Equal(t, i, v)
			}
		})
		closeWithin(t, d, 20*time.Second)
		s := d.Stats()
		require.Equal(t, s.Dispatched, s.Completed)
		require.GreaterOrEqual(t, s.Completed, accepted.Load()+100)
		require.LessOrEqual(t, ran.Load(), s.Completed-100)
		t.Logf("accepted futures %d, dispatched %d, ran %d", accepted.Load(), s.Dispatched, ran.Load())
	})
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
