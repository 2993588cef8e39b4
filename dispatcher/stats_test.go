package dispatcher_test

import (
	"context"
	"encoding/json"
	"errors"
	"expvar"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

// expvarNames makes every published name unique in the process: expvar
// cannot unpublish, and -count=2 runs the tests again in one process.
var expvarNames atomic.Int64

// TestStatsExpvar: the dispatcher's Stats, published with expvar.Func, are
// served by /debug/vars over loopback, fresh at each read.
func TestStatsExpvar(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		name := fmt.Sprintf("balancer-test-%d", expvarNames.Add(1))
		expvar.Publish(name, expvar.Func(func() any { return d.Stats() }))
		var zero dispatcher.Dispatcher
		require.JSONEq(t, mustJSON(t, dispatcher.Stats{}), mustJSON(t, zero.Stats()), "a Dispatcher not made by New has empty Stats")

		srv := httptest.NewServer(expvar.Handler())
		defer srv.Close()
		require.True(t, strings.HasPrefix(srv.URL, "http://127.0.0.1:"), srv.URL)
		read := func() dispatcher.Stats {
			t.Helper()
			resp, err := srv.Client().Get(srv.URL + "/debug/vars")
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			var vars map[string]json.RawMessage
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&vars))
			var st dispatcher.Stats
			require.NoError(t, json.Unmarshal(vars[name], &st), "%s", vars[name])
			return st
		}
		require.Zero(t, read().Completed)
		within(t, 10*time.Second, "Do", func() {
			for range 10 {
				_, err := dispatcher.Do(context.Background(), d, ok(1))
				assert.NoError(t, err)
			}
		})
		s := read()
		require.Equal(t, int64(10), s.Completed)
		require.Len(t, s.Workers, 2)
	})
}

// TestStatsIntake: with the only worker busy, Stats tells the requests
// queued in the intake and (rings) the submitters blocked for room;
// afterwards every one of them runs.
func TestStatsIntake(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		const submitters = 5
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(1), dispatcher.WithWorkerBuffer(0), dispatcher.WithIntakeBuffer(2))
		release, started := make(chan struct{}), make(chan struct{})
		var releaseOnce sync.Once
		unblock := func() { releaseOnce.Do(func() { close(release) }) }
		t.Cleanup(unblock)
		f, err := dispatcher.Submit(context.Background(), d, func(context.Context) (int, error) { close(started); <-release; return 0, nil })
		require.NoError(t, err)
		within(t, 10*time.Second, "start", func() { <-started })

		var wg sync.WaitGroup
		t.Cleanup(wg.Wait)
		for i := range submitters {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				v, err := dispatcher.Do(ctx, d, ok(i))
				assert.NoError(t, err)
				assert.Equal(t, i, v)
			})
		}
		// The balancer takes nothing while its only worker is full: two
		// wait in the intake, the rest for room in it.
		want := func(s dispatcher.Stats) bool {
			return !s.Held && s.Queued == 2 && s.Blocked == submitters-2
		}
		var s dispatcher.Stats
		reached := assert.Eventually(t, func() bool { s = d.Stats(); return want(s) }, 10*time.Second, time.Millisecond)
		require.True(t, reached, "%+v", s)
		unblock()
		_, err = waitFuture(t, f, 10*time.Second)
		require.NoError(t, err)
		within(t, 10*time.Second, "submitters", wg.Wait)
		s = d.Stats()
		require.Zero(t, s.Queued)
		require.Zero(t, s.Blocked, "none blocked any more")
		require.Equal(t, int64(submitters+1), s.Completed)
	})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestStatsAfterStopIsACopy: Stats "returns a snapshot". Before the
// dispatcher stops every call gets its own Workers slice; after it stops
// every call returns the same final Stats by value, so all callers share
// one Workers backing array: a caller that sorts or edits its snapshot
// changes what every later Stats reports (and two callers doing so race).
func TestStatsAfterStopIsACopy(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d, err := dispatcher.New(dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		require.NoError(t, err)
		for i := range 10 {
			_, err := dispatcher.Do(context.Background(), d, ok(i))
			require.NoError(t, err)
		}
		closeWithin(t, d, 10*time.Second)
		s1 := d.Stats()
		want := s1.Workers[0].Completed
		s1.Workers[0].Completed = 12345 // the caller's own snapshot
		s1.Workers[0].Index = 99
		s2 := d.Stats()
		require.Equal(t, want, s2.Workers[0].Completed, "editing one Stats result after stop changed the next one")
		require.Equal(t, 0, s2.Workers[0].Index)
	})
}

// TestStatsAfterStopConcurrentSort: two goroutines each sort their
// own snapshot after stop. Run with -race: they write one shared array.
func TestStatsAfterStopConcurrentSort(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d, err := dispatcher.New(dispatcher.WithEngine(eng), dispatcher.WithWorkers(8))
		require.NoError(t, err)
		for i := range 50 {
			_, err := dispatcher.Do(context.Background(), d, ok(i))
			require.NoError(t, err)
		}
		closeWithin(t, d, 10*time.Second)
		var wg sync.WaitGroup
		for g := range 2 {
			wg.Go(func() {
				s := d.Stats()
				sort.Slice(s.Workers, func(i, j int) bool {
					if g == 0 {
						return s.Workers[i].Index > s.Workers[j].Index
					}
					return s.Workers[i].Index < s.Workers[j].Index
				})
			})
		}
		wg.Wait()
		s := d.Stats()
		for i, w := range s.Workers {
			require.Equal(t, i, w.Index, "Workers[%d] of the final Stats after two callers sorted their snapshots", i)
		}
	})
}

