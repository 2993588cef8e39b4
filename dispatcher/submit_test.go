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

// recorder is a task factory whose tasks note their number as they run.
type recorder struct {
	mu  sync.Mutex
	ran []int
}

func (r *recorder) task(k int, gate <-chan struct{}) func(context.Context) (int, error) {
	return func(context.Context) (int, error) {
		if gate != nil {
			<-gate
		}
		r.mu.Lock()
		r.ran = append(r.ran, k)
		r.mu.Unlock()
		return k, nil
	}
}

func (r *recorder) order() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.ran...)
}

// workersUsed counts the workers that completed a request.
func workersUsed(d *dispatcher.Dispatcher) int {
	n := 0
	for _, w := range d.Stats().Workers {
		if w.Completed > 0 {
			n++
		}
	}
	return n
}

// Keyed's promise under consistent-hash: 200 requests with one key,
// submitted by one goroutine without waiting, the first holding its worker
// until all are in, reach one worker and run in submission order (the
// issue's bounded-hash run spread them 12/63/63/62 and ran request 0
// after request 15).
func TestKeyedConsistentHashKeepsOrder(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		synctest.Test(t, func(t *testing.T) {
			d := bubbleDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(4),
				dispatcher.WithStrategyName("consistent-hash"))
			var rec recorder
			gate := make(chan struct{})
			fs := make([]*dispatcher.Future[int], 200)
			for k := range fs {
				g := gate
				if k > 0 {
					g = nil
				}
				f, err := dispatcher.Submit(context.Background(), d.Key(42), rec.task(k, g))
				require.NoError(t, err)
				fs[k] = f
			}
			// Every goroutine of the bubble is blocked, the first task on
			// its gate: whatever could overtake it has had its chance.
			synctest.Wait()
			assert.Empty(t, rec.order(), "a later request ran before the first")
			close(gate)
			for k, f := range fs {
				v, err := f.Wait(context.Background())
				require.NoError(t, err)
				require.Equal(t, k, v)
			}
			assert.Equal(t, seq(200), rec.order())
			assert.Equal(t, 1, workersUsed(d), "one key, one worker")
			closeBubble(t, d)
		})
	})
}

// What Keyed says of bounded-hash: while the key's worker is at its bound
// the next request goes to another worker and may run first, so a key
// submitted without waiting spreads over workers out of order.
func TestKeyedBoundedHashSpreadsAndMayOvertake(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(4),
			dispatcher.WithStrategyName("bounded-hash"))
		var rec recorder
		gate := make(chan struct{})
		first, err := dispatcher.Submit(context.Background(), d.Key(42), rec.task(0, gate))
		require.NoError(t, err)
		// The first holds its worker, at its bound ⌈1.25·2/4⌉ = 1: the
		// second goes elsewhere and is answered while the first waits.
		second, err := dispatcher.Submit(context.Background(), d.Key(42), rec.task(1, nil))
		require.NoError(t, err)
		v, err := waitFuture(t, second, 10*time.Second)
		require.NoError(t, err)
		require.Equal(t, 1, v)
		select {
		case <-first.Done():
			t.Fatal("the first request finished before its gate opened")
		default:
		}
		fs := []*dispatcher.Future[int]{first, second}
		for k := 2; k < 200; k++ {
			f, err := dispatcher.Submit(context.Background(), d.Key(42), rec.task(k, nil))
			require.NoError(t, err)
			fs = append(fs, f)
		}
		close(gate)
		for k, f := range fs {
			v, err := waitFuture(t, f, 10*time.Second)
			require.NoError(t, err)
			require.Equal(t, k, v)
		}
		assert.Equal(t, 1, rec.order()[0], "the second request ran first")
		assert.Greater(t, workersUsed(d), 1, "a hot key spreads")
	})
}

// What Keyed promises bounded-hash: a requester that waits for each answer
// before the next sees its requests with one key run in order, wherever
// they go.
func TestKeyedBoundedHashOrderWhenWaiting(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(4),
			dispatcher.WithStrategyName("bounded-hash"))
		var rec recorder
		within(t, 20*time.Second, "200 waited requests", func() {
			for k := range 200 {
				if k%2 == 0 {
					v, err := dispatcher.Do(context.Background(), d.Key(42), rec.task(k, nil))
					assert.NoError(t, err)
					assert.Equal(t, k, v)
					continue
				}
				f, err := dispatcher.Submit(context.Background(), d.Key(42), rec.task(k, nil))
				if !assert.NoError(t, err) {
					return
				}
				v, err := f.Wait(context.Background())
				assert.NoError(t, err)
				assert.Equal(t, k, v)
			}
		})
		assert.Equal(t, seq(200), rec.order())
	})
}
