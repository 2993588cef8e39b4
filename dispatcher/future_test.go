package dispatcher_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

// Submit, Wait and Release in a loop reuse one Future: no allocation per
// task, where Submit without Release allocates its Future and channel.
// AllocsPerRun rounds down to whole allocations per call, so a rare pool
// miss (a GC, or the race detector dropping a pooled item) still passes and
// an allocation per call does not.
func TestSubmitReleaseAllocatesNothing(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		ctx, task := context.Background(), ok(1)
		var reused, kept float64
		within(t, 30*time.Second, "Submit", func() {
			reused = testing.AllocsPerRun(10000, func() {
				f, err := dispatcher.Submit(ctx, d, task)
				if err != nil {
					panic(err)
				}
				if v, err := f.Wait(ctx); v != 1 || err != nil {
					panic(fmt.Sprint(v, err))
				}
				f.Release()
			})
			kept = testing.AllocsPerRun(1000, func() {
				f, _ := dispatcher.Submit(ctx, d, task)
				_, _ = f.Wait(ctx)
			})
		})
		assert.Less(t, reused, 1.0)
		assert.GreaterOrEqual(t, kept, 2.0, "without Release each Submit allocates")
	})
}

// Every Wait of a Future gets the answer, however many wait and however
// often; Done is closed for each that asks, before or after the answer.
func TestFutureManyWaiters(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		ctx := context.Background()
		gate := make(chan struct{})
		open := sync.OnceFunc(func() { close(gate) })
		defer open()
		f, err := dispatcher.Submit(ctx, d, func(context.Context) (int, error) { <-gate; return 7, errors.New("seven") })
		require.NoError(t, err)
		early := f.Done()
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 3 {
					v, err := f.Wait(ctx)
					assert.Equal(t, 7, v)
					assert.EqualError(t, err, "seven")
				}
			})
		}
		select {
		case <-early:
			t.Fatal("Done closed before the answer")
		default:
		}
		open()
		within(t, 10*time.Second, "the waiters", wg.Wait)
		<-early
		<-f.Done()
		f.Release()
	})
}

// A Wait that gives up on its context leaves the answer for the next.
func TestFutureWaitTimesOutThenAnswers(t *testing.T) {
	d := newDispatcher(t, dispatcher.WithWorkers(1))
	gate := make(chan struct{})
	f, err := dispatcher.Submit(context.Background(), d, func(context.Context) (int, error) { <-gate; return 3, nil })
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = f.Wait(ctx)
	require.ErrorIs(t, err, context.Canceled)
	close(gate)
	v, err := f.Wait(context.Background())
	require.NoError(t, err)
	require.Equal(t, 3, v)
	f.Release()
}

// Release before the answer: the task still runs, its answer is dropped,
// and the Future comes back clean for the next Submit (which may get it).
// A second Release is a no-op.
func TestFutureReleaseBeforeAnswer(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(1))
		ctx := context.Background()
		gate, ran := make(chan struct{}), make(chan struct{})
		f, err := dispatcher.Submit(ctx, d, func(context.Context) (int, error) { <-gate; close(ran); return 1, errors.New("dropped") })
		require.NoError(t, err)
		f.Release()
		f.Release()
		close(gate)
		within(t, 10*time.Second, "the released task", func() { <-ran })
		for i := range 100 {
			g, err := dispatcher.Submit(ctx, d, ok(i))
			require.NoError(t, err)
			v, err := g.Wait(ctx)
			require.NoError(t, err, "a reused Future kept an old answer")
			require.Equal(t, i, v)
			select {
			case <-g.Done():
			default:
				t.Fatal("Done not closed after the answer")
			}
			g.Release()
			g.Release()
		}
		require.Eventually(t, func() bool { return d.Stats().Completed == 101 }, 10*time.Second, time.Millisecond)
	})
}

