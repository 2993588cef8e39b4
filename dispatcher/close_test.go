package dispatcher_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/gobalancer/balancer/dispatcher"
)

// TestCloseDrainsQueued: Close with 10 000 requests queued runs them all
// before it returns; submits after Close has begun get ErrClosed.
func TestCloseDrainsQueued(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		const n = 10_000
		d, err := dispatcher.New(dispatcher.WithEngine(eng), dispatcher.WithWorkers(2), dispatcher.WithWorkerBuffer(4), dispatcher.WithIntakeBuffer(n))
		require.NoError(t, err)
		release := make(chan struct{})
		for range 2 {
			_, err := dispatcher.Submit(context.Background(), d, blocker(release))
			require.NoError(t, err)
		}
		var ran atomic.Int64
		futures := make([]*dispatcher.Future[int], n)
		for i := range futures {
			futures[i], err = dispatcher.Submit(context.Background(), d, func(context.Context) (int, error) { ran.Add(1); return i, nil })
			require.NoError(t, err)
		}
		closed := make(chan error, 1)
		go func() { closed <- d.Close(context.Background()) }()
		// No poll: the workers are blocked, so the intake takes a few more
		// submits at most and the next one waits until Close fences the
		// intake, and returns ErrClosed then.
		within(t, 10*time.Second, "Close fences intake", func() {
			for {
				_, err := dispatcher.Submit(context.Background(), d, ok(0))
				if errors.Is(err, dispatcher.ErrClosed) {
					return
				}
				if !assert.NoError(t, err) {
					return
				}
			}
		})
		select {
		case err := <-closed:
			t.Fatalf("Close returned %v while requests were still queued", err)
		default:
		}
		close(release)
		within(t, 20*time.Second, "Close drains", func() { assert.NoError(t, <-closed) })
		for i, f := range futures {
			v, err := waitFuture(t, f, time.Second)
			require.NoError(t, err)
			require.Equal(t, i, v)
		}
		require.Equal(t, int64(n), ran.Load())
		select {
		case <-d.Done():
		default:
			t.Fatal("Close returned before Done closed")
		}
	})
}

// TestCloseDeadline: Close with a 10 ms deadline over 300 ms tasks that
// honour nothing returns DeadlineExceeded at the deadline, answers the
// queued requests without running them (ErrClosed and the deadline), lets
// the running ones finish, and Done closes when they return.
func TestCloseDeadline(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		t.Run("synctest", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				task := func(context.Context) (int, error) { time.Sleep(300 * time.Millisecond); return 1, nil }
				running, queued, ran := closeDeadlineSetup(t, eng, task)
				start := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
				defer cancel()
				require.ErrorIs(t, running.d.Close(ctx), context.DeadlineExceeded)
				require.Equal(t, 10*time.Millisecond, time.Since(start))
				checkAbandoned(t, queued)
				<-running.d.Done()
				require.Equal(t, 300*time.Millisecond, time.Since(start), "Done closes when the running tasks return")
				for _, f := range running.fs {
					v, err := f.Wait(context.Background())
					require.NoError(t, err)
					require.Equal(t, 1, v)
				}
				require.Equal(t, int64(2), ran.Load())
				require.NoError(t, running.d.Close(context.Background()), "Close after stop succeeds")
			})
		})
		t.Run("realtime", func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			// Tasks that honour nothing: they burn at least 300 ms and until
			// released, so the deadline always passes while they run, however
			// loaded the machine is.
			var release atomic.Bool
			task := func(context.Context) (int, error) {
				burn(300 * time.Millisecond)
				for !release.Load() {
					burn(time.Millisecond)
				}
				return 1, nil
			}
			running, queued, ran := closeDeadlineSetup(t, eng, task)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
			defer cancel()
			within(t, 10*time.Second, "Close with a deadline", func() {
				assert.ErrorIs(t, running.d.Close(ctx), context.DeadlineExceeded)
			})
			checkAbandoned(t, queued)
			select {
			case <-running.d.Done():
				t.Fatal("Done closed while tasks were running")
			default:
			}
			release.Store(true)
			within(t, 10*time.Second, "Done after abandon", func() { <-running.d.Done() })
			for _, f := range running.fs {
				v, err := waitFuture(t, f, time.Second)
				require.NoError(t, err)
				require.Equal(t, 1, v)
			}
			require.Equal(t, int64(2), ran.Load())
		})
	})
}

type submitted struct {
	d  *dispatcher.Dispatcher
	fs []*dispatcher.Future[int]
}

// closeDeadlineSetup starts 2 workers each running task and 20 requests
// queued behind them.
func closeDeadlineSetup(t *testing.T, eng dispatcher.Engine, task func(context.Context) (int, error)) (running, queued submitted, ran *atomic.Int64) {
	d, err := dispatcher.New(dispatcher.WithEngine(eng), dispatcher.WithWorkers(2), dispatcher.WithWorkerBuffer(4), dispatcher.WithIntakeBuffer(32))
	require.NoError(t, err)
	ran = new(atomic.Int64)
	started := make(chan struct{}, 2)
	running.d, queued.d = d, d
	for range 2 {
		f, err := dispatcher.Submit(context.Background(), d, func(ctx context.Context) (int, error) {
			ran.Add(1)
			started <- struct{}{}
			return task(ctx)
		})
		require.NoError(t, err)
		running.fs = append(running.fs, f)
	}
	for range 2 {
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatal("tasks did not start")
		}
	}
	for range 20 {
		f, err := dispatcher.Submit(context.Background(), d, func(context.Context) (int, error) { ran.Add(1); return 2, nil })
		require.NoError(t, err)
		queued.fs = append(queued.fs, f)
	}
	return running, queued, ran
}

