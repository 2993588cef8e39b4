package dispatcher_test

import (
	"context"
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
