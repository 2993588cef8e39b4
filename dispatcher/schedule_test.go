package dispatcher_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

const scheduleBound = 10 * time.Second

// forEachSchedule runs f as one subtest per schedule.
func forEachSchedule(t *testing.T, f func(t *testing.T, s dispatcher.Schedule)) {
	t.Helper()
	for _, s := range dispatcher.Schedules {
		t.Run("schedule="+s.String(), func(t *testing.T) { f(t, s) })
	}
}

// TestParseScheduleRoundTrip: every schedule's name parses back to it, in
// any case; unknown names and WithSchedule(0) are refused.
func TestParseScheduleRoundTrip(t *testing.T) {
	require.Len(t, dispatcher.Schedules, 4)
	for _, s := range dispatcher.Schedules {
		got, err := dispatcher.ParseSchedule(s.String())
		require.NoError(t, err)
		require.Equal(t, s, got)
	}
	got, err := dispatcher.ParseSchedule("FAIR")
	require.NoError(t, err)
	require.Equal(t, dispatcher.Fair, got)
	_, err = dispatcher.ParseSchedule("lifo")
	require.ErrorIs(t, err, dispatcher.ErrBadOption)
	_, err = dispatcher.New[int](dispatcher.WithSchedule(0))
	require.ErrorIs(t, err, dispatcher.ErrBadOption)
	_, err = dispatcher.New[int](dispatcher.WithSchedule(dispatcher.Fair + 1))
	require.ErrorIs(t, err, dispatcher.ErrBadOption)
	require.Equal(t, dispatcher.FIFO, dispatcher.DefaultSchedule)
}

// TestPriorityRefusals: a class other than 0 needs ByPriority, and a class
// out of range is refused under every schedule; the task never runs.
func TestPriorityRefusals(t *testing.T) {
	var ran atomic.Int32
	task := func(context.Context) (int, error) { ran.Add(1); return 1, nil }
	d := newDispatcher(t, dispatcher.WithWorkers(1))
	_, err := d.Priority(3).Do(context.Background(), task)
	require.ErrorIs(t, err, dispatcher.ErrWrongSchedule)
	_, err = d.Priority(3).Submit(context.Background(), task)
	require.ErrorIs(t, err, dispatcher.ErrWrongSchedule)
	require.ErrorIs(t, d.Priority(3).Go(context.Background(), task), dispatcher.ErrWrongSchedule)
	_, err = d.Priority(8).Do(context.Background(), task)
	require.ErrorIs(t, err, dispatcher.ErrBadOption)
	_, err = d.Priority(-1).Do(context.Background(), task)
	require.ErrorIs(t, err, dispatcher.ErrBadOption)
	v, err := d.Priority(0).Do(context.Background(), task) // class 0 is every schedule's
	require.NoError(t, err)
	require.Equal(t, 1, v)

	p := newDispatcher(t, dispatcher.WithWorkers(1), dispatcher.WithSchedule(dispatcher.ByPriority))
	_, err = p.Priority(8).Do(context.Background(), task)
	require.ErrorIs(t, err, dispatcher.ErrBadOption)
	require.NotErrorIs(t, err, dispatcher.ErrWrongSchedule)
	for c := range dispatcher.MaxPriority + 1 {
		v, err := p.Priority(c).Key(uint64(c)).Do(context.Background(), task)
		require.NoError(t, err)
		require.Equal(t, 1, v)
	}
	g := p.Group(context.Background())
	require.False(t, g.Priority(9).TryGo(task))
	require.NoError(t, g.Priority(7).Go(task))
	_, err = g.Wait()
	require.NoError(t, err)
	closeWithin(t, p, scheduleBound)
	require.Equal(t, int32(2+dispatcher.MaxPriority+1), ran.Load())
	cls := p.Stats().Classes
	require.Len(t, cls, dispatcher.MaxPriority+1)
	for c, line := range cls {
		require.Equal(t, strconv.Itoa(c), line.Name)
		want := int64(1)
		if c == 7 {
			want = 2
		}
		require.Equal(t, want, line.Completed, "class %d", c)
	}
}

