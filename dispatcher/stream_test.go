package dispatcher_test

import (
	"context"
	"errors"
	"iter"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

// TestMapOrdered: results come in input order on both engines, under
// every schedule, at windows from 1 up, with tasks of unequal length.
func TestMapOrdered(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		for _, sched := range schedules {
			for _, window := range []int{1, 3, 64} {
				d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(3), dispatcher.WithSchedule(sched))
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				opts := []dispatcher.GroupOption{dispatcher.Limit(window), dispatcher.Tenant("squares")}
				if sched == dispatcher.Fair {
					opts = append(opts, dispatcher.Share(3))
				}
				if sched == dispatcher.ByPriority {
					opts = append(opts, dispatcher.Priority(5))
				}
				const n = 300
				task := func(ctx context.Context, x int) (int, error) {
					if x%7 == 0 {
						time.Sleep(50 * time.Microsecond)
					}
					return x * x, nil
				}
				vals, errs := collect(t, dispatcher.Map(ctx, d, count(n, nil), task, opts...))
				cancel()
				require.Len(t, vals, n, "%v window %d", sched, window)
				for i, v := range vals {
					require.NoError(t, errs[i])
					require.Equal(t, i*i, v)
				}
				var completed int64
				for _, ts := range d.Stats().Tenants {
					if ts.Name == "squares" {
						completed = ts.Completed
					}
				}
				assert.EqualValues(t, n, completed, "the stream is its own tenant")
			}
		}
	})
}

// TestMapDefaultWindow: without Limit the window keeps the workers
// busy: with 4 workers, 4 tasks run at once.
func TestMapDefaultWindow(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(4))
		var running, peak atomic.Int64
		all := make(chan struct{})
		task := func(ctx context.Context, x int) (int, error) {
			r := running.Add(1)
			for p := peak.Load(); r > p && !peak.CompareAndSwap(p, r); p = peak.Load() {
			}
			if r == 4 {
				select {
				case <-all:
				default:
					close(all)
				}
			}
			select {
			case <-all:
			case <-time.After(2 * time.Second):
			}
			running.Add(-1)
			return x, nil
		}
		vals, _ := collect(t, dispatcher.Map(context.Background(), d, count(40, nil), task))
		require.Len(t, vals, 40)
		require.EqualValues(t, 4, peak.Load())
	})
}

// TestMapBackpressure: while the consumer is blocked, the input is not
// read beyond the window; across a long stream, never more than a window
// of items is read and not yet yielded.
func TestMapBackpressure(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		const window, n = 16, 20000
		var pulled atomic.Int64
		yielded := int64(0)
		within(t, 10*time.Second, "stream", func() {
			for v, err := range dispatcher.Map(context.Background(), d, count(n, &pulled), square, dispatcher.Limit(window)) {
				if !assert.NoError(t, err) {
					break
				}
				assert.Equal(t, int(yielded)*int(yielded), v)
				yielded++
				assert.LessOrEqual(t, pulled.Load()-yielded, int64(window), "read ahead of the consumer")
				if yielded == 100 {
					// A slow consumer: the input stops.
					before := pulled.Load()
					time.Sleep(50 * time.Millisecond)
					assert.Equal(t, before, pulled.Load(), "the input was read while the consumer was blocked")
					assert.LessOrEqual(t, before, yielded+window)
				}
			}
		})
		require.EqualValues(t, n, yielded)
		require.EqualValues(t, n, pulled.Load())
	})
}

