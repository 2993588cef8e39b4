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
	for _, s := range schedules {
		t.Run("schedule="+s.String(), func(t *testing.T) { f(t, s) })
	}
}

// TestScheduleText: every schedule's text reads back to it, in any case
// (flag.TextVar); unknown names and WithSchedule(0) are refused.
func TestScheduleText(t *testing.T) {
	require.Len(t, schedules, 4)
	for _, s := range schedules {
		text, err := s.MarshalText()
		require.NoError(t, err)
		var got dispatcher.Schedule
		require.NoError(t, got.UnmarshalText(text))
		require.Equal(t, s, got)
	}
	var got dispatcher.Schedule
	require.NoError(t, got.UnmarshalText([]byte("FAIR")))
	require.Equal(t, dispatcher.Fair, got)
	require.ErrorIs(t, got.UnmarshalText([]byte("lifo")), dispatcher.ErrBadOption)
	require.Equal(t, dispatcher.Fair, got, "a refused name leaves the schedule unchanged")
	_, err := dispatcher.Schedule(0).MarshalText()
	require.ErrorIs(t, err, dispatcher.ErrBadOption)
	_, err = dispatcher.New(dispatcher.WithSchedule(0))
	require.ErrorIs(t, err, dispatcher.ErrBadOption)
	_, err = dispatcher.New(dispatcher.WithSchedule(dispatcher.Fair + 1))
	require.ErrorIs(t, err, dispatcher.ErrBadOption)
	require.Equal(t, dispatcher.FIFO, dispatcher.DefaultSchedule)
}

