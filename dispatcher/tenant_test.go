package dispatcher_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

// TestTenantViewRefusals: a tenant view with a bad name or share, or a
// share under a schedule without shares, is a named error, and the
// dispatcher keeps serving.
func TestTenantViewRefusals(t *testing.T) {
	var zero dispatcher.Dispatcher
	_, err := zero.Tenant("a", 1)
	require.ErrorIs(t, err, dispatcher.ErrNotStarted)

	fifo := newDispatcher(t, dispatcher.WithWorkers(1))
	fair := newDispatcher(t, dispatcher.WithWorkers(1), dispatcher.WithSchedule(dispatcher.Fair))
	for _, tc := range []struct {
		name  string
		d     *dispatcher.Dispatcher
		share int
		want  []error
	}{
		{"", fair, 1, []error{dispatcher.ErrBadOption}},
		{dispatcher.DefaultTenant, fair, 1, []error{dispatcher.ErrBadOption}},
		{"a", fair, 0, []error{dispatcher.ErrBadOption}},
		{"a", fair, dispatcher.MaxShare + 1, []error{dispatcher.ErrBadOption}},
		{"a", fifo, 2, []error{dispatcher.ErrBadOption, dispatcher.ErrWrongSchedule}},
	} {
		_, err := tc.d.Tenant(tc.name, tc.share)
		for _, want := range tc.want {
			assert.ErrorIs(t, err, want, "Tenant(%q, %d)", tc.name, tc.share)
		}
	}
	v, err := fifo.Tenant("a", 1)
	require.NoError(t, err, "a share of 1 names a tenant under any schedule")
	got, err := dispatcher.Do(context.Background(), v, ok(5))
	require.NoError(t, err)
	require.Equal(t, 5, got)
}

// TestTenantViewCounts: requests through a tenant view, of any result
// type and with a key, count under its name in Stats.Tenants; those
// outside count under the default tenant.
func TestTenantViewCounts(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2), dispatcher.WithSchedule(dispatcher.Fair))
		v, err := d.Tenant("reports", 3)
		require.NoError(t, err)
		ctx := context.Background()
		s, err := dispatcher.Do(ctx, v, func(context.Context) (string, error) { return "done", nil })
		require.NoError(t, err)
		require.Equal(t, "done", s)
		f, err := dispatcher.Submit(ctx, v.Key(7), ok(2))
		require.NoError(t, err)
		_, err = waitFuture(t, f, 10*time.Second)
		require.NoError(t, err)
		require.NoError(t, v.Go(ctx, func(context.Context) error { return nil }))
		_, err = dispatcher.Do(ctx, d, ok(1))
		require.NoError(t, err)
		require.NoError(t, d.Close(ctx))
		flows := map[string]int64{}
		for _, f := range d.Stats().Tenants {
			flows[f.Name] = f.Completed
		}
		assert.Equal(t, int64(3), flows["reports"])
		assert.Equal(t, int64(1), flows[dispatcher.DefaultTenant])
	})
}

// TestGroupTenantNameRefused: Tenant("") and Tenant(DefaultTenant) are
// bad options (ErrBadOption): the group runs nothing, its Go returns the
// error, TryGo reports false, Wait returns it, and no tenant line is
// added or fed; the same names given to a stream end it with the error.
func TestGroupTenantNameRefused(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(1))
		for _, name := range []string{"", dispatcher.DefaultTenant} {
			g := dispatcher.NewGroup[int](context.Background(), d, dispatcher.Tenant(name))
			err := g.Go(ok(1))
			require.ErrorIs(t, err, dispatcher.ErrBadOption, "Tenant(%q): Go", name)
			require.False(t, g.TryGo(ok(1)), "Tenant(%q)", name)
			_, err = waitGroup(t, g, 10*time.Second)
			require.ErrorIs(t, err, dispatcher.ErrBadOption, "Tenant(%q): Wait", name)
			require.ErrorIs(t, context.Cause(g.Context()), dispatcher.ErrBadOption, "Tenant(%q): the context's cause", name)

			var errs []error
			within(t, 10*time.Second, "Map", func() {
				for _, err := range dispatcher.Map(context.Background(), d, count(3, nil), square, dispatcher.Tenant(name)) {
					errs = append(errs, err)
				}
			})
			require.Len(t, errs, 1, "Tenant(%q)", name)
			require.ErrorIs(t, errs[0], dispatcher.ErrBadOption, "Tenant(%q)", name)
		}
		s := d.Stats()
		require.Zero(t, s.Dispatched, "a refused group or stream submitted")
		require.Len(t, s.Tenants, 1, "only the default tenant's line")
		require.Equal(t, dispatcher.DefaultTenant, s.Tenants[0].Name)
		require.Zero(t, s.Tenants[0].Completed)
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