// TestMapBreakCancelsInFlight: breaking out of the range, at the first
// item or later, cancels the items in flight and returns only once none
// of them runs; the dispatcher goes on serving.
func TestMapBreakCancelsInFlight(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		for _, at := range []int{0, 5} {
			d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
			var running, started atomic.Int64
			task := func(ctx context.Context, x int) (int, error) {
				if x <= at {
					return x, nil
				}
				started.Add(1)
				running.Add(1)
				defer running.Add(-1)
				<-ctx.Done() // runs until cancelled
				return 0, ctx.Err()
			}
			var pulled atomic.Int64
			got := 0
			within(t, 5*time.Second, "break", func() {
				for v, err := range dispatcher.Map(context.Background(), d, count(1_000_000, &pulled), task, dispatcher.Limit(8)) {
					assert.NoError(t, err)
					assert.Equal(t, got, v)
					if got == at {
						break
					}
					got++
				}
			})
			require.Equal(t, at, got)
			require.Zero(t, running.Load(), "a task still runs after the range ended")
			require.LessOrEqual(t, pulled.Load(), int64(at+1+8))
			v, err := dispatcher.Do(context.Background(), d, ok(7))
			require.NoError(t, err)
			require.Equal(t, 7, v)
		}
	})
}

// TestMapBreakDropsQueued: items queued behind other work are dropped
// at a break: the range ends at once, without waiting for a worker, and
// those items never run.
func TestMapBreakDropsQueued(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(1))
		var ran atomic.Int64
		task := func(ctx context.Context, x int) (int, error) {
			ran.Add(1)
			return x, nil
		}
		gate := make(chan struct{})
		first := true
		within(t, 5*time.Second, "break", func() {
			for range dispatcher.Map(context.Background(), d, count(100, nil), task, dispatcher.Limit(8)) {
				if first {
					// The only worker is now taken by other work; the
					// stream's next items wait behind it.
					first = false
					assert.NoError(t, d.Go(context.Background(), func(context.Context) error { <-gate; return nil }))
					time.Sleep(5 * time.Millisecond)
					continue
				}
				break
			}
		})
		before := ran.Load()
		close(gate)
		_, err := dispatcher.Do(context.Background(), d, ok(1)) // after everything queued before it
		require.NoError(t, err)
		require.Equal(t, before, ran.Load(), "a dropped item ran")
	})
}

// TestMapErrorStops: the first failure is yielded once, after the
// results before it; then the stream ends and what was in flight is
// cancelled.
func TestMapErrorStops(t *testing.T) {
	boom := errors.New("boom")
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		var running atomic.Int64
		task := func(ctx context.Context, x int) (int, error) {
			switch {
			case x == 10:
				return 0, boom
			case x > 10:
				running.Add(1)
				defer running.Add(-1)
				<-ctx.Done()
				return 0, ctx.Err()
			}
			return x, nil
		}
		var pulled atomic.Int64
		vals, errs := collect(t, dispatcher.Map(context.Background(), d, count(1_000_000, &pulled), task, dispatcher.Limit(4)))
		require.Len(t, vals, 11)
		for i := range 10 {
			require.NoError(t, errs[i])
			require.Equal(t, i, vals[i])
		}
		require.ErrorIs(t, errs[10], boom)
		require.Zero(t, vals[10])
		require.Zero(t, running.Load())
		require.LessOrEqual(t, pulled.Load(), int64(11+4))
	})
}

// TestMapErrorInInputOrder: a failure is yielded in input order: an
// item failing while an earlier one still runs waits for it, and the
// earlier item's result comes first; no input is read once the failure
// is known.
func TestMapErrorInInputOrder(t *testing.T) {
	boom := errors.New("boom")
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		one := make(chan struct{})
		task := func(ctx context.Context, x int) (int, error) {
			switch x {
			case 0:
				<-one
				time.Sleep(10 * time.Millisecond)
				return 100, nil
			case 1:
				close(one)
				return 0, boom
			}
			<-ctx.Done()
			return 0, ctx.Err()
		}
		var pulled atomic.Int64
		vals, errs := collect(t, dispatcher.Map(context.Background(), d, count(100, &pulled), task, dispatcher.Limit(2)))
		require.Equal(t, []int{100, 0}, vals)
		require.NoError(t, errs[0])
		require.ErrorIs(t, errs[1], boom)
		// Item 2 is read only if item 0's answer comes before the stream
		// has heard of item 1's failure (its sleep makes that rare; see
		// TestMapNoReadAfterFailure for the exact count), and is then
		// never submitted; nothing after it is read.
		require.LessOrEqual(t, pulled.Load(), int64(3), "input read after the failure")
	})
}