func checkAbandoned(t *testing.T, queued submitted) {
	for _, f := range queued.fs {
		_, err := waitFuture(t, f, 5*time.Second)
		require.ErrorIs(t, err, dispatcher.ErrClosed)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	}
}

// TestCloseRepeatedAndConcurrent: concurrent and repeated Close calls are
// safe and agree; everything after Close is ErrClosed; Stats still works.
func TestCloseRepeatedAndConcurrent(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d, err := dispatcher.New(dispatcher.WithEngine(eng), dispatcher.WithWorkers(4))
		require.NoError(t, err)
		var fs []*dispatcher.Future[int]
		for i := range 100 {
			f, err := dispatcher.Submit(context.Background(), d, func(context.Context) (int, error) { burn(50 * time.Microsecond); return i, nil })
			require.NoError(t, err)
			fs = append(fs, f)
		}
		within(t, 10*time.Second, "concurrent Close", func() {
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() { assert.NoError(t, d.Close(context.Background())) })
			}
			wg.Wait()
		})
		for i, f := range fs {
			v, err := waitFuture(t, f, time.Second)
			require.NoError(t, err)
			require.Equal(t, i, v)
		}
		require.NoError(t, d.Close(context.Background()))
		var nilCtx context.Context // a variable, not nil, so linters let the nil check be tested
		require.ErrorIs(t, d.Close(nilCtx), dispatcher.ErrNilContext)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		require.NoError(t, d.Close(ctx), "a stopped dispatcher closes successfully whatever the context")

		_, err = dispatcher.Do(context.Background(), d, ok(1))
		require.ErrorIs(t, err, dispatcher.ErrClosed)
		_, err = dispatcher.Submit(context.Background(), d, ok(1))
		require.ErrorIs(t, err, dispatcher.ErrClosed)
		_, err = dispatcher.TrySubmit(context.Background(), d, ok(1))
		require.ErrorIs(t, err, dispatcher.ErrClosed)
		_, err = dispatcher.Do(context.Background(), d.Key(3), ok(1))
		require.ErrorIs(t, err, dispatcher.ErrClosed)
		_, err = d.AddWorker(1)
		require.ErrorIs(t, err, dispatcher.ErrClosed)
		require.ErrorIs(t, d.RemoveWorker(0), dispatcher.ErrClosed)
		require.ErrorIs(t, d.SetWeight(0, 2), dispatcher.ErrClosed)
		s := d.Stats()
		require.Equal(t, int64(100), s.Completed)
		require.Len(t, s.Workers, 4)
	})
}

// TestSubmitRacesClose: submits racing Close are either accepted and
// answered (run once) or refused with ErrClosed (ErrBusy for TrySubmit);
// never a panic, never a lost request. Half the rounds close with a
// deadline that abandons what has not started.
func TestSubmitRacesClose(t *testing.T) {
	t.Parallel() // a soak: robust to a shared core, and the package's longest
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		for round := range 20 {
			intake := []int{0, 1, 64}[round%3]
			d, err := dispatcher.New(dispatcher.WithEngine(eng), dispatcher.WithWorkers(1+round%4), dispatcher.WithWorkerBuffer(round%5), dispatcher.WithIntakeBuffer(intake))
			require.NoError(t, err)
			var accepted, answered, ran, abandoned atomic.Int64
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					task := func(context.Context) (int, error) { ran.Add(1); return g, nil }
					for {
						var err error
						var f *dispatcher.Future[int]
						switch g % 3 {
						case 0:
							var v int
							if v, err = dispatcher.Do(context.Background(), d, task); err == nil {
								accepted.Add(1)
								answered.Add(1)
								assert.Equal(t, g, v)
							}
						case 1:
							f, err = dispatcher.Submit(context.Background(), d, task)
						case 2:
							f, err = dispatcher.TrySubmit(context.Background(), d, task)
							if errors.Is(err, dispatcher.ErrBusy) {
								continue
							}
						}
						if f != nil {
							accepted.Add(1)
							v, err := f.Wait(context.Background())
							answered.Add(1)
							if errors.Is(err, dispatcher.ErrClosed) {
								assert.ErrorIs(t, err, context.DeadlineExceeded)
								abandoned.Add(1)
							} else {
								assert.NoError(t, err)
								assert.Equal(t, g, v)
							}
							continue
						}
						if errors.Is(err, dispatcher.ErrClosed) && errors.Is(err, context.DeadlineExceeded) {
							answered.Add(1) // a Do accepted, then abandoned by Close
							accepted.Add(1)
							abandoned.Add(1)
							continue
						}
						if errors.Is(err, dispatcher.ErrClosed) {
							select {
							case <-stop:
								return
							default:
							}
							continue
						}
						assert.NoError(t, err)
					}
				})
			}
			// How far the submitters get before Close races them, varied
			// per round: the sleep is the race's axis, not a wait for a state.
			time.Sleep(time.Duration(round%4) * time.Millisecond)
			ctx := context.Background()
			var cancel context.CancelFunc = func() {}
			if round%2 == 1 {
				ctx, cancel = context.WithTimeout(ctx, 50*time.Microsecond)
			}
			err = d.Close(ctx)
			cancel()
			if err != nil {
				require.ErrorIs(t, err, context.DeadlineExceeded)
			}
			close(stop)
			within(t, 10*time.Second, "submitters after Close", wg.Wait)
			within(t, 10*time.Second, "Done", func() { <-d.Done() })
			require.Equal(t, accepted.Load(), answered.Load())
			require.Equal(t, accepted.Load()-abandoned.Load(), ran.Load(), "round %d", round)
			require.Equal(t, d.Stats().Dispatched, d.Stats().Completed)
		}
	})
}
