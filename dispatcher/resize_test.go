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

// live returns the indices of the live workers.
func live(s dispatcher.Stats) []int {
	var l []int
	for _, w := range s.Workers {
		if !w.Removed {
			l = append(l, w.Index)
		}
	}
	return l
}

// TestResize: growing adds workers that serve; shrinking removes the
// highest-index live workers; bad sizes and static strategies are named
// errors that change nothing.
func TestResize(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2), dispatcher.WithStrategyName("round-robin"))
		require.NoError(t, d.Resize(5))
		require.Equal(t, []int{0, 1, 2, 3, 4}, live(d.Stats()))
		within(t, 10*time.Second, "Do", func() {
			for range 50 {
				_, err := dispatcher.Do(context.Background(), d, ok(1))
				assert.NoError(t, err)
			}
		})
		for _, w := range d.Stats().Workers {
			require.Positive(t, w.Completed, "worker %d served", w.Index)
			require.Equal(t, 1, w.Weight)
		}
		require.NoError(t, d.RemoveWorker(1))
		require.NoError(t, d.Resize(2))
		require.Equal(t, []int{0, 2}, live(d.Stats()), "the highest-index live workers go")
		require.NoError(t, d.Resize(2), "already that size")
		require.NoError(t, d.Resize(3))
		require.Equal(t, []int{0, 1, 2}, live(d.Stats()), "a drained worker's index is reused, lowest first")

		for _, n := range []int{0, -1, dispatcher.MaxWorkers + 1} {
			require.ErrorIs(t, d.Resize(n), dispatcher.ErrBadOption, "Resize(%d)", n)
		}
		require.Equal(t, []int{0, 1, 2}, live(d.Stats()))

		static := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2), dispatcher.WithStrategy(&fixedStrategy{pick: 0}))
		require.ErrorIs(t, static.Resize(3), dispatcher.ErrNotDynamic)
		require.Len(t, static.Stats().Workers, 2)

		weighted := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWeights(0, 1), dispatcher.WithStrategyName("swrr"))
		err := weighted.Resize(1)
		require.ErrorIs(t, err, dispatcher.ErrBadOption)
		require.ErrorIs(t, err, strategies.ErrLastMember, "worker 0 alone has weight 0")
		require.Equal(t, []int{0, 1}, live(weighted.Stats()))

		var zero dispatcher.Dispatcher
		require.ErrorIs(t, zero.Resize(1), dispatcher.ErrNotStarted)
		closed, err := dispatcher.New(dispatcher.WithEngine(eng))
		require.NoError(t, err)
		closeWithin(t, closed, 10*time.Second)
		require.ErrorIs(t, closed.Resize(2), dispatcher.ErrClosed)
	})
}

// TestResizeFinishesQueues: the removed workers run what they had queued
// before they exit; nothing is lost or run twice.
func TestResizeFinishesQueues(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		const workers = 3
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(workers), dispatcher.WithWorkerBuffer(4),
			dispatcher.WithIntakeBuffer(64), dispatcher.WithStrategyName("round-robin"))
		release := make(chan struct{})
		var releaseOnce sync.Once
		unblock := func() { releaseOnce.Do(func() { close(release) }) }
		t.Cleanup(unblock)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		t.Cleanup(cancel)
		var runs [3 * workers]atomic.Int32
		var fs []*dispatcher.Future[int]
		submit := func(task func(context.Context) (int, error)) {
			f, err := dispatcher.Submit(ctx, d, task)
			require.NoError(t, err)
			fs = append(fs, f)
		}
		for range workers {
			submit(blocker(release))
		}
		for id := range len(runs) - workers {
			submit(func(context.Context) (int, error) { runs[id].Add(1); return id, nil })
		}
		require.Eventually(t, func() bool { return d.Stats().Pending == len(runs) }, 5*time.Second, time.Millisecond)
		require.NoError(t, d.Resize(1))
		s := d.Stats()
		require.Equal(t, []int{0}, live(s))
		require.Equal(t, 3, s.Workers[2].Pending, "a removed worker keeps its queue")
		unblock()
		for i, f := range fs {
			_, err := waitFuture(t, f, 10*time.Second)
			require.NoError(t, err, "request %d", i)
		}
		for id := range len(runs) - workers {
			require.Equal(t, int32(1), runs[id].Load(), "request %d ran once", id)
		}
	})
}