// Stats.Replaced counts a Goexit's replacement (a task's or a panic
// handler's) before the request is answered, so Stats read after the
// answer has it, exactly, even when the worker is removed and its index
// reused at once. It used to be counted on the way out of the old
// goroutine, after the answer: a read right after it could be one short,
// and an index reused before the old goroutine left lost the count for
// good (181 against 182 Goexits under churn). The window is a few
// instructions wide, so this end-to-end test rarely caught it;
// worker.TestReplacedCountedBeforeTheAnswer pins the order itself.
func TestStatsReplacedExact(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		within(t, 20*time.Second, "Goexits with index reuse", func() {
			// Every other task panics and the panic handler calls Goexit:
			// that replacement too is counted before the answer.
			d, err := dispatcher.New(dispatcher.WithWorkers(2), dispatcher.WithEngine(eng),
				dispatcher.WithPanicHandler(func(*dispatcher.PanicError) { runtime.Goexit() }))
			require.NoError(t, err)
			defer func() { assert.NoError(t, d.Close(context.Background())) }()
			ctx := context.Background()
			exit := func(context.Context) (int, error) { runtime.Goexit(); return 0, nil }
			panics := func(context.Context) (int, error) { panic("handler exits") }
			for n := int64(1); n <= 300; n++ {
				if n%2 == 0 {
					_, err := dispatcher.Do(ctx, d, panics)
					require.True(t, errors.Is(err, dispatcher.ErrTaskPanicked), "%v", err)
				} else {
					_, err := dispatcher.Do(ctx, d, exit)
					require.True(t, errors.Is(err, dispatcher.ErrTaskExited), "%v", err)
				}
				if !assert.Equal(t, n, d.Stats().Replaced, "read right after the %d-th Goexit's answer", n) {
					return
				}
				// Replace a worker at once: the lowest removed index that
				// has finished its queue is reused.
				i, err := d.AddWorker(1)
				require.NoError(t, err)
				for _, w := range d.Stats().Workers {
					if !w.Removed && w.Index != i {
						require.NoError(t, d.RemoveWorker(w.Index))
						break
					}
				}
			}
		})
	})
}

// TestStatsAccountBusyAtEnd: after a request's answer, Stats has its busy
// time, also when the worker has nothing queued behind it (it used to
// publish busy time only once idle, after the answer).
func TestStatsAccountBusyAtEnd(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e dispatcher.Engine) {
		for range 5 {
			d := newDispatcher(t, dispatcher.WithEngine(e), dispatcher.WithWorkers(1))
			var err error
			within(t, 5*time.Second, "Do", func() {
				_, err = dispatcher.Do(context.Background(), d, func(context.Context) (int, error) {
					time.Sleep(2 * time.Millisecond)
					return 0, nil
				})
			})
			require.NoError(t, err)
			s := d.Stats()
			require.Equal(t, int64(1), s.Workers[0].Completed)
			require.GreaterOrEqual(t, s.Workers[0].Busy, 2*time.Millisecond)
		}
	})
}

// TestPendingFigureAfterRemove: Pike's mean and deviation of pending are
// over live workers; a removed worker still draining its queue used to stay
// in the sums (mean inflated, variance negative and clamped to 0).
func TestPendingFigureAfterRemove(t *testing.T) {
	for _, e := range engines {
		t.Run("engine="+e.String(), func(t *testing.T) {
			d := newDispatcher(t, dispatcher.WithEngine(e), dispatcher.WithWorkers(2),
				dispatcher.WithStrategyName("round-robin"), dispatcher.WithWorkerBuffer(4))
			gate := make(chan struct{})
			release := sync.OnceFunc(func() { close(gate) })
			defer release() // also when a require fails: Close must not wait on gate
			ctx := context.Background()
			var fs []*dispatcher.Future[int]
			// Round-robin alternates: the odd requests go to worker 1 and
			// wait there; the even ones finish on worker 0.
			for k := range 6 {
				f, err := dispatcher.Submit(ctx, d, func(context.Context) (int, error) {
					if k%2 == 1 {
						<-gate
					}
					return 1, nil
				})
				require.NoError(t, err)
				fs = append(fs, f)
			}
			require.Eventually(t, func() bool { return d.Stats().Pending == 3 }, 5*time.Second, time.Millisecond)
			require.NoError(t, d.RemoveWorker(1))
			s := d.Stats()
			require.Equal(t, 3, s.Workers[1].Pending, "the removed worker still drains")
			require.InDelta(t, 0.0, s.PendingMean, 1e-9, "the mean is over the one live worker")
			require.InDelta(t, 0.0, s.PendingStdDev, 1e-9)
			// Many events with the removed worker's 3 requests still queued:
			// counted against the live worker, they would hold the run's
			// mean at 3 or above, where the live worker has at most 1.
			for range 200 {
				_, err := dispatcher.Do(ctx, d, ok(1))
				require.NoError(t, err)
			}
			require.Less(t, d.Stats().RunPendingMean, 1.5)
			release()
			for _, f := range fs {
				_, err := waitFuture(t, f, 5*time.Second)
				require.NoError(t, err)
			}
			s = d.Stats()
			require.InDelta(t, 0.0, s.PendingMean, 1e-9)
			require.Zero(t, s.Pending)
		})
	}
}