// TestMapCollectErrors: with CollectErrors every item is yielded,
// its error beside it, panics included.
func TestMapCollectErrors(t *testing.T) {
	boom := errors.New("boom")
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		task := func(ctx context.Context, x int) (int, error) {
			switch x % 5 {
			case 1:
				return -x, boom
			case 2:
				panic("task panics")
			}
			return x, nil
		}
		vals, errs := collect(t, dispatcher.Map(context.Background(), d, count(50, nil), task, dispatcher.CollectErrors(), dispatcher.Limit(4)))
		require.Len(t, vals, 50)
		for i := range 50 {
			switch i % 5 {
			case 1:
				require.ErrorIs(t, errs[i], boom)
				require.Equal(t, -i, vals[i], "the task's value beside its error")
			case 2:
				require.ErrorIs(t, errs[i], dispatcher.ErrTaskPanicked)
			default:
				require.NoError(t, errs[i])
				require.Equal(t, i, vals[i])
			}
		}
		require.EqualValues(t, 10, d.Stats().Panics)
	})
}

// TestMapTaskPanicStops: by default a panicking task is the stream's
// error (a *PanicError); the worker survives.
func TestMapTaskPanicStops(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(1))
		task := func(ctx context.Context, x int) (int, error) {
			if x == 3 {
				panic("boom")
			}
			return x, nil
		}
		vals, errs := collect(t, dispatcher.Map(context.Background(), d, count(10, nil), task, dispatcher.Limit(1)))
		require.Equal(t, []int{0, 1, 2, 0}, vals)
		var pe *dispatcher.PanicError
		require.ErrorAs(t, errs[3], &pe)
		require.Equal(t, "boom", pe.Value)
		_, err := dispatcher.Do(context.Background(), d, ok(1))
		require.NoError(t, err)
	})
}

// TestMapKeyedOrder: under consistent-hash, one key's items run in input
// order, on one worker.
func TestMapKeyedOrder(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(3), dispatcher.WithStrategyName("consistent-hash"))
		var mu sync.Mutex
		ran := map[uint64][]int{}
		task := func(ctx context.Context, x int) (int, error) {
			if x%11 == 0 {
				time.Sleep(20 * time.Microsecond)
			}
			mu.Lock()
			ran[uint64(x%5)] = append(ran[uint64(x%5)], x)
			mu.Unlock()
			return x, nil
		}
		key := func(x int) uint64 { return uint64(x % 5) }
		vals, _ := collect(t, dispatcher.MapKeyed(context.Background(), d, count(500, nil), key, task, dispatcher.Limit(32)))
		require.Len(t, vals, 500)
		mu.Lock()
		defer mu.Unlock()
		for k, xs := range ran {
			require.Len(t, xs, 100)
			for i, x := range xs {
				require.Equal(t, int(k)+5*i, x, "key %d out of order", k)
			}
		}
	})
}

