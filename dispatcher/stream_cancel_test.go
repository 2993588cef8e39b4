package dispatcher_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

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