// TestShareNeedsFair: Share is refused under every schedule but Fair, and
// a share out of range under Fair too.
func TestShareNeedsFair(t *testing.T) {
	forEachSchedule(t, func(t *testing.T, s dispatcher.Schedule) {
		d := newDispatcher(t, dispatcher.WithWorkers(1), dispatcher.WithSchedule(s))
		g := d.Group(context.Background(), dispatcher.Share(3))
		err := g.Go(ok(1))
		_, werr := g.Wait()
		if s != dispatcher.Fair {
			require.ErrorIs(t, err, dispatcher.ErrWrongSchedule)
			require.ErrorIs(t, werr, dispatcher.ErrWrongSchedule)
		} else {
			require.NoError(t, err)
			require.NoError(t, werr)
		}
		g = d.Group(context.Background(), dispatcher.Share(0))
		require.ErrorIs(t, g.Go(ok(1)), dispatcher.ErrBadOption)
		_, err = g.Wait()
		require.ErrorIs(t, err, dispatcher.ErrBadOption)
	})
}

// TestGroupLimit: never more than n of a group's tasks at once; with n
// active, TryGo reports false and Go waits; n < 1 is refused.
func TestGroupLimit(t *testing.T) {
	forEachSchedule(t, func(t *testing.T, s dispatcher.Schedule) {
		const limit, tasks = 2, 8
		d := newDispatcher(t, dispatcher.WithWorkers(4), dispatcher.WithSchedule(s))
		gate := make(chan struct{})
		var gateOnce sync.Once
		open := func() { gateOnce.Do(func() { close(gate) }) }
		t.Cleanup(open)
		var active, peak atomic.Int32
		task := func(v int) dispatcher.Task[int] {
			return func(context.Context) (int, error) {
				n := active.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				<-gate
				active.Add(-1)
				return v, nil
			}
		}
		g := d.Group(context.Background(), dispatcher.Limit(limit), dispatcher.Tenant("limited"))
		for i := range limit {
			require.NoError(t, g.Go(task(i)))
		}
		require.False(t, g.TryGo(task(-1)), "TryGo with %d active", limit)
		require.Eventually(t, func() bool { return active.Load() == limit }, scheduleBound, time.Millisecond)
		rest := make(chan error, 1)
		go func() {
			var err error
			for i := limit; i < tasks && err == nil; i++ {
				err = g.Go(task(i))
			}
			rest <- err
		}()
		select {
		case err := <-rest:
			t.Fatalf("Go did not wait with %d active: %v", limit, err)
		default:
		}
		open()
		within(t, scheduleBound, "the limited group", func() {
			assert.NoError(t, <-rest)
			vs, err := g.Wait()
			assert.NoError(t, err)
			assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7}, vs)
		})
		require.LessOrEqual(t, peak.Load(), int32(limit))
		require.Equal(t, int32(limit), peak.Load())

		for _, n := range []int{0, -1} {
			bad := d.Group(context.Background(), dispatcher.Limit(n))
			require.ErrorIs(t, bad.Go(ok(1)), dispatcher.ErrBadOption)
			require.False(t, bad.TryGo(ok(1)))
			_, err := bad.Wait()
			require.ErrorIs(t, err, dispatcher.ErrBadOption)
		}
	})
}