// TestMapBadInput: each bad argument is one named error and the end,
// without reading the input or submitting; an empty input is a clean end.
func TestMapBadInput(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		closed, err := dispatcher.New(dispatcher.WithEngine(eng), dispatcher.WithWorkers(1))
		require.NoError(t, err)
		require.NoError(t, closed.Close(context.Background()))
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		bg := context.Background()
		var nilCtx context.Context // a variable, so linters let the nil check be tested
		var pulled atomic.Int64
		in := count(10, &pulled)
		cases := []struct {
			name string
			seq  iter.Seq2[int, error]
			want []error
		}{
			{"nil dispatcher", dispatcher.Map(bg, (*dispatcher.Dispatcher)(nil), in, square), []error{dispatcher.ErrNotStarted}},
			{"zero dispatcher", dispatcher.Map(bg, new(dispatcher.Dispatcher), in, square), []error{dispatcher.ErrNotStarted}},
			{"nil ctx", dispatcher.Map(nilCtx, d, in, square), []error{dispatcher.ErrNilContext}},
			{"nil seq", dispatcher.Map(bg, d, nil, square), []error{dispatcher.ErrNilSeq}},
			{"nil task", dispatcher.Map[int, int](bg, d, in, nil), []error{dispatcher.ErrNilTask}},
			{"window 0", dispatcher.Map(bg, d, in, square, dispatcher.Limit(0)), []error{dispatcher.ErrBadOption, dispatcher.ErrBadOption}},
			{"window -1", dispatcher.Map(bg, d, in, square, dispatcher.Limit(-1)), []error{dispatcher.ErrBadOption, dispatcher.ErrBadOption}},
			{"nil option", dispatcher.Map(bg, d, in, square, nil), []error{dispatcher.ErrBadOption}},
			{"nil key", dispatcher.MapKeyed(bg, d, in, nil, square), []error{dispatcher.ErrNilTask}},
			{"completion order", dispatcher.Map(bg, d, in, square, dispatcher.CompletionOrder()), []error{dispatcher.ErrBadOption}},
			{"share outside Fair", dispatcher.Map(bg, d, in, square, dispatcher.Share(2)), []error{dispatcher.ErrWrongSchedule, dispatcher.ErrBadOption}},
			{"share out of range", dispatcher.Map(bg, d, in, square, dispatcher.Share(0)), []error{dispatcher.ErrBadOption}},
			{"priority outside ByPriority", dispatcher.Map(bg, d, in, square, dispatcher.Priority(3)), []error{dispatcher.ErrWrongSchedule, dispatcher.ErrBadOption}},
			{"priority out of range", dispatcher.Map(bg, d, in, square, dispatcher.Priority(99)), []error{dispatcher.ErrBadOption}},
			{"empty tenant", dispatcher.Map(bg, d, in, square, dispatcher.Tenant("")), []error{dispatcher.ErrBadOption}},
			{"default tenant", dispatcher.Map(bg, d, in, square, dispatcher.Tenant(dispatcher.DefaultTenant)), []error{dispatcher.ErrBadOption}},
			{"closed dispatcher", dispatcher.Map(bg, closed, in, square), []error{dispatcher.ErrClosed}},
			{"cancelled context", dispatcher.Map(cancelled, d, in, square), []error{context.Canceled}},
		}
		for _, c := range cases {
			vals, errs := collect(t, c.seq)
			require.Len(t, errs, 1, c.name)
			require.Zero(t, vals[0], c.name)
			for _, want := range c.want {
				require.ErrorIs(t, errs[0], want, c.name)
			}
		}
		require.Zero(t, pulled.Load(), "bad input read the input")
		require.Zero(t, d.Stats().Dispatched, "bad input submitted")

		vals, errs := collect(t, dispatcher.Map(bg, d, count(0, nil), square))
		require.Empty(t, vals)
		require.Empty(t, errs)
	})
}

// TestMapInputPanics: a panicking input re-panics in the ranging
// goroutine once nothing of the stream runs; no worker is hurt.
func TestMapInputPanics(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		var running atomic.Int64
		in := func(yield func(int) bool) {
			for i := range 5 {
				if !yield(i) {
					return
				}
			}
			panic("input broke")
		}
		task := func(ctx context.Context, x int) (int, error) {
			running.Add(1)
			defer running.Add(-1)
			if x > 1 {
				<-ctx.Done()
			}
			return x, nil
		}
		var got any
		var vals []int
		within(t, 5*time.Second, "range", func() {
			defer func() { got = recover() }()
			for v := range dispatcher.Map(context.Background(), d, in, task, dispatcher.Limit(8)) {
				vals = append(vals, v)
			}
		})
		require.Equal(t, "input broke", got)
		require.Empty(t, vals, "the panic came at the 6th read, with the window not yet full")
		require.Zero(t, running.Load())
		require.Zero(t, d.Stats().Panics, "no worker saw the panic")
		_, err := dispatcher.Do(context.Background(), d, ok(1))
		require.NoError(t, err)

		// A panic in the key function is the same.
		got = nil
		within(t, 5*time.Second, "range", func() {
			defer func() { got = recover() }()
			key := func(x int) uint64 {
				if x == 3 {
					panic("key broke")
				}
				return uint64(x)
			}
			for range dispatcher.MapKeyed(context.Background(), d, count(10, nil), key, task) {
			}
		})
		require.Equal(t, "key broke", got)
		require.Zero(t, running.Load())
	})
}

