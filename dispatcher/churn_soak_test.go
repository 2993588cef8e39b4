package dispatcher_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/gobalancer/balancer/dispatcher"
	"github.com/gobalancer/balancer/strategies"
)

// churnSoak configures runChurnSoak: ops membership operations (Resize,
// AddWorker, RemoveWorker, SetWeight) interleaved with traffic.
type churnSoak struct {
	ops     int           // membership operations in the run
	maxLive int           // the churner keeps at most this many live workers
	bound   time.Duration // each phase must end within it
	seed    uint64
}

// churnCheckpoint is what runChurnSoak measures at an idle moment: after
// the first 1% of the operations and at the end, with the traffic stopped,
// every answer in, and the workers reset to 4 live of weight 1.
type churnCheckpoint struct {
	ops        int           // membership operations done so far
	heapInuse  uint64        // runtime.MemStats.HeapInuse after runtime.GC
	changeCost time.Duration // median of one AddWorker+RemoveWorker pair
	pickCost   time.Duration // median of one Do of a trivial task
	indices    int           // len(Stats().Workers)
}

func (c churnCheckpoint) String() string {
	return fmt.Sprintf("ops=%d heap_inuse=%.1f MiB change=%v pick=%v indices=%d",
		c.ops, float64(c.heapInuse)/(1<<20), c.changeCost, c.pickCost, c.indices)
}

// churnReport is a run's figures.
type churnReport struct {
	early, end churnCheckpoint
	requests   int64 // accepted requests (Do, Submit, Go and group tasks)
	panics     int64 // tasks that panicked
	slowHooks  int64 // panic handler calls that slept
	refused    int64 // membership operations refused with ErrLastMember
	mostLive   int   // the most live workers at once
	// mostIndices is the most worker indices (len(Stats().Workers)) seen
	// after a Resize: live workers plus removed ones still draining.
	mostIndices int
	// mostDraining is the most removed workers still draining seen after
	// a Resize.
	mostDraining int
	elapsed      time.Duration
}

func (r churnReport) String() string {
	return fmt.Sprintf("requests=%d panics=%d slow-handler=%d refused-ops=%d most-live=%d most-indices=%d most-draining=%d time=%v\n  at 1%%:   %v\n  at 100%%: %v",
		r.requests, r.panics, r.slowHooks, r.refused, r.mostLive, r.mostIndices, r.mostDraining, r.elapsed.Round(time.Millisecond), r.early, r.end)
}

// Each request id's state word: runs in the low 16 bits, answers above.
const (
	churnRun    = 1
	churnAnswer = 1 << 16
	churnBig    = 64 << 10 // bytes a large task captures
)

// churnPanics reports whether request id's task panics (about 1%).
func churnPanics(id int) bool { return id%97 == 13 }

