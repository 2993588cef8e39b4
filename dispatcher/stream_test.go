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

// count is the input 0, 1, ..., n-1, noting in pulled how many items
// were read.
func count(n int, pulled *atomic.Int64) iter.Seq[int] {
	return func(yield func(int) bool) {
		for i := range n {
			if pulled != nil {
				pulled.Add(1)
			}
			if !yield(i) {
				return
			}
		}
	}
}

// square is a task that returns its item squared.
func square(_ context.Context, x int) (int, error) { return x * x, nil }

// collect ranges over seq within a bound and returns what it yielded.
func collect(t *testing.T, seq iter.Seq2[int, error]) (vals []int, errs []error) {
	t.Helper()
	within(t, 10*time.Second, "range over Map", func() {
		for v, err := range seq {
			vals = append(vals, v)
			errs = append(errs, err)
		}
	})
	return vals, errs
}

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

// TestGroupResultsInOrder: Results yields every task's answer in
// submission order, refusals and failures in their place; then the group
// is done: Wait returns the same error and no values (the range took
// them), submits and another range get ErrGroupDone.
func TestGroupResultsInOrder(t *testing.T) {
	boom := errors.New("boom")
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(3))
		g := dispatcher.NewGroup[int](context.Background(), d, dispatcher.CollectErrors())
		const n = 60
		for i := range n {
			switch i {
			case 7:
				require.ErrorIs(t, g.Go(nil), dispatcher.ErrNilTask)
			case 11:
				require.NoError(t, g.Go(func(context.Context) (int, error) { return -1, boom }))
			default:
				require.NoError(t, g.Go(func(context.Context) (int, error) {
					if i%5 == 0 {
						time.Sleep(100 * time.Microsecond)
					}
					return i, nil
				}))
			}
		}
		vals, errs := collect(t, g.Results())
		require.Len(t, vals, n)
		for i := range n {
			switch i {
			case 7:
				require.ErrorIs(t, errs[i], dispatcher.ErrNilTask)
			case 11:
				require.ErrorIs(t, errs[i], boom)
				require.Equal(t, -1, vals[i])
			default:
				require.NoError(t, errs[i])
				require.Equal(t, i, vals[i])
			}
		}
		res, err := g.Wait()
		require.Nil(t, res, "the range took the values")
		require.ErrorIs(t, err, boom)
		require.ErrorIs(t, err, dispatcher.ErrNilTask)
		require.ErrorIs(t, g.Go(ok(1)), dispatcher.ErrGroupDone)
		_, errs = collect(t, g.Results())
		require.Len(t, errs, 1)
		require.ErrorIs(t, errs[0], dispatcher.ErrGroupDone)
		require.ErrorIs(t, g.Context().Err(), context.Canceled)
	})
}

// TestGroupResultsWhileSubmitting: the loop body may submit more tasks;
// they are yielded in their turn, and the range ends when nothing more is
// submitted.
func TestGroupResultsWhileSubmitting(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		g := dispatcher.NewGroup[int](context.Background(), d)
		task := func(i int) func(context.Context) (int, error) {
			return func(context.Context) (int, error) { return i, nil }
		}
		require.NoError(t, g.Go(task(0)))
		var got []int
		within(t, 5*time.Second, "range", func() {
			for v, err := range g.Results() {
				assert.NoError(t, err)
				got = append(got, v)
				if v < 99 {
					assert.NoError(t, g.Go(task(v+1)))
				}
			}
		})
		require.Len(t, got, 100)
		for i, v := range got {
			require.Equal(t, i, v)
		}
	})
}

// TestGroupResultsBreak: leaving the range cancels the group and returns
// once every task is done; Wait then returns at once; a panic in the
// body leaves the group for Wait to collect.
func TestGroupResultsBreak(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		var running atomic.Int64
		blocking := whileRunning(&running)
		g := dispatcher.NewGroup[int](context.Background(), d)
		require.NoError(t, g.Go(ok(5)))
		for range 10 {
			require.NoError(t, g.Go(blocking))
		}
		within(t, 5*time.Second, "break", func() {
			for v := range g.Results() {
				assert.Equal(t, 5, v)
				break
			}
		})
		require.Zero(t, running.Load())
		res, err := g.Wait()
		require.Nil(t, res, "the range took the values")
		require.ErrorIs(t, err, context.Canceled)

		g = dispatcher.NewGroup[int](context.Background(), d)
		require.NoError(t, g.Go(ok(1)))
		require.NoError(t, g.Go(ok(2)))
		var p any
		within(t, 5*time.Second, "panic", func() {
			defer func() { p = recover() }()
			for range g.Results() {
				panic("body")
			}
		})
		require.Equal(t, "body", p)
		within(t, 5*time.Second, "Wait", func() {
			res, err = g.Wait()
		})
		require.NoError(t, err)
		require.Nil(t, res, "once a range has begun, the group keeps no values")

		var zero dispatcher.Group[int]
		_, errs := collect(t, zero.Results())
		require.Len(t, errs, 1)
		require.ErrorIs(t, errs[0], dispatcher.ErrNotStarted)
		_, errs = collect(t, (*dispatcher.Group[int])(nil).Results())
		require.ErrorIs(t, errs[0], dispatcher.ErrNotStarted)
	})
}