// TestMapBodyPanics: a panic in the loop body leaves the range after the
// items in flight are cancelled and finished.
func TestMapBodyPanics(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		var running atomic.Int64
		task := func(ctx context.Context, x int) (int, error) {
			if x == 0 {
				return 0, nil
			}
			running.Add(1)
			defer running.Add(-1)
			<-ctx.Done()
			return x, nil
		}
		var got any
		within(t, 5*time.Second, "range", func() {
			defer func() { got = recover() }()
			for range dispatcher.Map(context.Background(), d, count(100, nil), task, dispatcher.Limit(4)) {
				panic("body broke")
			}
		})
		require.Equal(t, "body broke", got)
		require.Zero(t, running.Load())
	})
}

// TestMapContextEnds: cancelling the context mid-stream ends it with the
// context's error, once.
func TestMapContextEnds(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var errs []error
		n := 0
		within(t, 5*time.Second, "range", func() {
			for _, err := range dispatcher.Map(ctx, d, count(1_000_000, nil), square, dispatcher.CollectErrors()) {
				if err != nil {
					errs = append(errs, err)
					continue
				}
				if n++; n == 20 {
					cancel()
				}
			}
		})
		require.Equal(t, 20, n)
		require.Len(t, errs, 1)
		require.ErrorIs(t, errs[0], context.Canceled)
	})
}

// TestMapCloseMidway: Close while a stream runs ends it with ErrClosed
// after the items accepted before.
func TestMapCloseMidway(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d, err := dispatcher.New(dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		require.NoError(t, err)
		var last error
		n := 0
		within(t, 5*time.Second, "range", func() {
			for v, err := range dispatcher.Map(context.Background(), d, count(1_000_000, nil), square, dispatcher.Limit(4)) {
				if err != nil {
					last = err
					continue
				}
				assert.Equal(t, n*n, v)
				if n++; n == 10 {
					go d.Close(context.Background())
					<-d.Done()
				}
			}
		})
		require.ErrorIs(t, last, dispatcher.ErrClosed)
		require.GreaterOrEqual(t, n, 10)
	})
}

// TestMapRangedTwice: each range is a new run over the input.
func TestMapRangedTwice(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		seq := dispatcher.Map(context.Background(), d, count(30, nil), square)
		a, _ := collect(t, seq)
		b, _ := collect(t, seq)
		require.Len(t, a, 30)
		require.Equal(t, a, b)
	})
}

// TestMapAllocatesPerRangeNotPerItem: a range allocates its window once,
// nothing per item.
func TestMapAllocatesPerRangeNotPerItem(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	d := newDispatcher(t, dispatcher.WithWorkers(2))
	seq := func(n int) iter.Seq2[int, error] {
		return dispatcher.Map(context.Background(), d, count(n, nil), square, dispatcher.Limit(8))
	}
	small := testing.AllocsPerRun(20, func() {
		for range seq(10) {
		}
	})
	large := testing.AllocsPerRun(20, func() {
		for range seq(10_000) {
		}
	})
	require.Less(t, large-small, 100.0, "allocations grow with the stream: %v for 10, %v for 10000", small, large)
}

// flowLine is the Stats.Tenants line of the tenant name (zero if none).
func flowLine(d *dispatcher.Dispatcher, name string) dispatcher.FlowStats {
	for _, f := range d.Stats().Tenants {
		if f.Name == name {
			return f
		}
	}
	return dispatcher.FlowStats{}
}

