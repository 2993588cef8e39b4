package dispatcher_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
	"github.com/gobalancer/balancer/strategies"
)

// TestStrategyConformance: every registered strategy keeps the
// dispatcher's promises on both engines, not only the two that the larger
// tests use. The cells are small: they look for a strategy whose picks
// break the balancer (a lost or doubled request, a deadlock at the
// tightest buffers, a drained worker that is still fed), not for load.
func TestStrategyConformance(t *testing.T) {
	t.Parallel() // a soak: robust to a shared core, and the package's longest
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		for _, strategy := range strategies.Names() {
			t.Run("strategy="+strategy, func(t *testing.T) {
				opts := []dispatcher.Option{dispatcher.WithEngine(eng), dispatcher.WithStrategyName(strategy)}
				t.Run("exactly-once", func(t *testing.T) { conformExactlyOnce(t, opts) })
				t.Run("rendezvous", func(t *testing.T) { conformRendezvous(t, opts) })
				t.Run("drain", func(t *testing.T) {
					s, err := strategies.New(strategy, []int{1})
					require.NoError(t, err)
					if _, dynamic := s.(strategies.Dynamic); !dynamic {
						// No weights to change: the promise is the refusal.
						d := newDispatcher(t, opts...)
						require.ErrorIs(t, d.SetWeight(0, 0), dispatcher.ErrNotDynamic)
						return
					}
					conformDrain(t, opts)
				})
			})
		}
	})
}

const conformBound = 10 * time.Second

// conformExactlyOnce: keyed requesters (so affinity strategies spread them)
// mix Do and Submit; every request runs once and is answered once with its
// own value.
func conformExactlyOnce(t *testing.T, opts []dispatcher.Option) {
	const requesters, per = 8, 40
	d := newDispatcher(t, append(opts, dispatcher.WithWorkers(3), dispatcher.WithWorkerBuffer(2))...)
	runs := make([]atomic.Int32, requesters*per)
	answers := make([]atomic.Int32, requesters*per)
	within(t, conformBound, "requesters", func() {
		var wg sync.WaitGroup
		for g := range requesters {
			k := d.Key(uint64(g))
			wg.Go(func() {
				for j := range per {
					id := g*per + j
					task := func(context.Context) (int, error) { runs[id].Add(1); return id, nil }
					var v int
					var err error
					if j%2 == 0 {
						v, err = dispatcher.Do(context.Background(), k, task)
					} else {
						var f *dispatcher.Future[int]
						if f, err = dispatcher.Submit(context.Background(), k, task); err == nil {
							v, err = f.Wait(context.Background())
						}
					}
					if errors.Is(err, dispatcher.ErrClosed) {
						return // the bound failed the test and its cleanup closed d
					}
					if assert.NoError(t, err) && assert.Equal(t, id, v) {
						answers[id].Add(1)
					}
				}
			})
		}
		wg.Wait()
	})
	for id := range runs {
		require.Equal(t, int32(1), runs[id].Load(), "request %d runs", id)
		require.Equal(t, int32(1), answers[id].Load(), "request %d answers", id)
	}
	closeWithin(t, d, conformBound)
	s := d.Stats()
	require.Equal(t, int64(requesters*per), s.Completed)
	require.Equal(t, s.Dispatched, s.Completed)
}

// conformRendezvous: worker buffer 0 and intake 0 with four times as many
// closed-loop requesters as workers, the tightest buffers, where a pick of
// a busy worker must hold the balancer without wedging it.
func conformRendezvous(t *testing.T, opts []dispatcher.Option) {
	const workers, requesters, per = 2, 8, 25
	d := newDispatcher(t, append(opts, dispatcher.WithWorkers(workers), dispatcher.WithWorkerBuffer(0), dispatcher.WithIntakeBuffer(0))...)
	var answered atomic.Int64
	within(t, conformBound, "requesters at buffer 0, intake 0", func() {
		requestLoop(t, d, requesters, per, &answered)
	})
	require.Equal(t, int64(requesters*per), answered.Load())
	closeWithin(t, d, conformBound)
	require.Zero(t, d.Stats().Pending)
}

