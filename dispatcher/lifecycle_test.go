package dispatcher_test

import (
	"context"
	"errors"
	"fmt"
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

// scripted is a dynamic strategy that picks from a script, one index per
// Pick; gateAt makes the Pick with that number (0-based) block until gate is
// closed (entered is closed when it starts waiting).
type scripted struct {
	mu      sync.Mutex
	script  []int
	n       int
	gateAt  int
	entered chan struct{}
	gate    chan struct{}
}

func (s *scripted) Pick(uint64) int {
	s.mu.Lock()
	k := s.n
	s.n++
	i := s.script[k%len(s.script)]
	s.mu.Unlock()
	if k == s.gateAt {
		close(s.entered)
		<-s.gate
	}
	return i
}
func (s *scripted) Done(int, time.Duration)  {}
func (s *scripted) Add(int) (int, error)     { return -1, nil }
func (s *scripted) Remove(int) error         { return nil }
func (s *scripted) SetWeight(int, int) error { return nil }

// TestAbandonAnswersRedispatchedHeld: Close's deadline answers every
// request not yet running ("taken back from the workers' queues"). Here a
// request held for worker 0 is re-picked when worker 0 is removed, and
// Close's deadline passes while that re-pick is under way; the request
// lands behind a task that never ends on worker 1. It must be answered
// with ErrClosed at once, not when worker 1's task ends.
func TestAbandonAnswersRedispatchedHeld(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		s := &scripted{script: []int{0, 0, 1, 0, 1}, gateAt: 4, entered: make(chan struct{}), gate: make(chan struct{})}
		d, err := dispatcher.New(dispatcher.WithEngine(eng), dispatcher.WithWorkers(2), dispatcher.WithWorkerBuffer(1), dispatcher.WithStrategy(s))
		require.NoError(t, err)
		release := make(chan struct{})
		defer func() {
			select {
			case <-release:
			default:
				close(release)
			}
			within(t, 10*time.Second, "Done", func() { <-d.Done() })
		}()
		var fs []*dispatcher.Future[int]
		for range 4 { // A, B → worker 0 (full), C → worker 1, D → worker 0: held
			f, err := dispatcher.Submit(context.Background(), d, blocker(release))
			require.NoError(t, err)
			fs = append(fs, f)
		}
		require.Eventually(t, func() bool { st := d.Stats(); return st.Held && st.Pending == 3 }, 5*time.Second, time.Millisecond)

		removed := make(chan error, 1)
		go func() { removed <- d.RemoveWorker(0) }() // re-picks D: Pick #4 blocks
		within(t, 5*time.Second, "re-pick starts", func() { <-s.entered })
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		within(t, 5*time.Second, "Close with deadline", func() { require.ErrorIs(t, d.Close(ctx), context.DeadlineExceeded) })
		close(s.gate) // D goes to worker 1, behind C
		within(t, 5*time.Second, "RemoveWorker", func() { <-removed })

		for k, name := range map[int]string{1: "B (queued at removed worker 0)", 3: "D (re-picked to worker 1)"} {
			select {
			case <-fs[k].Done():
				_, err := fs[k].Wait(context.Background())
				require.ErrorIs(t, err, dispatcher.ErrClosed, name)
			case <-time.After(2 * time.Second):
				t.Fatalf("%s not answered 2 s after Close's deadline abandoned it (it waits behind a running task)", name)
			}
		}
	})
}