// TestPriorityRefusals: a class other than 0 needs ByPriority, and a class
// out of range is refused under every schedule; the task never runs.
func TestPriorityRefusals(t *testing.T) {
	var ran atomic.Int32
	task := func(context.Context) (int, error) { ran.Add(1); return 1, nil }
	d := newDispatcher(t, dispatcher.WithWorkers(1))
	_, err := dispatcher.Do(context.Background(), d.Priority(3), task)
	require.ErrorIs(t, err, dispatcher.ErrWrongSchedule)
	_, err = dispatcher.Submit(context.Background(), d.Priority(3), task)
	require.ErrorIs(t, err, dispatcher.ErrWrongSchedule)
	require.ErrorIs(t, d.Priority(3).Go(context.Background(), func(ctx context.Context) error { _, err := task(ctx); return err }), dispatcher.ErrWrongSchedule)
	_, err = dispatcher.Do(context.Background(), d.Priority(8), task)
	require.ErrorIs(t, err, dispatcher.ErrBadOption)
	_, err = dispatcher.Do(context.Background(), d.Priority(-1), task)
	require.ErrorIs(t, err, dispatcher.ErrBadOption)
	v, err := dispatcher.Do(context.Background(), d.Priority(0), task) // class 0 is every schedule's
	require.NoError(t, err)
	require.Equal(t, 1, v)

	p := newDispatcher(t, dispatcher.WithWorkers(1), dispatcher.WithSchedule(dispatcher.ByPriority))
	_, err = dispatcher.Do(context.Background(), p.Priority(8), task)
	require.ErrorIs(t, err, dispatcher.ErrBadOption)
	require.NotErrorIs(t, err, dispatcher.ErrWrongSchedule)
	for c := range dispatcher.MaxPriority + 1 {
		v, err := dispatcher.Do(context.Background(), p.Priority(c).Key(uint64(c)), task)
		require.NoError(t, err)
		require.Equal(t, 1, v)
	}
	g := dispatcher.NewGroup[int](context.Background(), p)
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
		g := dispatcher.NewGroup[int](context.Background(), d, dispatcher.Share(3))
		err := g.Go(ok(1))
		_, werr := g.Wait()
		if s != dispatcher.Fair {
			require.ErrorIs(t, err, dispatcher.ErrWrongSchedule)
			require.ErrorIs(t, werr, dispatcher.ErrWrongSchedule)
		} else {
			require.NoError(t, err)
			require.NoError(t, werr)
		}
		g = dispatcher.NewGroup[int](context.Background(), d, dispatcher.Share(0))
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
		task := func(v int) func(context.Context) (int, error) {
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
		g := dispatcher.NewGroup[int](context.Background(), d, dispatcher.Limit(limit), dispatcher.Tenant("limited"))
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
			bad := dispatcher.NewGroup[int](context.Background(), d, dispatcher.Limit(n))
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
			sleeper := func(v int) func(context.Context) (int, error) {
				return func(context.Context) (int, error) { time.Sleep(task); return v, nil }
			}
			// Nothing measured yet: nothing refused.
			short, cancel := context.WithTimeout(context.Background(), time.Millisecond)
			defer cancel()
			_, err := dispatcher.Do(short, d, sleeper(0))
			if err != nil {
				require.ErrorIs(t, err, context.DeadlineExceeded) // it ran out of time, it was not refused
				require.NotErrorIs(t, err, dispatcher.ErrDeadlineUnmeetable)
			}
			for i := range 8 {
				v, err := dispatcher.Do(context.Background(), d, sleeper(i))
				require.NoError(t, err)
				require.Equal(t, i, v)
			}
			synctest.Wait() // the balancer has accounted the batch and published

			// Queue work ahead: a held worker and three behind it.
			release := make(chan struct{})
			held, err := dispatcher.Submit(context.Background(), d, blocker(release))
			require.NoError(t, err)
			var behind []*dispatcher.Future[int]
			for i := range 3 {
				f, err := dispatcher.Submit(context.Background(), d, sleeper(100+i))
				require.NoError(t, err)
				behind = append(behind, f)
			}
			synctest.Wait()

			var ran atomic.Bool
			tight, cancel2 := context.WithTimeout(context.Background(), task/2)
			defer cancel2()
			_, err = dispatcher.Do(tight, d, func(context.Context) (int, error) { ran.Store(true); return 1, nil })
			require.ErrorIs(t, err, dispatcher.ErrDeadlineUnmeetable)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			_, err = dispatcher.Submit(tight, d, func(context.Context) (int, error) { ran.Store(true); return 1, nil })
			require.ErrorIs(t, err, dispatcher.ErrDeadlineUnmeetable)
			err = d.Go(tight, func(context.Context) error { ran.Store(true); return nil })
			require.ErrorIs(t, err, dispatcher.ErrDeadlineUnmeetable)

			// No deadline, and a deadline far away: accepted.
			free, err := dispatcher.Submit(context.Background(), d, sleeper(7))
			require.NoError(t, err)
			far, cancel3 := context.WithTimeout(context.Background(), time.Hour)
			defer cancel3()
			farF, err := dispatcher.Submit(far, d, sleeper(8))
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
				held, err := dispatcher.Submit(context.Background(), d, func(context.Context) (int, error) {
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
						f, err := dispatcher.Submit(ctx, d, task)
						if err == nil {
							_, err = f.Wait(context.Background())
						}
						errs[i] = err
					})
				}
				deadlined, cancelD := context.WithTimeout(context.Background(), time.Second)
				defer cancelD()
				wg.Go(func() {
					f, err := dispatcher.Submit(deadlined, d, task)
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
			v, err := dispatcher.Do(context.Background(), d, ok(i))
			require.NoError(t, err)
			require.Equal(t, i, v)
		}
		opts := []dispatcher.GroupOption{dispatcher.Tenant("alpha")}
		if s == dispatcher.Fair {
			opts = append(opts, dispatcher.Share(3))
		}
		for range 2 { // two groups of one name add up
			g := dispatcher.NewGroup[int](context.Background(), d, opts...)
			for i := range 2 {
				require.NoError(t, g.Go(ok(i)))
			}
			_, err := g.Wait()
			require.NoError(t, err)
		}
		g := dispatcher.NewGroup[int](context.Background(), d)
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
		g := dispatcher.NewGroup[int](context.Background(), d, dispatcher.Tenant(name))
		err := g.Go(ok(1))
		require.True(t, errors.Is(err, dispatcher.ErrBadOption), "Tenant(%q): %v", name, err)
		_, err = g.Wait()
		require.ErrorIs(t, err, dispatcher.ErrBadOption)
	}
}