// conformDrain: worker 0 starts as the only weighted worker, so it
// provably holds a blocked task and a full queue behind it; the others are
// weighted in, requesters flow, and SetWeight(0, 0) is called while
// worker 0 is still full. Nothing can reach it between the change and the
// release of its blocker, so every request it completes beyond those it
// held at the change was sent to it after SetWeight returned.
func conformDrain(t *testing.T, opts []dispatcher.Option) {
	const buffer, requesters, per = 2, 6, 30
	const depth = buffer + 1
	d := newDispatcher(t, append(opts, dispatcher.WithWeights(1, 0, 0), dispatcher.WithWorkerBuffer(buffer))...)
	release := make(chan struct{})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(unblock) // before the dispatcher's Close, also on failure

	var queued []*dispatcher.Future[int]
	for i := range depth {
		task := ok(-1 - i)
		if i == 0 {
			task = blocker(release)
		}
		f, err := dispatcher.Submit(context.Background(), d, task)
		require.NoError(t, err)
		queued = append(queued, f)
	}
	if !assert.Eventually(t, func() bool { return d.Stats().Workers[0].Pending == depth }, conformBound, time.Millisecond) {
		t.Fatalf("worker 0 never filled: %+v", d.Stats())
	}
	require.NoError(t, d.SetWeight(1, 1))
	require.NoError(t, d.SetWeight(2, 1))

	var answered atomic.Int64
	flowing := make(chan struct{})
	go func() {
		defer close(flowing)
		requestLoop(t, d, requesters, per, &answered)
	}()
	// Let requests flow before the change; a strategy that picks the full
	// worker 0 holds the balancer, so a held request also counts as flow.
	require.Eventually(t, func() bool { return answered.Load() >= 20 || d.Stats().Held }, conformBound, time.Millisecond)

	require.NoError(t, d.SetWeight(0, 0))
	at := d.Stats()
	require.Equal(t, depth, at.Workers[0].Pending, "worker 0 is still full at the change")
	require.Zero(t, at.Workers[0].Completed)
	unblock()

	within(t, conformBound, "requesters after the drain", func() { <-flowing })
	require.Equal(t, int64(requesters*per), answered.Load())
	for i, f := range queued {
		v, err := waitFuture(t, f, conformBound)
		require.NoError(t, err)
		require.Equal(t, -1-i, v)
	}
	require.Eventually(t, func() bool { return d.Stats().Workers[0].Pending == 0 }, conformBound, time.Millisecond, "the drained worker's pending reaches 0")
	w := d.Stats().Workers[0]
	require.Equal(t, 0, w.Weight)
	require.Equal(t, int64(depth), w.Completed,
		"worker 0 completed %d requests sent to it after SetWeight(0, 0) returned (a request was held at the change: %v)",
		w.Completed-int64(depth), at.Held)
}

// TestScheduleConformance: the conformance cells under every schedule on
// both engines, with least-pending (dynamic, so drain applies), plus
// tenants and classes flowing through membership changes, and Close both
// draining and abandoning what the schedule holds.
func TestScheduleConformance(t *testing.T) {
	t.Parallel() // a soak: robust to a shared core, and the package's longest
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		for _, sched := range schedules {
			t.Run("schedule="+sched.String(), func(t *testing.T) {
				opts := []dispatcher.Option{dispatcher.WithEngine(eng), dispatcher.WithStrategyName("least-pending"), dispatcher.WithSchedule(sched)}
				t.Run("exactly-once", func(t *testing.T) { conformExactlyOnce(t, opts) })
				t.Run("rendezvous", func(t *testing.T) { conformRendezvous(t, opts) })
				t.Run("drain", func(t *testing.T) { conformDrain(t, opts) })
				t.Run("tenants-churn", func(t *testing.T) { conformTenantsChurn(t, sched, opts) })
				t.Run("close-drain", func(t *testing.T) { conformCloseSchedule(t, sched, opts, false) })
				t.Run("close-abandon", func(t *testing.T) { conformCloseSchedule(t, sched, opts, true) })
			})
		}
	})
}

// conformTenantsChurn: groups (tenants with a Limit, and a Share under
// Fair) and plain requesters in every class the schedule allows flow
// while workers are added, removed and re-weighted; every task runs once
// and every group's Wait has every value in order.
func conformTenantsChurn(t *testing.T, sched dispatcher.Schedule, opts []dispatcher.Option) {
	const groups, per, plain = 4, 30, 60
	d := newDispatcher(t, append(opts, dispatcher.WithWorkers(3), dispatcher.WithWorkerBuffer(2))...)
	classes := 1
	if sched == dispatcher.ByPriority {
		classes = dispatcher.MaxPriority + 1
	}
	runs := make([]atomic.Int32, groups*per+plain)
	stop := make(chan struct{})
	churned := make(chan int)
	go func() {
		n := 0
		defer func() { churned <- n }()
		live := []int{0, 1, 2}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			switch i % 3 {
			case 0:
				if w, err := d.AddWorker(1 + i%2); assert.NoError(t, err) {
					live = append(live, w)
				}
			case 1:
				if len(live) > 1 {
					if err := d.RemoveWorker(live[0]); err == nil || !assert.ErrorIs(t, err, strategies.ErrLastMember) {
						live = live[1:]
					}
				}
			default:
				err := d.SetWeight(live[len(live)-1], i%3)
				if err != nil {
					assert.ErrorIs(t, err, strategies.ErrLastMember)
				}
			}
			n++
			time.Sleep(200 * time.Microsecond)
		}
	}()
	within(t, conformBound, "tenants and plain requesters", func() {
		var wg sync.WaitGroup
		for g := range groups {
			wg.Go(func() {
				gopts := []dispatcher.GroupOption{dispatcher.Limit(1 + g), dispatcher.Tenant(fmt.Sprintf("t%d", g%2))}
				if sched == dispatcher.Fair {
					gopts = append(gopts, dispatcher.Share(1+3*g))
				}
				grp := dispatcher.NewGroup[int](context.Background(), d, gopts...)
				for j := range per {
					id := g*per + j
					task := func(context.Context) (int, error) { runs[id].Add(1); return id, nil }
					if !assert.NoError(t, grp.Priority(j%classes).Go(task)) {
						break
					}
				}
				vs, err := grp.Wait()
				if assert.NoError(t, err) && assert.Len(t, vs, per) {
					for j, v := range vs {
						assert.Equal(t, g*per+j, v)
					}
				}
			})
		}
		wg.Go(func() {
			for j := range plain {
				id := groups*per + j
				task := func(context.Context) (int, error) { runs[id].Add(1); return id, nil }
				v, err := dispatcher.Do(context.Background(), d.Priority(j%classes), task)
				if assert.NoError(t, err) {
					assert.Equal(t, id, v)
				}
			}
		})
		wg.Wait()
	})
	close(stop)
	require.Positive(t, <-churned)
	for id := range runs {
		require.Equal(t, int32(1), runs[id].Load(), "request %d runs", id)
	}
	closeWithin(t, d, conformBound)
	s := d.Stats()
	require.Equal(t, int64(groups*per+plain), s.Completed)
	var tenants, classesDone int64
	for _, l := range s.Tenants {
		tenants += l.Completed
	}
	for _, l := range s.Classes {
		classesDone += l.Completed
	}
	require.Equal(t, s.Completed, tenants)
	require.Equal(t, s.Completed, classesDone)
}

