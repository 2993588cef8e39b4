package dispatcher_test

import (
	"context"
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

// TestScheduleKeepsTheRendezvous: under a schedule, an unbuffered intake
// still accepts a request only when a worker has room for it, and a
// buffered one holds what it did (plus, on channels, the schedule's own
// as many again), on both engines.
func TestScheduleKeepsTheRendezvous(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		for _, intake := range []int{0, 4} {
			synctest.Test(t, func(t *testing.T) {
				d := bubbleDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(1),
					dispatcher.WithWorkerBuffer(0), dispatcher.WithIntakeBuffer(intake), dispatcher.WithSchedule(dispatcher.Fair))
				release := make(chan struct{})
				ctx := context.Background()
				f0, err := dispatcher.Submit(ctx, d, func(context.Context) (int, error) { <-release; return 0, nil })
				require.NoError(t, err)
				synctest.Wait()
				var fs []*dispatcher.Future[int]
				for range 50 {
					f, err := dispatcher.TrySubmit(ctx, d, ok(1))
					synctest.Wait() // the balancer takes what it will
					if err == nil {
						fs = append(fs, f)
					}
				}
				most := intake
				if eng == dispatcher.Channels {
					most = 2 * intake // the channel's and the schedule's
				}
				assert.LessOrEqual(t, len(fs), most, "intake %d: accepted beside the running task", intake)
				if intake == 0 {
					assert.Empty(t, fs, "a rendezvous with the only worker busy")
				}
				close(release)
				_, err = f0.Wait(ctx)
				require.NoError(t, err)
				for _, f := range fs {
					_, err := f.Wait(ctx)
					require.NoError(t, err)
				}
				closeBubble(t, d)
			})
		}
	})
}
