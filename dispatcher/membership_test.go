package dispatcher_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
	"github.com/gobalancer/balancer/strategies"
)

// TestRemoveWorkerFinishesQueue: a removed worker takes no new request,
// runs what it had queued, then exits; nothing is lost or run twice.
// Round-robin makes the assignment of each request known.
func TestRemoveWorkerFinishesQueue(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		const workers = 3
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(workers), dispatcher.WithWorkerBuffer(4), dispatcher.WithIntakeBuffer(64), dispatcher.WithStrategyName("round-robin"))
		release := make(chan struct{})
		var releaseOnce sync.Once
		unblock := func() { releaseOnce.Do(func() { close(release) }) }
		t.Cleanup(unblock) // runs before the dispatcher's Close, even on failure
		// Bounded: a Submit blocked by backpressure fails the test, not the
		// binary. The context is the requests' own, so it ends with the test.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		t.Cleanup(cancel)
		var fs []*dispatcher.Future[int]
		submit := func(task func(context.Context) (int, error)) {
			f, err := dispatcher.Submit(ctx, d, task)
			require.NoError(t, err)
			fs = append(fs, f)
		}
		var runs [100]atomic.Int32
		counted := func(id int) func(context.Context) (int, error) {
			return func(context.Context) (int, error) { runs[id].Add(1); return id, nil }
		}
		// One blocker per worker, then two requests queued behind each.
		for range workers {
			submit(blocker(release))
		}
		for id := range 2 * workers {
			submit(counted(id))
		}
		if !assert.Eventually(t, func() bool { return d.Stats().Pending == 3*workers }, 2*time.Second, time.Millisecond) {
			t.Fatalf("%+v", d.Stats())
		}
		require.NoError(t, d.RemoveWorker(0))
		require.ErrorIs(t, d.RemoveWorker(0), dispatcher.ErrNoWorker, "removed twice")
		// New requests go to workers 1 and 2 only.
		for id := 2 * workers; id < 2*workers+20; id++ {
			submit(counted(id))
		}
		s := d.Stats()
		require.True(t, s.Workers[0].Removed)
		require.Equal(t, 3, s.Workers[0].Pending, "the removed worker keeps its queue: %+v", s.Workers)
		unblock()
		for i, f := range fs {
			v, err := waitFuture(t, f, 10*time.Second)
			require.NoError(t, err)
			if i >= workers {
				require.Equal(t, i-workers, v)
			}
		}
		for id := range 2*workers + 20 {
			require.Equal(t, int32(1), runs[id].Load(), "request %d", id)
		}
		require.Eventually(t, func() bool { return d.Stats().Pending == 0 }, 10*time.Second, time.Millisecond)
		s = d.Stats()
		require.Equal(t, int64(3), s.Workers[0].Completed, "worker 0 ran its blocker and its 2 queued requests, no new one")
		require.Equal(t, int64(len(fs)-3), s.Workers[1].Completed+s.Workers[2].Completed)
		// The removed worker has drained: its index is the next one added.
		i, err := d.AddWorker(1)
		require.NoError(t, err)
		require.Equal(t, 0, i)
		require.False(t, d.Stats().Workers[0].Removed)
		require.Equal(t, int64(3), d.Stats().RetiredCompleted, "the old worker 0's completions")
	})
}

// TestSetWeightZeroDrains: weight 0 stops new requests to a worker; it
// finishes its queue and can be brought back.
func TestSetWeightZeroDrains(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2), dispatcher.WithStrategyName("round-robin"))
		require.NoError(t, d.SetWeight(1, 0))
		within(t, 10*time.Second, "Do with worker 1 drained", func() {
			for i := range 20 {
				v, err := dispatcher.Do(context.Background(), d, ok(i))
				assert.NoError(t, err)
				assert.Equal(t, i, v)
			}
		})
		s := d.Stats()
		require.Equal(t, int64(20), s.Workers[0].Completed)
		require.Zero(t, s.Workers[1].Completed)
		require.Equal(t, 0, s.Workers[1].Weight)
		require.ErrorIs(t, d.SetWeight(0, 0), strategies.ErrLastMember, "the last positive weight stays")
		require.NoError(t, d.SetWeight(1, 3))
		within(t, 10*time.Second, "Do with worker 1 back", func() {
			for i := range 20 {
				_, err := dispatcher.Do(context.Background(), d, ok(i))
				assert.NoError(t, err)
			}
		})
		require.Positive(t, d.Stats().Workers[1].Completed)
	})
}

