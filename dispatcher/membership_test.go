package dispatcher_test

import (
	"context"
	"fmt"
	"math/rand/v2"
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

// TestChurnBeyondCompletionBuffer: AddWorker grows the workers far
// beyond the completion channel's capacity (the default is sized for the
// initial workers; 0 is unbuffered) while RemoveWorker and SetWeight churn
// under load from Do, Submit and Go. Every request must be answered once,
// nothing may hang, and Stats must balance at the end.
func TestChurnBeyondCompletionBuffer(t *testing.T) {
	t.Parallel() // a soak: robust to a shared core, and the package's longest
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		cells := completionAxis(eng, 2)
		if eng == dispatcher.Channels {
			cells = append(cells, completionCell{"default", nil})
		}
		for _, cc := range cells {
			for _, buf := range []int{0, 3} {
				t.Run(fmt.Sprintf("%s/buffer=%d", cc.name, buf), func(t *testing.T) {
					churnCell(t, append([]dispatcher.Option{dispatcher.WithEngine(eng), dispatcher.WithWorkers(2),
						dispatcher.WithWorkerBuffer(buf)}, cc.opts...)...)
				})
			}
		}
	})
}

func churnCell(t *testing.T, opts ...dispatcher.Option) {
	d := newDispatcher(t, opts...)
	const requesters, per = 16, 150
	var answered, goRan, goSent atomic.Int64
	var ids sync.Map
	stop := make(chan struct{})
	var churn sync.WaitGroup
	churn.Go(func() {
		live := []int{0, 1}
		rng := rand.New(rand.NewPCG(1, 2))
		for {
			select {
			case <-stop:
				return
			default:
			}
			switch op := rng.IntN(3); {
			case op == 0 && len(live) < 24:
				i, err := d.AddWorker(1 + rng.IntN(3))
				if assert.NoError(t, err, "AddWorker") {
					live = append(live, i)
				}
			case op == 1 && len(live) > 2:
				k := rng.IntN(len(live))
				err := d.RemoveWorker(live[k])
				if err == nil {
					live = append(live[:k], live[k+1:]...)
				} else {
					assert.ErrorIs(t, err, dispatcher.ErrBadOption, "RemoveWorker")
				}
			default:
				err := d.SetWeight(live[rng.IntN(len(live))], rng.IntN(4))
				if err != nil {
					assert.ErrorIs(t, err, dispatcher.ErrBadOption, "SetWeight")
				}
			}
			time.Sleep(50 * time.Microsecond)
		}
	})
	within(t, 60*time.Second, "requests under churn", func() {
		var wg sync.WaitGroup
		for g := range requesters {
			wg.Go(func() {
				for k := range per {
					id := g*per + k
					task := func(context.Context) (int, error) {
						if _, dup := ids.LoadOrStore(id, true); dup {
							t.Errorf("request %d ran twice", id)
						}
						if id%7 == 0 {
							time.Sleep(20 * time.Microsecond)
						}
						return id, nil
					}
					switch k % 3 {
					case 0:
						v, err := dispatcher.Do(context.Background(), d, task)
						if assert.NoError(t, err) && assert.Equal(t, id, v) {
							answered.Add(1)
						}
					case 1:
						f, err := dispatcher.Submit(context.Background(), d, task)
						if assert.NoError(t, err) {
							v, err := f.Wait(context.Background())
							if assert.NoError(t, err) && assert.Equal(t, id, v) {
								answered.Add(1)
							}
						}
					default:
						goSent.Add(1)
						err := d.Go(context.Background(), func(ctx context.Context) error {
							v, err := task(ctx)
							goRan.Add(1)
							_ = v
							return err
						})
						assert.NoError(t, err)
					}
				}
			})
		}
		wg.Wait()
	})
	close(stop)
	churn.Wait()
	closeWithin(t, d, 20*time.Second)
	require.Equal(t, goSent.Load(), goRan.Load(), "every accepted Go ran once before Close returned")
	s := d.Stats()
	checkQuiescent(t, s, answered.Load()+goRan.Load())
	t.Logf("workers %d, dispatched %d, stalls %d", len(s.Workers), s.Dispatched, s.Stalls)
}

