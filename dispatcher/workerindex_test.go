package dispatcher_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

// perIndex counts tasks by the worker index their context reports; -1
// collects the tasks that got none.
type perIndex struct {
	mu sync.Mutex
	n  map[int]int64
}

func (p *perIndex) task(d *dispatcher.Dispatcher) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		i, ok := d.WorkerIndex(ctx)
		if !ok {
			i = -1
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.n == nil {
			p.n = map[int]int64{}
		}
		p.n[i]++
		return i, nil
	}
}

// requireMatchesStats: the tasks' own count per reported index is each
// worker's Completed in Stats, so every index a task read was the worker
// the dispatcher counted it on.
func (p *perIndex) requireMatchesStats(t *testing.T, d *dispatcher.Dispatcher) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	want := map[int]int64{}
	for _, w := range d.Stats().Workers {
		if w.Completed > 0 {
			want[w.Index] = w.Completed
		}
	}
	require.Equal(t, want, p.n)
}

// TestWorkerIndex: under WithWorkerIndex every task of Do, Go, Submit and
// a group reads the index of the worker the dispatcher ran it on, also for
// a worker added while requests flow and after one is removed.
func TestWorkerIndex(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(3), dispatcher.WithWorkerIndex(),
			dispatcher.WithStrategyName("round-robin"))
		ctx := context.Background()
		var p perIndex
		task := p.task(d)
		round := func() {
			t.Helper()
			within(t, 10*time.Second, "a round of tasks", func() {
				var wg sync.WaitGroup
				for range 4 {
					wg.Go(func() {
						for range 50 {
							_, err := dispatcher.Do(ctx, d, task)
							assert.NoError(t, err)
						}
					})
				}
				for range 100 {
					assert.NoError(t, d.Go(ctx, func(ctx context.Context) error { _, err := task(ctx); return err }))
				}
				f, err := dispatcher.Submit(ctx, d, task)
				if assert.NoError(t, err) {
					_, err = f.Wait(ctx)
					assert.NoError(t, err)
				}
				g := dispatcher.NewGroup[int](ctx, d)
				for range 30 {
					assert.NoError(t, g.Go(task))
				}
				_, err = g.Wait()
				assert.NoError(t, err)
				wg.Wait()
			})
			// Go's answers are not waited for: Stats counts them once done.
			require.Eventually(t, func() bool { return d.Stats().Completed == int64(p.total()) }, 5*time.Second, time.Millisecond)
			p.requireMatchesStats(t, d)
		}
		round()
		added, err := d.AddWorker(1)
		require.NoError(t, err)
		require.Equal(t, 3, added)
		require.NoError(t, d.RemoveWorker(0))
		before := p.count(0)
		round()
		require.Positive(t, p.count(added), "the added worker ran tasks and they read its index")
		require.Equal(t, before, p.count(0), "the removed worker ran nothing more")
		require.Zero(t, p.count(-1), "every task read an index")
	})
}

func (p *perIndex) total() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n int64
	for _, c := range p.n {
		n += c
	}
	return n
}

func (p *perIndex) count(i int) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n[i]
}

// TestWorkerIndexOff: without the option a task's context is its own and
// WorkerIndex says so, as it does for contexts no task received.
func TestWorkerIndexOff(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		type key struct{}
		ctx := context.WithValue(context.Background(), key{}, "mine")
		var got context.Context
		_, err := dispatcher.Do(ctx, d, func(c context.Context) (int, error) { got = c; return 0, nil })
		require.NoError(t, err)
		require.Equal(t, ctx, got, "the submitted context, unchanged")
		i, ok := d.WorkerIndex(got)
		require.False(t, ok)
		require.Equal(t, -1, i)

		on := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2), dispatcher.WithWorkerIndex())
		for _, c := range []context.Context{nil, context.Background(), ctx} {
			i, ok := on.WorkerIndex(c)
			require.False(t, ok, "%v: no task received it", c)
			require.Equal(t, -1, i)
		}
		var zero dispatcher.Dispatcher
		_, ok = zero.WorkerIndex(ctx)
		require.False(t, ok, "a Dispatcher not made by New")
	})
}