// TestCloseDeadlineWithRemovedWorker: a removed worker still running
// a long task with requests queued behind it. Close with a short deadline
// returns the context's error, answers every request that had not started
// with an error matching ErrClosed and the deadline, and Done closes only
// once the running tasks end (and then promptly).
func TestCloseDeadlineWithRemovedWorker(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d, err := dispatcher.New(dispatcher.WithEngine(eng), dispatcher.WithWorkers(3), dispatcher.WithWorkerBuffer(4))
		require.NoError(t, err)
		release := make(chan struct{})
		var started atomic.Int64
		task := func(context.Context) (int, error) { started.Add(1); <-release; return 7, nil }
		var fs []*dispatcher.Future[int]
		for range 12 {
			f, err := dispatcher.Submit(context.Background(), d, task)
			require.NoError(t, err)
			fs = append(fs, f)
		}
		require.Eventually(t, func() bool { return started.Load() == 3 }, 5*time.Second, time.Millisecond)
		require.NoError(t, d.RemoveWorker(0))
		require.NoError(t, d.RemoveWorker(1))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		within(t, 5*time.Second, "Close with deadline", func() {
			assert.ErrorIs(t, d.Close(ctx), context.DeadlineExceeded)
		})
		// Every request that had not started is answered now.
		abandoned := 0
		within(t, 5*time.Second, "abandoned answers", func() {
			for _, f := range fs {
				select {
				case <-f.Done():
					_, err := f.Wait(context.Background())
					if assert.ErrorIs(t, err, dispatcher.ErrClosed) {
						assert.ErrorIs(t, err, context.DeadlineExceeded)
					}
					abandoned++
				case <-time.After(200 * time.Millisecond):
				}
			}
		})
		assert.Equal(t, 9, abandoned, "requests not running answered at Close's deadline")
		select {
		case <-d.Done():
			t.Fatal("Done closed while three tasks still run")
		default:
		}
		_, err = d.AddWorker(1)
		assert.ErrorIs(t, err, dispatcher.ErrClosed, "AddWorker after Close began")
		close(release)
		within(t, 5*time.Second, "Done after release", func() { <-d.Done() })
		assert.Equal(t, int64(3), started.Load(), "an abandoned request ran")
		running := 0
		for _, f := range fs {
			v, err := f.Wait(context.Background())
			if err == nil {
				assert.Equal(t, 7, v)
				running++
			} else {
				assert.True(t, errors.Is(err, dispatcher.ErrClosed))
			}
		}
		assert.Equal(t, 3, running)
		s := d.Stats()
		checkQuiescent(t, s, s.Completed) // consistency only: abandoned count as completed
		assert.NoError(t, d.Close(context.Background()), "Close after stop")
	})
}

// TestCloseDeadlineAfterRemove: Close's deadline passes while a removed
// worker still runs its last task with a request queued behind it. The
// queued request has not started, so it is abandoned (ErrClosed and the
// deadline); the running one finishes with its value. Taking back what a
// removed worker has queued must stop at its empty queue, which its
// removal has already closed.
func TestCloseDeadlineAfterRemove(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		const bound = 10 * time.Second
		d, err := dispatcher.New(dispatcher.WithEngine(eng), dispatcher.WithWorkers(2), dispatcher.WithWorkerBuffer(1), dispatcher.WithStrategyName("round-robin"))
		require.NoError(t, err)
		release := make(chan struct{})
		var releaseOnce sync.Once
		unblock := func() { releaseOnce.Do(func() { close(release) }) }
		defer unblock()
		// Round-robin: worker 0, worker 1, worker 0 again.
		var fs []*dispatcher.Future[int]
		for _, task := range []func(context.Context) (int, error){blocker(release), ok(1), ok(2)} {
			f, err := dispatcher.Submit(context.Background(), d, task)
			require.NoError(t, err)
			fs = append(fs, f)
		}
		_, err = waitFuture(t, fs[1], bound)
		require.NoError(t, err)
		require.Eventually(t, func() bool { return d.Stats().Workers[0].Pending == 2 }, bound, time.Millisecond)
		require.NoError(t, d.RemoveWorker(0))

		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		within(t, bound, "Close with a deadline", func() {
			assert.ErrorIs(t, d.Close(ctx), context.DeadlineExceeded)
		})
		_, err = waitFuture(t, fs[2], bound)
		require.ErrorIs(t, err, dispatcher.ErrClosed)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		unblock()
		within(t, bound, "Done", func() { <-d.Done() })
		v, err := waitFuture(t, fs[0], bound)
		require.NoError(t, err)
		require.Equal(t, -1, v)
		s := d.Stats()
		require.Equal(t, s.Dispatched, s.Completed)
		require.Zero(t, s.Pending)
	})
}