// conformCloseSchedule: in a synctest bubble, one worker is held and
// requests of several tenants, classes and deadlines wait behind it. Close
// either drains them all (each runs once with its value) or, when its
// context ends first, abandons them: answered with ErrClosed and the
// deadline, never run; the held task finishes and Done closes.
func conformCloseSchedule(t *testing.T, sched dispatcher.Schedule, opts []dispatcher.Option, abandon bool) {
	synctest.Test(t, func(t *testing.T) {
		d := bubbleDispatcher(t, append(opts, dispatcher.WithWorkers(1), dispatcher.WithWorkerBuffer(1), dispatcher.WithIntakeBuffer(32))...)
		release, started := make(chan struct{}), make(chan struct{})
		held, err := dispatcher.Submit(context.Background(), d, func(context.Context) (int, error) { close(started); <-release; return -1, nil })
		require.NoError(t, err)
		<-started
		classes := 1
		if sched == dispatcher.ByPriority {
			classes = dispatcher.MaxPriority + 1
		}
		const n = 12
		var runs [n]atomic.Int32
		var fs []*dispatcher.Future[int]
		var gopts []dispatcher.GroupOption
		if sched == dispatcher.Fair {
			gopts = append(gopts, dispatcher.Share(3))
		}
		grp := dispatcher.NewGroup[int](context.Background(), d, gopts...)
		for i := range n {
			task := func(context.Context) (int, error) { runs[i].Add(1); return i, nil }
			ctx := context.Background()
			if i%3 == 1 {
				c, cancel := context.WithTimeout(ctx, time.Hour+time.Duration(n-i)*time.Second)
				defer cancel()
				ctx = c
			}
			f, err := dispatcher.Submit(ctx, d.Priority(i%classes), task)
			require.NoError(t, err)
			fs = append(fs, f)
		}
		groupIDs := 4
		for i := range groupIDs {
			require.NoError(t, grp.Priority(i%classes).Go(func(context.Context) (int, error) { return 100 + i, nil }))
		}
		synctest.Wait()
		closed := make(chan error, 1)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if !abandon {
			ctx = context.Background()
		}
		go func() { closed <- d.Close(ctx) }()
		synctest.Wait()
		if abandon {
			time.Sleep(2 * time.Second) // Close's deadline passes with the worker held
			synctest.Wait()
			require.ErrorIs(t, <-closed, context.DeadlineExceeded)
			for i, f := range fs {
				_, err := f.Wait(context.Background())
				require.ErrorIs(t, err, dispatcher.ErrClosed, "request %d", i)
				require.ErrorIs(t, err, context.DeadlineExceeded, "request %d", i)
			}
			_, err := grp.Wait()
			require.ErrorIs(t, err, dispatcher.ErrClosed)
			close(release)
			<-d.Done()
			// Nothing waiting behind the held task ran.
			var ran int32
			for i := range runs {
				require.LessOrEqual(t, runs[i].Load(), int32(1))
				ran += runs[i].Load()
			}
			require.Zero(t, ran, "an abandoned request ran")
		} else {
			select {
			case err := <-closed:
				t.Fatalf("Close returned %v with requests waiting", err)
			default:
			}
			close(release)
			require.NoError(t, <-closed)
			<-d.Done()
			for i, f := range fs {
				v, err := f.Wait(context.Background())
				require.NoError(t, err)
				require.Equal(t, i, v)
				require.Equal(t, int32(1), runs[i].Load())
			}
			vs, err := grp.Wait()
			require.NoError(t, err)
			require.Equal(t, []int{100, 101, 102, 103}, vs)
		}
		v, err := held.Wait(context.Background())
		require.NoError(t, err)
		require.Equal(t, -1, v)
		s := d.Stats()
		require.Equal(t, s.Dispatched, s.Completed)
		require.Zero(t, s.Pending)
	})
}