// TestMembershipWhileFlowing: add, remove and re-weight workers while
// requesters keep submitting; every request is answered once and run once.
func TestMembershipWhileFlowing(t *testing.T) {
	t.Parallel() // a soak: robust to a shared core, and the package's longest
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		for _, strategy := range []string{"least-pending", "round-robin"} {
			t.Run("strategy="+strategy, func(t *testing.T) {
				const requesters, per = 16, 500
				// The unbuffered completion channel, where the channel
				// engine has one: a worker then waits for the balancer
				// after each task, also while the balancer handles churn.
				opts := append([]dispatcher.Option{dispatcher.WithEngine(eng), dispatcher.WithWorkers(3), dispatcher.WithWorkerBuffer(2), dispatcher.WithStrategyName(strategy)},
					completionAxis(eng, 3)[0].opts...)
				d := newDispatcher(t, opts...)
				runs := make([]atomic.Int32, requesters*per)
				stop := make(chan struct{})
				var churns atomic.Int64
				var churner sync.WaitGroup
				churner.Go(func() {
					live := []int{0, 1, 2}
					for k := 0; ; k++ {
						select {
						case <-stop:
							return
						default:
						}
						switch k % 3 {
						case 0:
							i, err := d.AddWorker(1 + k%3)
							if assert.NoError(t, err) {
								live = append(live, i)
							}
						case 1:
							if len(live) > 1 {
								assert.NoError(t, d.RemoveWorker(live[0]))
								live = live[1:]
							}
						case 2:
							assert.NoError(t, d.SetWeight(live[len(live)-1], k%4+1))
						}
						churns.Add(1)
						time.Sleep(100 * time.Microsecond)
					}
				})
				within(t, 30*time.Second, "requesters during churn", func() {
					var wg sync.WaitGroup
					for g := range requesters {
						wg.Go(func() {
							for k := range per {
								id := g*per + k
								v, err := dispatcher.Do(context.Background(), d, func(context.Context) (int, error) {
									runs[id].Add(1)
									burn(time.Duration(id%7) * time.Microsecond)
									return id, nil
								})
								assert.NoError(t, err)
								assert.Equal(t, id, v)
							}
						})
					}
					wg.Wait()
				})
				close(stop)
				churner.Wait()
				for id := range runs {
					require.Equal(t, int32(1), runs[id].Load(), "request %d", id)
				}
				s := d.Stats()
				require.Equal(t, int64(requesters*per), s.Completed)
				require.Positive(t, churns.Load())
				t.Logf("%d churn events, %d workers created", churns.Load(), len(s.Workers))
			})
		}
	})
}

// TestStuckWorker: a task that hangs does not stop the others:
// least-pending routes around its worker, and Stats shows it (its Pending
// stays up).
func TestStuckWorker(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		const workers = 4
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(workers), dispatcher.WithWorkerBuffer(0))
		release := make(chan struct{})
		var releaseOnce sync.Once
		unblock := func() { releaseOnce.Do(func() { close(release) }) }
		t.Cleanup(unblock)
		hung, err := dispatcher.Submit(context.Background(), d, blocker(release))
		require.NoError(t, err)
		var stuck int
		require.Eventually(t, func() bool {
			for _, w := range d.Stats().Workers {
				if w.Pending == 1 {
					stuck = w.Index
					return true
				}
			}
			return false
		}, 10*time.Second, time.Millisecond)

		within(t, 20*time.Second, "requests around a stuck worker", func() {
			var wg sync.WaitGroup
			for g := range 16 {
				wg.Go(func() {
					for k := range 200 {
						v, err := dispatcher.Do(context.Background(), d, func(context.Context) (int, error) {
							burn(time.Duration(k%5) * time.Microsecond)
							return g, nil
						})
						assert.NoError(t, err)
						assert.Equal(t, g, v)
					}
				})
			}
			wg.Wait()
		})
		s := d.Stats()
		require.Equal(t, 1, s.Workers[stuck].Pending, "Stats shows the stuck worker")
		require.Zero(t, s.Workers[stuck].Completed)
		require.Equal(t, int64(16*200), s.Completed)
		unblock()
		_, err = waitFuture(t, hung, 10*time.Second)
		require.NoError(t, err)
	})
}

// TestNotDynamic: membership calls on a strategy that cannot change return
// ErrNotDynamic and leave requests flowing.
func TestNotDynamic(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2), dispatcher.WithStrategy(&fixedStrategy{pick: 1}))
		_, err := d.AddWorker(1)
		require.ErrorIs(t, err, dispatcher.ErrNotDynamic)
		require.ErrorIs(t, d.RemoveWorker(0), dispatcher.ErrNotDynamic)
		require.ErrorIs(t, d.SetWeight(0, 1), dispatcher.ErrNotDynamic)
		var v int
		within(t, 10*time.Second, "Do", func() { v, err = dispatcher.Do(context.Background(), d, ok(5)) })
		require.NoError(t, err)
		require.Equal(t, 5, v)
		require.Equal(t, int64(1), d.Stats().Workers[1].Completed)
	})
}

// fixedStrategy always picks the same index, valid or not.
type fixedStrategy struct{ pick int }

func (s *fixedStrategy) Pick(uint64) int         { return s.pick }
func (s *fixedStrategy) Done(int, time.Duration) {}

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