// TestMapContextEndsWhileQueued: a stream whose items all wait behind
// another tenant's long task on the only worker ends as soon as its
// context ends, with the context's error, while that task still runs:
// the queued items are dropped as a break drops them (none of them ever
// runs, each is still answered once by the dispatcher). Before, the range
// waited for the oldest item's answer, so it ended only when the long
// task did. On both engines, under every schedule, with the items queued
// at the worker (its default buffer), in the balancer (worker buffer 0,
// room in the intake), or the stream itself waiting for room in the
// intake (worker buffer 0, the default intake of one request).
func TestMapContextEndsWhileQueued(t *testing.T) {
	const window = 8
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		forEachSchedule(t, func(t *testing.T, sched dispatcher.Schedule) {
			for _, buf := range []struct {
				name string
				opts []dispatcher.Option
			}{
				{"worker-buffer=default", nil},
				{"worker-buffer=0/intake=16", []dispatcher.Option{dispatcher.WithWorkerBuffer(0), dispatcher.WithIntakeBuffer(2 * window)}},
				{"worker-buffer=0/intake=default", []dispatcher.Option{dispatcher.WithWorkerBuffer(0)}},
			} {
				t.Run(buf.name, func(t *testing.T) {
					opts := append([]dispatcher.Option{dispatcher.WithEngine(eng), dispatcher.WithWorkers(1), dispatcher.WithSchedule(sched)}, buf.opts...)
					d := newDispatcher(t, opts...)

					gate := make(chan struct{})
					var release sync.Once
					open := func() { release.Do(func() { close(gate) }) }
					started := make(chan struct{})
					var longDone atomic.Bool
					long := dispatcher.NewGroup[int](context.Background(), d, dispatcher.Tenant("long"))
					require.NoError(t, long.Go(func(context.Context) (int, error) {
						close(started)
						<-gate // ignores its context: only the test ends it
						longDone.Store(true)
						return 1, nil
					}))
					within(t, 5*time.Second, "the long task starts", func() { <-started })

					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					var ran, pulled atomic.Int64
					task := func(ctx context.Context, x int) (int, error) {
						ran.Add(1)
						return x, nil
					}
					var vals []int
					var errs []error
					ended := make(chan struct{})
					go func() {
						defer close(ended)
						for v, err := range dispatcher.Map(ctx, d, count(1_000_000, &pulled), task, dispatcher.Limit(window)) {
							vals = append(vals, v)
							errs = append(errs, err)
						}
					}()
					// Whatever fails below, the range and the long task end
					// before the dispatcher's cleanup closes it.
					defer func() { cancel(); open(); <-ended }()

					require.Eventually(t, func() bool { return pulled.Load() >= window || d.Stats().Blocked > 0 }, 5*time.Second, time.Millisecond, "the stream fills its window or the intake")
					time.Sleep(5 * time.Millisecond) // the last item read reaches the dispatcher

					cancel()
					start := time.Now()
					select {
					case <-ended:
					case <-time.After(2 * time.Second):
					}
					elapsed := time.Since(start)
					require.Less(t, elapsed, time.Second, "the range outlived its context")
					require.False(t, longDone.Load(), "the long task still runs")
					require.Equal(t, []int{0}, vals)
					require.Len(t, errs, 1)
					require.ErrorIs(t, errs[0], context.Canceled)
					require.LessOrEqual(t, pulled.Load(), int64(window), "input read beyond the window")

					open()
					res, err := waitGroup(t, long, 5*time.Second)
					require.NoError(t, err)
					require.Equal(t, []int{1}, res)
					closeWithin(t, d, 10*time.Second)

					require.Zero(t, ran.Load(), "a dropped item ran")
					s := d.Stats()
					assert.Equal(t, s.Dispatched, s.Completed, "every request answered once")
					stream := flowLine(d, "stream")
					assert.Positive(t, stream.Completed, "the stream's items were queued")
					assert.LessOrEqual(t, stream.Completed, int64(window))
					assert.Equal(t, stream.Completed, s.Canceled, "every queued item answered with its cancellation, none run")
					assert.EqualValues(t, 1, flowLine(d, "long").Completed)
				})
			}
		})
	})
}