// TestWorkerIndexPerDispatcher: a task of a that submits to b with its own
// context gives b's task b's worker, and nothing when b has no index.
func TestWorkerIndexPerDispatcher(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		a := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(1), dispatcher.WithWorkerIndex())
		b := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWeights(0, 1), dispatcher.WithWorkerIndex())
		plain := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(1))
		type seen struct {
			a, b    int
			aOK, ok bool
		}
		inner := func(d *dispatcher.Dispatcher) seen {
			var s seen
			_, err := dispatcher.Do(context.Background(), a, func(ctx context.Context) (int, error) {
				_, err := dispatcher.Do(ctx, d, func(ctx context.Context) (int, error) {
					s.a, s.aOK = a.WorkerIndex(ctx)
					s.b, s.ok = d.WorkerIndex(ctx)
					return 0, nil
				})
				return 0, err
			})
			require.NoError(t, err)
			return s
		}
		within(t, 5*time.Second, "nested submits", func() {
			assert.Equal(t, seen{a: 0, aOK: true, b: 1, ok: true}, inner(b), "b's only weighted worker is 1")
			assert.Equal(t, seen{a: 0, aOK: true, b: -1, ok: false}, inner(plain))
		})
	})
}

// TestWorkerIndexKeptContext: requests are recycled, but the context a
// task got is its own: kept past the task's return while its worker runs
// many more, it still reports that worker, its parent's values and its
// parent's cancellation.
func TestWorkerIndexKeptContext(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWeights(1, 1), dispatcher.WithWorkerIndex(),
			dispatcher.WithStrategyName("round-robin"))
		type key struct{}
		parent, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
		defer cancel()
		kept := make([]context.Context, 2)
		for i := range kept {
			_, err := dispatcher.Do(parent, d, func(ctx context.Context) (int, error) { kept[i] = ctx; return 0, nil })
			require.NoError(t, err)
		}
		other := context.Background()
		within(t, 10*time.Second, "recycling", func() {
			for range 1000 {
				_, err := dispatcher.Do(other, d, ok(1))
				assert.NoError(t, err)
				assert.NoError(t, d.Go(other, func(ctx context.Context) error { _, err := ok(1)(ctx); return err }))
			}
		})
		seen := map[int]bool{}
		for _, ctx := range kept {
			i, ok := d.WorkerIndex(ctx)
			require.True(t, ok)
			seen[i] = true
			require.Equal(t, "v", ctx.Value(key{}))
			require.NoError(t, ctx.Err())
		}
		require.Equal(t, map[int]bool{0: true, 1: true}, seen, "round-robin ran one on each worker")
		cancel()
		for _, ctx := range kept {
			require.ErrorIs(t, ctx.Err(), context.Canceled)
			derived, stop := context.WithTimeout(ctx, time.Hour)
			<-derived.Done()
			stop()
			_, ok := d.WorkerIndex(derived)
			require.True(t, ok, "a derived context still carries the index")
		}
	})
}

// uncomparableCtx is a context value that == cannot compare: its field
// holds a slice.
type uncomparableCtx struct {
	context.Context
	v any
}

// TestWorkerIndexUncomparableContext: a worker that reuses its wrapper for
// the same context must not compare contexts that == panics on.
func TestWorkerIndexUncomparableContext(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(1), dispatcher.WithWorkerIndex())
		for k := range 3 {
			ctx := uncomparableCtx{context.Background(), []int{k}}
			i, err := dispatcher.Do(ctx, d, func(ctx context.Context) (int, error) {
				i, ok := d.WorkerIndex(ctx)
				if !ok {
					return 0, errors.New("no index")
				}
				return i, nil
			})
			require.NoError(t, err, "a panic comparing contexts comes back as a *PanicError")
			require.Equal(t, 0, i)
		}
	})
}

// TestWorkerIndexGivenTwice: like every option, a second one is refused.
func TestWorkerIndexGivenTwice(t *testing.T) {
	d, err := dispatcher.New(dispatcher.WithWorkerIndex(), dispatcher.WithWorkerIndex())
	require.ErrorIs(t, err, dispatcher.ErrBadOption)
	require.ErrorContains(t, err, "WithWorkerIndex given twice")
	require.Nil(t, d)
}