// TestDeadlineAdmission: with a measured task time, a request whose
// deadline comes before its estimated finish is refused with both
// ErrDeadlineUnmeetable and context.DeadlineExceeded and never runs; one
// without a deadline, or with a deadline far enough, is accepted.
func TestDeadlineAdmission(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		synctest.Test(t, func(t *testing.T) {
			const task = 10 * time.Millisecond
			d := bubbleDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(1), dispatcher.WithDeadlineAdmission())
			sleeper := func(v int) dispatcher.Task[int] {
				return func(context.Context) (int, error) { time.Sleep(task); return v, nil }
			}
			// Nothing measured yet: nothing refused.
			short, cancel := context.WithTimeout(context.Background(), time.Millisecond)
			defer cancel()
			_, err := d.Do(short, sleeper(0))
			if err != nil {
				require.ErrorIs(t, err, context.DeadlineExceeded) // it ran out of time, it was not refused
				require.NotErrorIs(t, err, dispatcher.ErrDeadlineUnmeetable)
			}
			for i := range 8 {
				v, err := d.Do(context.Background(), sleeper(i))
				require.NoError(t, err)
				require.Equal(t, i, v)
			}
			synctest.Wait() // the balancer has accounted the batch and published

			// Queue work ahead: a held worker and three behind it.
			release := make(chan struct{})
			held, err := d.Submit(context.Background(), blocker(release))
			require.NoError(t, err)
			var behind []*dispatcher.Future[int]
			for i := range 3 {
				f, err := d.Submit(context.Background(), sleeper(100+i))
				require.NoError(t, err)
				behind = append(behind, f)
			}
			synctest.Wait()

			var ran atomic.Bool
			tight, cancel2 := context.WithTimeout(context.Background(), task/2)
			defer cancel2()
			_, err = d.Do(tight, func(context.Context) (int, error) { ran.Store(true); return 1, nil })
			require.ErrorIs(t, err, dispatcher.ErrDeadlineUnmeetable)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			_, err = d.Submit(tight, func(context.Context) (int, error) { ran.Store(true); return 1, nil })
			require.ErrorIs(t, err, dispatcher.ErrDeadlineUnmeetable)
			err = d.Go(tight, func(context.Context) (int, error) { ran.Store(true); return 1, nil })
			require.ErrorIs(t, err, dispatcher.ErrDeadlineUnmeetable)

			// No deadline, and a deadline far away: accepted.
			free, err := d.Submit(context.Background(), sleeper(7))
			require.NoError(t, err)
			far, cancel3 := context.WithTimeout(context.Background(), time.Hour)
			defer cancel3()
			farF, err := d.Submit(far, sleeper(8))
			require.NoError(t, err)

			close(release)
			_, err = held.Wait(context.Background())
			require.NoError(t, err)
			for i, f := range behind {
				v, err := f.Wait(context.Background())
				require.NoError(t, err)
				require.Equal(t, 100+i, v)
			}
			v, err := free.Wait(context.Background())
			require.NoError(t, err)
			require.Equal(t, 7, v)
			v, err = farF.Wait(context.Background())
			require.NoError(t, err)
			require.Equal(t, 8, v)
			closeBubble(t, d)
			require.False(t, ran.Load(), "a refused request ran")
			s := d.Stats()
			require.Equal(t, int64(3), s.Tenants[0].Refused)
			require.Equal(t, int64(3), s.Classes[0].Refused)
		})
	})
}