// TestResizeUnderLoad: 8 requesters submit with Do, Go and groups while
// the dispatcher is resized through a range of sizes; every accepted
// request runs exactly once and every answer is right.
func TestResizeUnderLoad(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		const requesters, each = 8, 400
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2), dispatcher.WithWorkerBuffer(3))
		var runs [requesters * each]atomic.Int32
		var goDone sync.WaitGroup
		task := func(id int) func(context.Context) (int, error) {
			return func(context.Context) (int, error) {
				runs[id].Add(1)
				if id%3 == 0 {
					burn(10 * time.Microsecond)
				}
				return id, nil
			}
		}
		stop := make(chan struct{})
		resized := make(chan int)
		first := make(chan struct{}) // closed after the first resize
		go func() {
			sizes := []int{1, 6, 2, 8, 3, 1, 4}
			k := 0
			// Bounded: indices are never reused, so every resize up makes
			// the balancer's per-turn scans longer.
			for ; k < 500; k++ {
				select {
				case <-stop:
					resized <- k
					return
				default:
				}
				if err := d.Resize(sizes[k%len(sizes)]); err != nil {
					t.Errorf("Resize: %v", err)
				}
				if k == 0 {
					close(first)
				}
				time.Sleep(100 * time.Microsecond)
			}
			<-stop
			resized <- k
		}()
		within(t, 30*time.Second, "requesters", func() {
			<-first
			var wg sync.WaitGroup
			for r := range requesters {
				wg.Go(func() {
					ctx := context.Background()
					g := dispatcher.NewGroup[int](ctx, d)
					for i := range each {
						id := r*each + i
						switch i % 3 {
						case 0:
							v, err := dispatcher.Do(ctx, d, task(id))
							assert.NoError(t, err)
							assert.Equal(t, id, v)
						case 1:
							goDone.Add(1)
							run := task(id)
							assert.NoError(t, d.Go(ctx, func(ctx context.Context) error {
								defer goDone.Done()
								_, err := run(ctx)
								return err
							}))
						default:
							assert.NoError(t, g.Go(task(id)))
						}
					}
					res, err := g.Wait()
					assert.NoError(t, err)
					for k, v := range res {
						assert.Equal(t, r*each+3*k+2, v)
					}
				})
			}
			wg.Wait()
			goDone.Wait()
		})
		close(stop)
		k := <-resized
		t.Logf("%d resizes", k)
		for id := range runs {
			require.Equal(t, int32(1), runs[id].Load(), "request %d", id)
		}
		require.Positive(t, k, "resized while requests flowed")
		require.Equal(t, int64(len(runs)), d.Stats().Completed)
	})
}

// TestResizeChurnReusesIndices: the worker cap counts live workers, and a
// removed worker's index comes back once it has drained. Resize(1000) and
// Resize(2), five times, all succeed (the fifth used to be refused at
// worker 4096, after leaving 104 workers live), and Stats lists at most
// the 1000 indices ever live at once.
func TestResizeChurnReusesIndices(t *testing.T) {
	t.Parallel() // a soak: robust to a shared core, and the package's longest
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		for round := range 5 {
			require.NoError(t, d.Resize(1000), "round %d", round)
			_, err := dispatcher.Do(context.Background(), d, ok(1))
			require.NoError(t, err)
			require.NoError(t, d.Resize(2), "round %d", round)
		}
		s := d.Stats()
		require.LessOrEqual(t, len(s.Workers), 1000)
		live := 0
		for _, w := range s.Workers {
			if !w.Removed {
				live++
			}
		}
		require.Equal(t, 2, live)
		v, err := dispatcher.Do(context.Background(), d, ok(7))
		require.NoError(t, err)
		require.Equal(t, 7, v)
	})
}