// runChurnSoak is the churn soak's driver, shared by TestChurnSoak (a
// small count in the normal suite) and TestChurnSoakLong (-tags soak).
// One churner makes cfg.ops membership changes, paced so that about one
// request is accepted per change, while traffic flows from Do callers, a
// Submit caller, a Go caller and a group caller whose groups have tasks
// capturing 64 KiB each (CollectErrors, so a panic cancels nothing).
// About 1% of tasks panic; the panic handler sleeps 300 µs on every
// fourth call (the worker stays busy meanwhile). Every request's task
// counts its runs and every answer is counted: at the end each accepted
// id has run exactly once and been answered exactly once, with its own
// value or its *PanicError. The run is split at 1% of the operations;
// at that point and at the end the traffic stops and runChurnSoak
// measures (churnCheckpoint); it asserts nothing timed, callers do.
func runChurnSoak(t *testing.T, eng dispatcher.Engine, cfg churnSoak) churnReport {
	t.Helper()
	leaks := goleak.IgnoreCurrent()
	start := time.Now()
	var rep churnReport

	// Sized before the first measurement, so it weighs the same in both.
	limit := 2*cfg.ops + 4096
	state := make([]atomic.Uint32, limit)
	var next atomic.Int64 // next request id
	var opsDone atomic.Int64
	var doubles, badAnswers atomic.Int64
	var firstErr atomic.Pointer[error]
	fail := func(err error) { firstErr.CompareAndSwap(nil, &err) }

	var panics, slow atomic.Int64
	d, err := dispatcher.New(dispatcher.WithEngine(eng), dispatcher.WithWorkers(4),
		dispatcher.WithWorkerBuffer(4),
		dispatcher.WithPanicHandler(func(*dispatcher.PanicError) {
			if panics.Add(1)%4 == 0 {
				slow.Add(1)
				time.Sleep(300 * time.Microsecond)
			}
		}))
	require.NoError(t, err)
	closed := false
	t.Cleanup(func() {
		if !closed {
			closeWithin(t, d, 20*time.Second)
		}
	})

	run := func(id int) {
		if v := state[id].Add(churnRun); v&0xffff != 1 {
			doubles.Add(1)
		}
	}
	task := func(id int) func(context.Context) (int, error) {
		return func(context.Context) (int, error) {
			run(id)
			if churnPanics(id) {
				panic(fmt.Sprintf("churn %d", id))
			}
			return id, nil
		}
	}
	bigTask := func(id int) func(context.Context) (int, error) {
		buf := make([]byte, churnBig)
		buf[len(buf)-1] = byte(id)
		return func(context.Context) (int, error) {
			run(id)
			if churnPanics(id) {
				panic(fmt.Sprintf("churn %d", id))
			}
			if buf[len(buf)-1] != byte(id) {
				return -1, nil
			}
			return id, nil
		}
	}
	// answer checks request id's answer and counts it.
	answer := func(id, v int, err error) {
		if state[id].Add(churnAnswer)>>16 != 1 {
			doubles.Add(1)
		}
		var pe *dispatcher.PanicError
		switch {
		case churnPanics(id) && errors.As(err, &pe) && errors.Is(err, dispatcher.ErrTaskPanicked):
		case !churnPanics(id) && err == nil && v == id:
		default:
			badAnswers.Add(1)
			fail(fmt.Errorf("request %d answered (%d, %v)", id, v, err))
		}
	}
	// newID waits while traffic is more than 256 requests ahead of two
	// per membership change (the churner waits while it is more than 64
	// changes ahead of one request per change: never both).
	newID := func(stop *atomic.Bool) (int, bool) {
		for next.Load() > 2*opsDone.Load()+256 {
			if stop.Load() {
				return 0, false
			}
			time.Sleep(50 * time.Microsecond)
		}
		id := next.Add(1) - 1
		if id >= int64(limit) {
			next.Add(-1)
			return 0, false
		}
		return int(id), true
	}

	rng := rand.New(rand.NewPCG(cfg.seed, uint64(eng)))
	live := []int{0, 1, 2, 3}
	rep.mostLive = len(live)
	refresh := func() {
		live = live[:0]
		ws := d.Stats().Workers
		draining := 0
		for _, w := range ws {
			switch {
			case !w.Removed:
				live = append(live, w.Index)
			case w.Pending > 0:
				draining++
			}
		}
		rep.mostDraining = max(rep.mostDraining, draining)
		rep.mostIndices = max(rep.mostIndices, len(ws))
	}
	allowed := func(err error) {
		switch {
		case err == nil:
		case errors.Is(err, strategies.ErrLastMember):
			rep.refused++
		default:
			fail(err)
		}
	}
	// churn makes membership changes from op to end, each once traffic
	// has caught up with it (or has stopped).
	churn := func(from, to int, trafficDone *atomic.Bool) {
		for k := from; k < to && firstErr.Load() == nil; k++ {
			opsDone.Store(int64(k))
			for spins := 0; next.Load() < int64(k)-64 && !trafficDone.Load(); spins++ {
				if spins < 16 {
					runtime.Gosched()
				} else {
					time.Sleep(50 * time.Microsecond)
				}
			}
			switch x := rng.IntN(100); {
			case x < 10:
				allowed(d.Resize(1 + rng.IntN(cfg.maxLive)))
				refresh()
			case x < 40 && len(live) < cfg.maxLive:
				i, err := d.AddWorker(rng.IntN(4))
				allowed(err)
				if err == nil {
					live = append(live, i)
				}
			case x < 70 && len(live) > 1:
				j := rng.IntN(len(live))
				err := d.RemoveWorker(live[j])
				allowed(err)
				if err == nil {
					live = slices.Delete(live, j, j+1)
				}
			default:
				allowed(d.SetWeight(live[rng.IntN(len(live))], rng.IntN(4)))
			}
			rep.mostLive = max(rep.mostLive, len(live))
		}
		opsDone.Store(int64(to))
	}

	var goPending atomic.Int64
	// traffic runs until stop is set or the ids run out.
	traffic := func(wg *sync.WaitGroup, stop *atomic.Bool) {
		ctx := context.Background()
		for range 2 { // Do callers
			wg.Go(func() {
				for !stop.Load() && firstErr.Load() == nil {
					id, ok := newID(stop)
					if !ok {
						return
					}
					v, err := dispatcher.Do(ctx, d, task(id))
					answer(id, v, err)
				}
			})
		}
		wg.Go(func() { // Submit, 8 futures at a time
			ids := make([]int, 0, 8)
			fs := make([]*dispatcher.Future[int], 0, 8)
			for !stop.Load() && firstErr.Load() == nil {
				ids, fs = ids[:0], fs[:0]
				for range 8 {
					id, ok := newID(stop)
					if !ok {
						break
					}
					f, err := dispatcher.Submit(ctx, d, task(id))
					if err != nil {
						fail(fmt.Errorf("Submit %d: %w", id, err))
						return
					}
					ids, fs = append(ids, id), append(fs, f)
				}
				for k, f := range fs {
					v, err := f.Wait(ctx)
					answer(ids[k], v, err)
					f.Release()
				}
				if len(ids) < 8 {
					return
				}
			}
		})
		wg.Go(func() { // Go: the task is its own answer
			for !stop.Load() && firstErr.Load() == nil {
				id, ok := newID(stop)
				if !ok {
					return
				}
				goPending.Add(1)
				err := d.Go(ctx, func(context.Context) error {
					defer goPending.Add(-1)
					state[id].Add(churnAnswer)
					_, err := task(id)(ctx)
					return err
				})
				if err != nil {
					goPending.Add(-1)
					fail(fmt.Errorf("Go %d: %w", id, err))
					return
				}
			}
		})
		wg.Go(func() { // groups of 16, every fourth task capturing 64 KiB
			ids := make([]int, 0, 16)
			for !stop.Load() && firstErr.Load() == nil {
				g := dispatcher.NewGroup[int](ctx, d, dispatcher.CollectErrors())
				ids = ids[:0]
				for k := range 16 {
					id, ok := newID(stop)
					if !ok {
						break
					}
					tk := task(id)
					if k%4 == 0 {
						tk = bigTask(id)
					}
					if err := g.Go(tk); err != nil {
						fail(fmt.Errorf("group Go %d: %w", id, err))
					}
					ids = append(ids, id)
				}
				res, err := g.Wait()
				if len(res) != len(ids) {
					fail(fmt.Errorf("group: %d results for %d tasks", len(res), len(ids)))
					return
				}
				var pe *dispatcher.PanicError
				for k, id := range ids {
					if churnPanics(id) {
						// CollectErrors joins every panic; zero value.
						if !errors.As(err, &pe) {
							answer(id, res[k], nil) // counted as bad
							continue
						}
						answer(id, res[k], pe)
					} else {
						answer(id, res[k], nil)
					}
				}
				if len(ids) < 16 {
					return
				}
			}
		})
	}

	// phase churns from..to with traffic beside it, then stops the
	// traffic and waits for every Go task.
	phase := func(from, to int) {
		within(t, cfg.bound, fmt.Sprintf("churn ops %d..%d", from, to), func() {
			var wg sync.WaitGroup
			var stop, trafficDone atomic.Bool
			var tw sync.WaitGroup
			traffic(&tw, &stop)
			wg.Go(func() { tw.Wait(); trafficDone.Store(true) })
			churn(from, to, &trafficDone)
			stop.Store(true)
			wg.Wait()
			for goPending.Load() > 0 {
				time.Sleep(100 * time.Microsecond)
			}
		})
		require.Nil(t, firstErr.Load(), "first failure: %v", deref(firstErr.Load()))
	}

	// measure resets the workers to 4 live of weight 1 at an idle
	// moment, then measures.
	measure := func(ops int) churnCheckpoint {
		refresh()
		for _, i := range live {
			require.NoError(t, d.SetWeight(i, 1))
		}
		require.NoError(t, d.Resize(4))
		refresh()
		before := len(d.Stats().Workers)
		ctx := context.Background()
		const n = 1001
		samples := make([]time.Duration, n)
		for k := range samples {
			t0 := time.Now()
			i, err := d.AddWorker(1)
			require.NoError(t, err)
			require.NoError(t, d.RemoveWorker(i))
			samples[k] = time.Since(t0)
		}
		c := churnCheckpoint{ops: ops}
		slices.Sort(samples)
		c.changeCost = samples[n/2]
		for k := range samples {
			t0 := time.Now()
			v, err := dispatcher.Do(ctx, d, ok(k))
			samples[k] = time.Since(t0)
			require.NoError(t, err)
			require.Equal(t, k, v)
		}
		slices.Sort(samples)
		c.pickCost = samples[n/2]
		c.indices = len(d.Stats().Workers)
		require.Equal(t, before, c.indices, "idle AddWorker+RemoveWorker pairs reuse one index")
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		c.heapInuse = ms.HeapInuse
		return c
	}

	early := max(1, cfg.ops/100)
	phase(0, early)
	rep.early = measure(early)
	phase(early, cfg.ops)
	rep.end = measure(cfg.ops)

	s := d.Stats()
	closed = true
	closeWithin(t, d, 20*time.Second)
	rep.requests = next.Load()
	rep.panics = panics.Load()
	rep.slowHooks = slow.Load()
	rep.elapsed = time.Since(start)

	require.Zero(t, doubles.Load(), "a task ran twice or a request was answered twice")
	require.Zero(t, badAnswers.Load())
	want := uint32(churnRun + churnAnswer)
	var wrong int
	for id := range int(rep.requests) {
		if state[id].Load() != want {
			if wrong < 5 {
				t.Errorf("request %d: state %#x, want one run and one answer", id, state[id].Load())
			}
			wrong++
		}
	}
	require.Zero(t, wrong, "requests not run and answered exactly once")
	var p int64
	for id := range int(rep.requests) {
		if churnPanics(id) {
			p++
		}
	}
	require.Equal(t, p, rep.panics, "every panic seen by the handler once")
	require.Equal(t, p, s.Panics)
	require.Zero(t, s.PanicHandlerFailures)
	require.Equal(t, s.Dispatched, s.Completed)
	require.Greater(t, rep.requests, int64(cfg.ops/2), "traffic flowed beside the churn")
	goleak.VerifyNone(t, leaks)
	return rep
}

func deref(p *error) error {
	if p == nil {
		return nil
	}
	return *p
}

// TestChurnSoak is the churn soak's short version for the normal suite:
// 6 000 membership operations per engine beside traffic. It asserts
// exactly once and no leak (runChurnSoak), and bounds that do not depend
// on timing: at idle, 1001 AddWorker+RemoveWorker pairs add no index
// (runChurnSoak); the indices (len(Stats().Workers), the high-water mark
// of live workers plus removed ones not yet drained, whose index is
// reused once they have) stay within 64× the most live workers at once,
// where without reuse they would pass MaxWorkers; and heap in use at the
// end is within 2× its value after 1% plus 32 MiB. The timed flatness assertions are
// TestChurnSoakLong's (-tags soak).
func TestChurnSoak(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		rep := runChurnSoak(t, eng, churnSoak{ops: 6_000, maxLive: 8, bound: 60 * time.Second, seed: 1})
		t.Logf("%v", rep)
		require.LessOrEqual(t, rep.end.indices, 64*rep.mostLive)
		require.LessOrEqual(t, rep.end.heapInuse, 2*rep.early.heapInuse+32<<20)
	})
}
