package dispatcher_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

// TestAdmissionFreshOnAnIdleDispatcher: admission counts what is ahead
// from completions the workers count themselves, so once the work is done
// a request with a deadline its own run fits in is accepted. On rings a
// balancer parked idle used to leave its last count stale and refuse every
// tight deadline until something woke it.
func TestAdmissionFreshOnAnIdleDispatcher(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		synctest.Test(t, func(t *testing.T) {
			d := bubbleDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2), dispatcher.WithDeadlineAdmission())
			ctx := context.Background()
			task := func(context.Context) (int, error) { time.Sleep(20 * time.Millisecond); return 0, nil }
			for range 4 { // the balancer measures the task time
				_, err := dispatcher.Do(ctx, d, task)
				require.NoError(t, err)
			}
			f1, err := dispatcher.Submit(ctx, d, task)
			require.NoError(t, err)
			f2, err := dispatcher.Submit(ctx, d, task)
			require.NoError(t, err)
			_, err = f1.Wait(ctx)
			require.NoError(t, err)
			_, err = f2.Wait(ctx)
			require.NoError(t, err)
			time.Sleep(50 * time.Millisecond) // idle
			synctest.Wait()
			for k := range 5 {
				dctx, cancel := context.WithTimeout(ctx, 35*time.Millisecond)
				_, err := dispatcher.Do(dctx, d, task)
				cancel()
				require.NoError(t, err, "request %d: 20 ms of work, 35 ms left, nothing ahead", k)
			}
			closeBubble(t, d)
		})
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