// TestWorkerIndexAllocations: under one context, the option adds no
// allocation to Do or Go; a context per request costs one per task.
func TestWorkerIndexAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2), dispatcher.WithWorkerIndex())
		var found atomic.Int64
		task := func(ctx context.Context) (int, error) {
			if _, ok := d.WorkerIndex(ctx); ok {
				found.Add(1)
			}
			return 1, nil
		}
		goTask := func(ctx context.Context) error { _, err := task(ctx); return err }
		ctx := context.Background()
		type key struct{}
		var shared, goAllocs, fresh float64
		within(t, 30*time.Second, "Do and Go", func() {
			shared = testing.AllocsPerRun(10000, func() { _, _ = dispatcher.Do(ctx, d, task) })
			goAllocs = testing.AllocsPerRun(10000, func() { _ = d.Go(ctx, goTask) })
			// The per-request context itself allocates one valueCtx, the
			// worker's wrapper one more.
			fresh = testing.AllocsPerRun(1000, func() { _, _ = dispatcher.Do(context.WithValue(ctx, key{}, 0), d, task) })
		})
		assert.Less(t, shared, 0.01)
		assert.Less(t, goAllocs, 0.01)
		assert.Equal(t, 2.0, fresh)
		require.Eventually(t, func() bool { return found.Load() == 21003 }, 5*time.Second, time.Millisecond,
			"every task read its index") // AllocsPerRun runs each once more to warm up
	})
}

// zeroCtx is a valid context of size zero whose type is not comparable
// (a [0]func() field): the wrapper's reuse test takes any zero-size type
// as safe for ==, and == on two values of an uncomparable type panics.
type zeroCtx struct{ _ [0]func() }

func (zeroCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (zeroCtx) Done() <-chan struct{}       { return nil }
func (zeroCtx) Err() error                  { return nil }
func (zeroCtx) Value(any) any               { return nil }

// TestWorkerIndexZeroSizeUncomparableContext: two tasks in a row
// on one worker under such a context both run and answer; the second must
// not be answered with a panic the task never raised.
func TestWorkerIndexZeroSizeUncomparableContext(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(1), dispatcher.WithWorkerIndex())
		for k := range 3 {
			v, err := dispatcher.Do(zeroCtx{}, d, func(ctx context.Context) (int, error) { return k, nil })
			require.NoError(t, err, "task %d", k)
			require.Equal(t, k, v)
		}
	})
}

// TestWorkerIndexRemovedWorkerReleasesContext: a removed worker that
// has exited keeps no task context reachable. The pool keeps every worker
// it ever made (indices are never reused), and with them each worker's
// indexer, whose last wrapper pins the last context it wrapped: under
// -churn-like membership, one context (and all its values) per removed
// worker stays alive for the dispatcher's lifetime.
func TestWorkerIndexRemovedWorkerReleasesContext(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(1), dispatcher.WithWorkerIndex())
		_, err := d.AddWorker(1)
		require.NoError(t, err)
		require.NoError(t, d.RemoveWorker(1)) // only worker 0 is live: the task runs there
		type key struct{}
		big := make([]byte, 1<<20)
		wp := weak.Make(&big[0])
		ctx := context.WithValue(context.Background(), key{}, big)
		i, err := dispatcher.Do(ctx, d, func(ctx context.Context) (int, error) {
			i, _ := d.WorkerIndex(ctx)
			return i, nil
		})
		require.NoError(t, err)
		require.Equal(t, 0, i)
		_, err = d.AddWorker(1)
		require.NoError(t, err)
		require.NoError(t, d.RemoveWorker(0))
		require.Eventually(t, func() bool { return d.Stats().Workers[0].Pending == 0 }, 5*time.Second, time.Millisecond)
		ctx, big = nil, nil
		_ = ctx
		require.Eventually(t, func() bool { runtime.GC(); return wp.Value() == nil }, 2*time.Second, 10*time.Millisecond,
			"removed worker 0 still pins the last context it ran a task with")
	})
}