// TestGoRacesClose: Go (and TrySubmit) racing Close, at a zero and a
// positive intake, unbuffered and buffered completion channels, worker
// buffer 0 and 2. A Go that returned nil must run exactly once, and before
// a Close without deadline returns ("Close waits for fn"); a refused one
// must never run; nothing may run after Done.
func TestGoRacesClose(t *testing.T) {
	t.Parallel() // a soak: robust to a shared core, and the package's longest
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		for _, cc := range completionAxis(eng, 2) {
			for _, intake := range []int{0, 4} {
				for _, buf := range []int{0, 2} {
					t.Run(fmt.Sprintf("%s/intake=%d/buffer=%d", cc.name, intake, buf), func(t *testing.T) {
						for round := range 6 {
							goRaceRound(t, round, append([]dispatcher.Option{dispatcher.WithEngine(eng), dispatcher.WithWorkers(2),
								dispatcher.WithIntakeBuffer(intake), dispatcher.WithWorkerBuffer(buf)}, cc.opts...))
						}
					})
				}
			}
		}
	})
}

func goRaceRound(t *testing.T, round int, opts []dispatcher.Option) {
	d, err := dispatcher.New(opts...)
	require.NoError(t, err)
	var accepted, ran, refusedRan, afterDone atomic.Int64
	var done atomic.Bool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			for {
				var mine atomic.Bool // set once this submission is accepted
				refused := make(chan struct{})
				task := func(context.Context) (int, error) {
					if done.Load() {
						afterDone.Add(1)
					}
					select {
					case <-refused:
						refusedRan.Add(1)
					default:
					}
					ran.Add(1)
					return 0, nil
				}
				var err error
				if g%2 == 0 {
					err = d.Go(context.Background(), func(ctx context.Context) error { _, err := task(ctx); return err })
				} else {
					_, err = dispatcher.TrySubmit(context.Background(), d, task)
				}
				if err == nil {
					mine.Store(true)
					accepted.Add(1)
					continue
				}
				close(refused)
				if errors.Is(err, dispatcher.ErrBusy) {
					continue
				}
				assert.ErrorIs(t, err, dispatcher.ErrClosed)
				select {
				case <-stop:
					return
				default:
				}
			}
		})
	}
	time.Sleep(time.Duration(round%3) * time.Millisecond)
	ctx := context.Background()
	deadline := round%2 == 1
	var cancel context.CancelFunc = func() {}
	if deadline {
		ctx, cancel = context.WithTimeout(ctx, 100*time.Microsecond)
	}
	var cerr error
	within(t, 10*time.Second, "Close", func() { cerr = d.Close(ctx) })
	cancel()
	if !deadline {
		require.NoError(t, cerr)
	}
	close(stop)
	within(t, 10*time.Second, "submitters", wg.Wait)
	within(t, 10*time.Second, "Done", func() { <-d.Done() })
	if !deadline {
		// Close returned nil: every accepted task has run.
		require.Equal(t, accepted.Load(), ran.Load(), "Close returned before every accepted Go/TrySubmit ran")
	} else {
		require.LessOrEqual(t, ran.Load(), accepted.Load())
	}
	done.Store(true)
	time.Sleep(time.Millisecond)
	require.Zero(t, refusedRan.Load(), "a refused submission ran")
	require.Zero(t, afterDone.Load(), "a task ran after Done")
	s := d.Stats()
	require.Equal(t, s.Dispatched, s.Completed)
	require.Zero(t, s.Pending)
}