// TestCancelWhileScheduled: a request whose context ends while it waits
// behind a busy worker is answered with the context's error and never
// runs, under every schedule and both engines.
func TestCancelWhileScheduled(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		forEachSchedule(t, func(t *testing.T, s dispatcher.Schedule) {
			synctest.Test(t, func(t *testing.T) {
				d := bubbleDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithSchedule(s),
					dispatcher.WithWorkers(1), dispatcher.WithWorkerBuffer(1))
				release, started := make(chan struct{}), make(chan struct{})
				held, err := d.Submit(context.Background(), func(context.Context) (int, error) {
					close(started)
					<-release
					return -1, nil
				})
				require.NoError(t, err)
				<-started // the worker is busy before the others arrive (ByDeadline would run them first)
				var ran atomic.Int32
				task := func(context.Context) (int, error) { ran.Add(1); return 1, nil }
				// Enough behind the busy worker that some wait in the
				// balancer's schedule, not only in the worker's queue; those
				// beyond the room wait in Submit, which the end of their
				// context answers too.
				const n = 6
				errs := make([]error, n+1)
				var cancels []context.CancelFunc
				var wg sync.WaitGroup
				for i := range n {
					ctx, cancel := context.WithCancel(context.Background())
					cancels = append(cancels, cancel)
					wg.Go(func() {
						f, err := d.Submit(ctx, task)
						if err == nil {
							_, err = f.Wait(context.Background())
						}
						errs[i] = err
					})
				}
				deadlined, cancelD := context.WithTimeout(context.Background(), time.Second)
				defer cancelD()
				wg.Go(func() {
					f, err := d.Submit(deadlined, task)
					if err == nil {
						_, err = f.Wait(context.Background())
					}
					errs[n] = err
				})
				synctest.Wait()
				for _, c := range cancels {
					c()
				}
				time.Sleep(2 * time.Second) // the deadline passes
				synctest.Wait()
				close(release)
				_, err = held.Wait(context.Background())
				require.NoError(t, err)
				wg.Wait()
				for i := range n {
					require.ErrorIs(t, errs[i], context.Canceled, "request %d", i)
				}
				require.ErrorIs(t, errs[n], context.DeadlineExceeded)
				closeBubble(t, d)
				require.Zero(t, ran.Load(), "a request whose context ended in the queue ran")
				st := d.Stats()
				require.Equal(t, st.Dispatched, st.Completed)
				require.Zero(t, st.Pending)
			})
		})
	})
}

// TestTenantStats: Stats.Tenants has the default tenant first, then the
// named tenants, with Completed matching what ran; Stats.Classes has a
// line per class.
func TestTenantStats(t *testing.T) {
	forEachSchedule(t, func(t *testing.T, s dispatcher.Schedule) {
		d := newDispatcher(t, dispatcher.WithWorkers(2), dispatcher.WithSchedule(s))
		for i := range 3 {
			v, err := d.Do(context.Background(), ok(i))
			require.NoError(t, err)
			require.Equal(t, i, v)
		}
		opts := []dispatcher.GroupOption{dispatcher.Tenant("alpha")}
		if s == dispatcher.Fair {
			opts = append(opts, dispatcher.Share(3))
		}
		for range 2 { // two groups of one name add up
			g := d.Group(context.Background(), opts...)
			for i := range 2 {
				require.NoError(t, g.Go(ok(i)))
			}
			_, err := g.Wait()
			require.NoError(t, err)
		}
		g := d.Group(context.Background())
		require.NoError(t, g.Go(ok(9)))
		_, err := g.Wait()
		require.NoError(t, err)
		closeWithin(t, d, scheduleBound)

		st := d.Stats()
		byName := map[string]dispatcher.FlowStats{}
		for _, l := range st.Tenants {
			byName[l.Name] = l
		}
		require.Equal(t, dispatcher.DefaultTenant, st.Tenants[0].Name)
		require.Equal(t, int64(3), byName["default"].Completed)
		require.Equal(t, int64(4), byName["alpha"].Completed)
		require.Equal(t, int64(1), byName["group"].Completed)
		var sum int64
		for _, l := range st.Tenants {
			sum += l.Completed
			require.Zero(t, l.Queued)
			require.Zero(t, l.Running)
		}
		require.Equal(t, st.Completed, sum)
		require.Len(t, st.Classes, dispatcher.MaxPriority+1)
		require.Equal(t, int64(8), st.Classes[0].Completed)
	})
}

// TestTenantNameRefused: the empty name and the default tenant's name are
// refused.
func TestTenantNameRefused(t *testing.T) {
	d := newDispatcher(t, dispatcher.WithWorkers(1))
	for _, name := range []string{"", dispatcher.DefaultTenant} {
		g := d.Group(context.Background(), dispatcher.Tenant(name))
		err := g.Go(ok(1))
		require.True(t, errors.Is(err, dispatcher.ErrBadOption), "Tenant(%q): %v", name, err)
		_, err = g.Wait()
		require.ErrorIs(t, err, dispatcher.ErrBadOption)
	}
}