// TestMapLimitBoundsReads: the window counts the item being read: at
// every read of the input, at most the window's worth of items has been
// read and not yet yielded, at the smallest windows too (with window 1,
// item 1 is read only once item 0 is answered and yielded), and the
// window still runs that many tasks at once. Before, the input was read
// one item ahead of a full window. On both engines, under every schedule.
func TestMapLimitBoundsReads(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		forEachSchedule(t, func(t *testing.T, sched dispatcher.Schedule) {
			for window := 1; window <= 3; window++ {
				// Buffer 0: a worker holds the task it runs only, so the
				// window's tasks run on as many workers at once.
				d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(3), dispatcher.WithWorkerBuffer(0), dispatcher.WithSchedule(sched))
				var running, peak atomic.Int64
				task := func(ctx context.Context, x int) (int, error) {
					r := running.Add(1)
					defer running.Add(-1)
					for p := peak.Load(); r > p && !peak.CompareAndSwap(p, r); p = peak.Load() {
					}
					// Hold the first items until the window is all running,
					// so a window that ran fewer at once is seen.
					for end := time.Now().Add(2 * time.Second); peak.Load() < int64(window) && time.Now().Before(end); {
						time.Sleep(100 * time.Microsecond)
					}
					return x * x, nil
				}
				const n = 40
				reads, yielded := 0, 0 // both in the ranging goroutine
				var over []int         // reads - yielded, at reads beyond the window
				in := func(yield func(int) bool) {
					for i := range n {
						reads++
						if reads-yielded > window {
							over = append(over, reads-yielded)
						}
						if !yield(i) {
							return
						}
					}
				}
				within(t, 10*time.Second, "stream", func() {
					for v, err := range dispatcher.Map(context.Background(), d, in, task, dispatcher.Limit(window)) {
						if !assert.NoError(t, err) {
							break
						}
						assert.Equal(t, yielded*yielded, v)
						yielded++
					}
				})
				require.Empty(t, over, "window %d: items read and not yet yielded, beyond the window", window)
				require.Equal(t, n, yielded)
				require.Equal(t, n, reads)
				require.EqualValues(t, window, peak.Load(), "window %d: tasks running at once", window)
			}
		})
	})
}

// TestMapNoReadAfterFailure: once a task has failed (without
// CollectErrors) the input is not read again, so a one-shot input
// loses no item to a stream that ended: the failing item is the last one
// read. With window 1, item 0 fails and is the only item read. With a
// wider window the failing item is the window's last, and the items
// before it are held running until the failure is in, so the stream
// knows of it before it next would read. Before, one more item was read
// and dropped. On both engines, under every schedule.
func TestMapNoReadAfterFailure(t *testing.T) {
	boom := errors.New("boom")
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		forEachSchedule(t, func(t *testing.T, sched dispatcher.Schedule) {
			for window := 1; window <= 3; window++ {
				d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(3), dispatcher.WithWorkerBuffer(0), dispatcher.WithSchedule(sched))
				failing := window - 1
				gate := make(chan struct{})
				var release sync.Once
				open := func() { release.Do(func() { close(gate) }) }
				task := func(ctx context.Context, x int) (int, error) {
					if x == failing {
						return -1, boom
					}
					select {
					case <-gate:
					case <-time.After(5 * time.Second):
					}
					return x + 10, nil
				}
				var pulled atomic.Int64
				var vals []int
				var errs []error
				ended := make(chan struct{})
				go func() {
					defer close(ended)
					for v, err := range dispatcher.Map(context.Background(), d, count(100, &pulled), task, dispatcher.Limit(window)) {
						vals = append(vals, v)
						errs = append(errs, err)
					}
				}()
				defer func() { open(); <-ended }()
				// The failing task's completion is counted after the
				// stream has been told of its failure; only it can complete
				// while the gate is shut.
				require.Eventually(t, func() bool { return flowLine(d, "stream").Completed >= 1 }, 5*time.Second, time.Millisecond, "window %d: the failing task completes", window)
				open()
				within(t, 10*time.Second, "the stream ends", func() { <-ended })
				require.EqualValues(t, window, pulled.Load(), "window %d: input read after the failure", window)
				require.Len(t, vals, window)
				for i := range failing {
					require.NoError(t, errs[i])
					require.Equal(t, i+10, vals[i])
				}
				require.ErrorIs(t, errs[failing], boom)
				require.Zero(t, vals[failing])
			}
		})
	})
}
