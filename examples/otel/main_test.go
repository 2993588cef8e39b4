package main

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/goleak"

	"github.com/gobalancer/balancer/dispatcher"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// points indexes a collection by "name" or "name{key=value}".
func points(t *testing.T, rm metricdata.ResourceMetrics) map[string]float64 {
	t.Helper()
	got := map[string]float64{}
	put := func(name string, attrs attribute.Set, v float64) {
		k := name
		if attrs.Len() > 0 {
			kv := attrs.ToSlice()
			require.Len(t, kv, 1)
			k += "{" + string(kv[0].Key) + "=" + kv[0].Value.String() + "}"
		}
		_, dup := got[k]
		require.False(t, dup, k)
		got[k] = v
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				require.True(t, data.IsMonotonic, m.Name)
				for _, p := range data.DataPoints {
					put(m.Name, p.Attributes, float64(p.Value))
				}
			case metricdata.Sum[float64]:
				require.True(t, data.IsMonotonic, m.Name)
				for _, p := range data.DataPoints {
					put(m.Name, p.Attributes, p.Value)
				}
			case metricdata.Gauge[int64]:
				for _, p := range data.DataPoints {
					put(m.Name, p.Attributes, float64(p.Value))
				}
			case metricdata.Gauge[float64]:
				for _, p := range data.DataPoints {
					put(m.Name, p.Attributes, p.Value)
				}
			default:
				t.Fatalf("%s: unexpected %T", m.Name, m.Data)
			}
		}
	}
	return got
}

// TestCollect: one collection through a ManualReader after known work
// reports it, in all and per worker.
func TestCollect(t *testing.T) {
	const n = 64 * 20
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { require.NoError(t, mp.Shutdown(ctx)) }()
	d, err := dispatcher.New(dispatcher.WithWorkers(2))
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close(ctx)) }()
	reg, err := Register(mp.Meter("test"), d)
	require.NoError(t, err)
	defer func() { require.NoError(t, reg.Unregister()) }()

	collect := func() map[string]float64 {
		var rm metricdata.ResourceMetrics
		require.NoError(t, reader.Collect(ctx, &rm))
		return points(t, rm)
	}
	before := collect()
	assert.Zero(t, before["balancer.completed"])
	assert.NotContains(t, before, "balancer.task.duration{quantile=0.5}", "no sample, no value")

	for i := range n {
		_, err := dispatcher.Do(ctx, d, func(context.Context) (int, error) { time.Sleep(50 * time.Microsecond); return i, nil })
		require.NoError(t, err)
	}
	_, err = dispatcher.Do(ctx, d, func(context.Context) (int, error) { panic("boom") })
	require.Error(t, err)
	_, err = dispatcher.Do(ctx, d, func(context.Context) (int, error) { runtime.Goexit(); return 0, nil })
	require.ErrorIs(t, err, dispatcher.ErrTaskExited)

	got := collect()
	for name, want := range map[string]float64{
		"balancer.dispatched": n + 2,
		"balancer.completed":  n + 2,
		"balancer.panics":     1,
		"balancer.goexits":    1,
		"balancer.replaced":   1,
		"balancer.canceled":   0,
		"balancer.pending":    0,
		"balancer.queued":     0,
		"balancer.blocked":    0,
	} {
		assert.Equal(t, want, got[name], name)
	}
	assert.Equal(t, float64(n+2), got["balancer.worker.completed{worker=0}"]+got["balancer.worker.completed{worker=1}"])
	for _, w := range []string{"0", "1"} {
		assert.Positive(t, got["balancer.worker.completed{worker="+w+"}"], "least-pending uses both workers")
		assert.Positive(t, got["balancer.worker.busy{worker="+w+"}"])
		assert.Zero(t, got["balancer.worker.pending{worker="+w+"}"])
	}
	require.Positive(t, got["balancer.task.duration.samples"], "about 20 of the tasks were timed")
	p50 := got["balancer.task.duration{quantile=0.5}"]
	assert.GreaterOrEqual(t, p50, 50e-6*(1-dispatcher.LatencyRelativeError))
	assert.LessOrEqual(t, p50, got["balancer.task.duration{quantile=0.999}"])
	assert.LessOrEqual(t, got["balancer.task.duration{quantile=0.999}"], got["balancer.task.duration{quantile=max}"])
}

// TestRun: the program prints every instrument.
func TestRun(t *testing.T) {
	var out strings.Builder
	require.NoError(t, run(context.Background(), &out, 256, 2))
	s := out.String()
	for _, want := range []string{"balancer.completed{} 256\n", "balancer.worker.busy{worker=1} ", "balancer.task.duration.samples{} "} {
		assert.Contains(t, s, want)
	}
}