// TestAddRemovePairsNeverExhaust: AddWorker/RemoveWorker pairs used to
// fail for good after 4094 with two workers live; now the index of the
// removed one is reused, and requests keep flowing between the pairs.
func TestAddRemovePairsNeverExhaust(t *testing.T) {
	t.Parallel() // a soak: robust to a shared core, and the package's longest
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		ctx := context.Background()
		for k := range 5000 {
			i, err := d.AddWorker(1)
			require.NoError(t, err, "pair %d", k)
			if k%500 == 0 {
				_, err := dispatcher.Do(ctx, d, ok(k))
				require.NoError(t, err)
			}
			require.NoError(t, d.RemoveWorker(i), "pair %d", k)
		}
		require.LessOrEqual(t, len(d.Stats().Workers), 4, "indices bounded by the live workers")
	})
}

// TestAddWorkerSlowStart: a worker added to a dispatcher whose strategy has
// slow start gets a share that grows over the window, from the floor to its
// weight, and then keeps its weight. The dispatcher picks once per request,
// in order, so the window counted in picks is the requests submitted and
// the ramp is the strategy's own on both engines.
func TestAddWorkerSlowStart(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		const window, segs = 1600, 8
		s, err := strategies.New("swrr", strategies.Equal(2), strategies.WithSlowStart(strategies.PickWindow(window), 0.1, 1))
		require.NoError(t, err)
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2), dispatcher.WithStrategy(s))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		t.Cleanup(cancel)
		// Each segment is submitted and answered before the next, so that
		// Completed counts it whole.
		segment := func(n int) int64 {
			before := d.Stats().Workers[2].Completed
			fs := make([]*dispatcher.Future[int], n)
			for k := range fs {
				fs[k], err = dispatcher.Submit(ctx, d, ok(k))
				require.NoError(t, err)
			}
			for _, f := range fs {
				_, err := waitFuture(t, f, 10*time.Second)
				require.NoError(t, err)
			}
			require.Eventually(t, func() bool { return d.Stats().Pending == 0 }, 10*time.Second, time.Millisecond)
			return d.Stats().Workers[2].Completed - before
		}
		i, err := d.AddWorker(1)
		require.NoError(t, err)
		require.Equal(t, 2, i)
		require.Equal(t, 1, d.Stats().Workers[i].Weight, "the dispatcher keeps the configured weight")
		shares := make([]int64, segs)
		for k := range shares {
			shares[k] = segment(window / segs)
		}
		t.Logf("new worker's picks per %d: %v (full share %d)", window/segs, shares, window/segs/3)
		for k := 1; k < segs; k++ {
			require.GreaterOrEqual(t, shares[k], shares[k-1], "segment %d: %v", k, shares)
		}
		per := float64(window / segs)
		assert.InDelta(t, 0.1/2.1, float64(shares[0])/per, 0.03, "the first segment is near the floor's share")
		assert.InDelta(t, 1.0/3, float64(shares[segs-1])/per, 0.04, "the last segment is near the full share")
		assert.InDelta(t, 100, segment(300), 2, "after the window: the full share, 1/3")
	})
}

// TestWeightsBesideStrategyHonoured: WithWeights beside WithStrategy
// is accepted (plan checks the weights), and WithWeights says "Weight 0
// drains a worker". The strategy was built over its own (equal) weights and
// never hears of WithWeights, so the zero-weight worker keeps getting
// requests: the option is accepted and ignored, or, read the other way,
// two contradicting weight sets are accepted. Either refuse the pair or
// make the weights reach the strategy.
func TestWeightsBesideStrategyHonoured(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		// Control: the same strategy built by name over WithWeights(1, 0)
		// never picks worker 1.
		ctl := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithStrategyName("round-robin"), dispatcher.WithWeights(1, 0))
		for i := range 20 {
			_, err := dispatcher.Do(context.Background(), ctl, ok(i))
			require.NoError(t, err)
		}
		require.Zero(t, ctl.Stats().Workers[1].Completed, "control: round-robin by name honours weight 0")

		s, err := strategies.New("round-robin", strategies.Equal(2))
		require.NoError(t, err)
		d, err := dispatcher.New(dispatcher.WithEngine(eng), dispatcher.WithStrategy(s), dispatcher.WithWeights(1, 0))
		if err != nil {
			require.ErrorIs(t, err, dispatcher.ErrBadOption) // refusing the pair is a fix too
			return
		}
		t.Cleanup(func() { closeWithin(t, d, 10*time.Second) })
		for i := range 20 {
			_, err := dispatcher.Do(context.Background(), d, ok(i))
			require.NoError(t, err)
		}
		st := d.Stats()
		require.Equal(t, 0, st.Workers[1].Weight, "Stats reports worker 1 at weight 0")
		require.Zero(t, st.Workers[1].Completed, "worker 1 has weight 0 (WithWeights(1, 0)) but ran %d of 20 requests", st.Workers[1].Completed)
	})
}
