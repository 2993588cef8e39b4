package dispatcher_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
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

// TestLimitWaitEndsAtClose: a Go waiting for a place under its group's
// Limit returns ErrClosed once Close begins, as a submit waiting for the
// intake does; it used to wait for a running task Close had given up on.
func TestLimitWaitEndsAtClose(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d, err := dispatcher.New(dispatcher.WithEngine(eng), dispatcher.WithWorkers(1))
		require.NoError(t, err)
		release, started := make(chan struct{}), make(chan struct{})
		g := dispatcher.NewGroup[int](context.Background(), d, dispatcher.Limit(1))
		require.NoError(t, g.Go(func(context.Context) (int, error) { close(started); <-release; return 0, nil }))
		<-started
		waiting := make(chan error, 1)
		go func() { waiting <- g.Go(ok(1)) }()
		cctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		require.ErrorIs(t, d.Close(cctx), context.DeadlineExceeded, "Close gives up on the running task")
		cancel()
		within(t, 10*time.Second, "the Go waiting under Limit", func() {
			require.ErrorIs(t, <-waiting, dispatcher.ErrClosed)
		})
		require.Error(t, g.Go(ok(2)), "the refusal cancelled the group: later Go calls are refused too")
		close(release)
		<-d.Done()
		_, err = g.Wait()
		require.Error(t, err)
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

// TestTenantStatsAfterAbandon: requests Close takes back from a worker's
// queue count for their own tenant, whose Running returns to 0; they used
// to be counted as the default tenant's.
func TestTenantStatsAfterAbandon(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d, err := dispatcher.New(dispatcher.WithEngine(eng), dispatcher.WithWorkers(1),
			dispatcher.WithWorkerBuffer(3), dispatcher.WithQueueBudget(0))
		require.NoError(t, err)
		release, started := make(chan struct{}), make(chan struct{})
		g := dispatcher.NewGroup[int](context.Background(), d, dispatcher.Tenant("batch"), dispatcher.CollectErrors())
		require.NoError(t, g.Go(func(context.Context) (int, error) { close(started); <-release; return 0, nil }))
		<-started
		for range 3 {
			require.NoError(t, g.Go(ok(1)))
		}
		require.Eventually(t, func() bool { return d.Stats().Pending == 4 }, 10*time.Second, time.Millisecond)
		cctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		require.ErrorIs(t, d.Close(cctx), context.DeadlineExceeded)
		cancel()
		close(release)
		<-d.Done()
		_, err = g.Wait()
		require.True(t, errors.Is(err, dispatcher.ErrClosed), "%v", err)
		for _, l := range d.Stats().Tenants {
			assert.Zero(t, l.Running, "tenant %s", l.Name)
			if l.Name == dispatcher.DefaultTenant {
				assert.Zero(t, l.Completed, "the default tenant submitted nothing")
			} else {
				assert.Equal(t, int64(4), l.Completed, "tenant %s", l.Name)
			}
		}
	})
}