// A Submit that fails hands its Future back itself, clean: the next
// Submit, which may reuse it, waits for its own answer.
func TestFutureOfFailedSubmitIsClean(t *testing.T) {
	d := newDispatcher(t, dispatcher.WithWorkers(1), dispatcher.WithWorkerBuffer(0))
	ctx := context.Background()
	gate := make(chan struct{})
	open := sync.OnceFunc(func() { close(gate) })
	defer open() // before the dispatcher's Close, should a check fail
	var held []*dispatcher.Future[int]
	defer func() {
		for _, f := range held {
			f.Release()
		}
	}()
	// Room may open for a moment while the balancer moves requests: keep
	// what gets in, until ten TrySubmits have failed.
	for failed := 0; failed < 10; {
		f, err := dispatcher.TrySubmit(ctx, d, func(context.Context) (int, error) { <-gate; return 1, nil })
		if err == nil {
			held = append(held, f)
			continue
		}
		require.ErrorIs(t, err, dispatcher.ErrBusy)
		failed++
	}
	open()
	for _, f := range held {
		_, err := f.Wait(ctx)
		require.NoError(t, err)
	}
	gate2 := make(chan struct{})
	open2 := sync.OnceFunc(func() { close(gate2) })
	defer open2()
	f, err := dispatcher.Submit(ctx, d, func(context.Context) (int, error) { <-gate2; return 2, nil })
	require.NoError(t, err)
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	_, err = f.Wait(short)
	require.ErrorIs(t, err, context.DeadlineExceeded, "a reused Future answered before its task ran")
	open2()
	v, err := f.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, v)
	f.Release()
}

// Every legal order of answer, Wait (several at once), Done and Release,
// on reused Futures, while Close abandons: each Wait sees its own task's
// answer or an abandon error, never another task's.
func TestFutureReuseStress(t *testing.T) {
	t.Parallel() // a soak: robust to a shared core, and the package's longest
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		for round := range 4 {
			d, err := dispatcher.New(dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
			require.NoError(t, err)
			var next atomic.Int64
			var wrong atomic.Int64
			var wg sync.WaitGroup
			stop := make(chan struct{})
			for g := range 8 {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(g), uint64(round)))
					ctx := context.Background()
					for {
						select {
						case <-stop:
							return
						default:
						}
						v := int(next.Add(1))
						spin := rng.IntN(3) == 0
						f, err := dispatcher.Submit(ctx, d, func(context.Context) (int, error) {
							if spin {
								for s := time.Now(); time.Since(s) < 5*time.Microsecond; {
								}
							}
							return v, nil
						})
						if err != nil {
							assert.ErrorIs(t, err, dispatcher.ErrClosed)
							return
						}
						check := func(got int, err error) {
							if err == nil && got != v {
								wrong.Add(1)
							}
							if err != nil {
								assert.ErrorIs(t, err, dispatcher.ErrClosed)
							}
						}
						switch rng.IntN(5) {
						case 0: // release at once
							f.Release()
						case 1: // several waiters, then release
							var ws sync.WaitGroup
							for range 1 + rng.IntN(4) {
								ws.Go(func() { check(f.Wait(ctx)) })
							}
							if rng.IntN(2) == 0 {
								<-f.Done()
							}
							ws.Wait()
							f.Release()
						case 2: // Done only, then release
							<-f.Done()
							f.Release()
						case 3: // Done called, released before the answer maybe
							_ = f.Done()
							short, cancel := context.WithTimeout(ctx, time.Duration(rng.IntN(3))*time.Microsecond)
							_, _ = f.Wait(short)
							cancel()
							f.Release()
						case 4: // never released
							check(f.Wait(ctx))
						}
					}
				})
			}
			time.Sleep(150 * time.Millisecond)
			cctx, cancel := context.WithTimeout(context.Background(), time.Duration(round)*time.Millisecond)
			_ = d.Close(cctx)
			cancel()
			close(stop)
			within(t, 20*time.Second, "the submitters", wg.Wait)
			within(t, 20*time.Second, "Done", func() { <-d.Done() })
			assert.Zero(t, wrong.Load(), "a Wait saw another task's answer")
		}
	})
}
