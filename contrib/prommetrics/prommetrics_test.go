package prommetrics_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/contrib/prommetrics"
	"github.com/gobalancer/balancer/dispatcher"
)

// scrape serves reg with promhttp on a loopback server and parses what a
// Prometheus server would read from /metrics.
func scrape(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer srv.Close()
	defer srv.Client().CloseIdleConnections()
	require.True(t, strings.HasPrefix(srv.URL, "http://127.0.0.1:"), srv.URL)
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/plain") // the text format, not protobuf
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return fams
}

// value is the one series of family name whose labels include want.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	t.Helper()
	f, ok := fams[name]
	require.True(t, ok, "no family %s", name)
	var found []*dto.Metric
	for _, m := range f.GetMetric() {
		has := map[string]string{}
		for _, l := range m.GetLabel() {
			has[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && has[k] == v
		}
		if match {
			found = append(found, m)
		}
	}
	require.Len(t, found, 1, "%s%v", name, want)
	return found[0]
}

func num(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	return math.NaN()
}

// TestScrape: after known work (tasks that return, panic, call Goexit, or
// are canceled before they run), /metrics says so, per worker and in all.
func TestScrape(t *testing.T) {
	for _, eng := range []dispatcher.Engine{dispatcher.Channels, dispatcher.Rings} {
		t.Run("engine="+eng.String(), func(t *testing.T) {
			const n = 64 * 20
			d, err := dispatcher.New(dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
			require.NoError(t, err)
			defer func() { require.NoError(t, d.Close(context.Background())) }()
			reg := prometheus.NewRegistry()
			reg.MustRegister(prommetrics.New(d, prommetrics.WithConstLabels(prometheus.Labels{"pool": "test"})))

			fams := scrape(t, reg)
			assert.Zero(t, num(value(t, fams, "balancer_completed_total", nil)))
			sum := value(t, fams, "balancer_task_duration_seconds", map[string]string{"pool": "test"}).GetSummary()
			assert.Zero(t, sum.GetSampleCount())
			assert.True(t, math.IsNaN(sum.GetQuantile()[0].GetValue()), "no sample: NaN quantiles")

			ctx := context.Background()
			for range n {
				_, err := dispatcher.Do(ctx, d, func(context.Context) (string, error) { time.Sleep(50 * time.Microsecond); return "ok", nil })
				require.NoError(t, err)
			}
			_, err = dispatcher.Do(ctx, d, func(context.Context) (string, error) { panic("boom") })
			require.True(t, errors.As(err, new(*dispatcher.PanicError)), "%v", err)
			_, err = dispatcher.Do(ctx, d, func(context.Context) (string, error) { runtime.Goexit(); return "", nil })
			require.ErrorIs(t, err, dispatcher.ErrTaskExited)
			canceled, cancel := context.WithCancel(ctx)
			cancel()
			_, err = dispatcher.Do(canceled, d, func(context.Context) (string, error) { return "", nil })
			require.ErrorIs(t, err, context.Canceled)

			// A Goexit's replacement is counted before its answer.
			s := d.Stats()
			require.Equal(t, int64(1), s.Replaced)
			fams = scrape(t, reg)
			done := float64(s.Completed)
			assert.GreaterOrEqual(t, done, float64(n+2), "the returned, the panicked and the exited")
			for name, want := range map[string]float64{
				"balancer_dispatched_total": float64(s.Dispatched),
				"balancer_completed_total":  done,
				"balancer_panics_total":     1,
				"balancer_goexits_total":    1,
				"balancer_replaced_total":   1,
				"balancer_pending":          0,
				"balancer_queued":           0,
				"balancer_blocked":          0,
				"balancer_held":             0,
			} {
				assert.Equal(t, want, num(value(t, fams, name, map[string]string{"pool": "test"})), name)
			}
			// Canceled before or after the balancer took it: counted by
			// the worker only in the second case.
			assert.LessOrEqual(t, num(value(t, fams, "balancer_canceled_total", nil)), 1.0)

			var perWorker float64
			for _, w := range []string{"0", "1"} {
				l := map[string]string{"worker": w, "pool": "test"}
				c := num(value(t, fams, "balancer_worker_completed_total", l))
				perWorker += c
				assert.Positive(t, c, "least-pending uses both workers")
				assert.Positive(t, num(value(t, fams, "balancer_worker_busy_seconds_total", l)))
				assert.Zero(t, num(value(t, fams, "balancer_worker_pending", l)))
				assert.Equal(t, 1.0, num(value(t, fams, "balancer_worker_weight", l)))
			}
			assert.Equal(t, done, perWorker)

			sum = value(t, fams, "balancer_task_duration_seconds", nil).GetSummary()
			require.Positive(t, sum.GetSampleCount(), "about 20 of the tasks were timed")
			assert.GreaterOrEqual(t, sum.GetSampleSum(), float64(sum.GetSampleCount())*50e-6)
			qs := map[float64]float64{}
			for _, q := range sum.GetQuantile() {
				qs[q.GetQuantile()] = q.GetValue()
			}
			require.Len(t, qs, 4)
			assert.GreaterOrEqual(t, qs[0.5], 50e-6*(1-dispatcher.LatencyRelativeError))
			assert.LessOrEqual(t, qs[0.5], qs[0.999])
			assert.LessOrEqual(t, qs[0.999], num(value(t, fams, "balancer_task_duration_max_seconds", nil)))
		})
	}
}

// TestNamespaceAndClosed: WithNamespace renames every series, and a closed
// dispatcher still reports its final Stats.
func TestNamespaceAndClosed(t *testing.T) {
	d, err := dispatcher.New(dispatcher.WithWorkers(1))
	require.NoError(t, err)
	_, err = dispatcher.Do(context.Background(), d, func(context.Context) (int, error) { return 1, nil })
	require.NoError(t, err)
	require.NoError(t, d.Close(context.Background()))
	reg := prometheus.NewRegistry()
	reg.MustRegister(prommetrics.New(d, prommetrics.WithNamespace("jobs")))
	fams := scrape(t, reg)
	assert.Equal(t, 1.0, num(value(t, fams, "jobs_completed_total", nil)))
	assert.Equal(t, 1.0, num(value(t, fams, "jobs_worker_completed_total", map[string]string{"worker": "0"})))
	for name := range fams {
		assert.True(t, strings.HasPrefix(name, "jobs_"), name)
	}
}

// TestTwoDispatchers: const labels let one registry hold a collector per
// dispatcher; the same names without them are refused.
func TestTwoDispatchers(t *testing.T) {
	reg := prometheus.NewRegistry()
	for _, name := range []string{"a", "b"} {
		d, err := dispatcher.New(dispatcher.WithWorkers(1))
		require.NoError(t, err)
		t.Cleanup(func() { _ = d.Close(context.Background()) })
		require.NoError(t, reg.Register(prommetrics.New(d, prommetrics.WithConstLabels(prometheus.Labels{"pool": name}))))
	}
	d, err := dispatcher.New(dispatcher.WithWorkers(1))
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close(context.Background()) })
	require.Error(t, reg.Register(prommetrics.New(d, prommetrics.WithConstLabels(prometheus.Labels{"pool": "a"}))))
	fams := scrape(t, reg)
	require.Len(t, fams["balancer_completed_total"].GetMetric(), 2)
}

// TestTenantsAndClasses: a named group's tasks count under its tenant,
// requests outside groups under "default", and every priority class has
// its line, whether used or not.
func TestTenantsAndClasses(t *testing.T) {
	for _, eng := range []dispatcher.Engine{dispatcher.Channels, dispatcher.Rings} {
		t.Run("engine="+eng.String(), func(t *testing.T) {
			const n, plain = 64 * 10, 5
			d, err := dispatcher.New(dispatcher.WithEngine(eng), dispatcher.WithWorkers(2), dispatcher.WithSchedule(dispatcher.ByPriority))
			require.NoError(t, err)
			defer func() { require.NoError(t, d.Close(context.Background())) }()
			reg := prometheus.NewRegistry()
			reg.MustRegister(prommetrics.New(d, prommetrics.WithConstLabels(prometheus.Labels{"pool": "test"})))

			ctx := context.Background()
			g := dispatcher.NewGroup[int](ctx, d, dispatcher.Tenant("reports"))
			for i := range n {
				v := g.Priority(3)
				if i%2 == 0 {
					v = g.Priority(0)
				}
				require.NoError(t, v.Go(func(context.Context) (int, error) { return i, nil }))
			}
			res, err := g.Wait()
			require.NoError(t, err)
			require.Len(t, res, n)
			for range plain {
				_, err := dispatcher.Do(ctx, d, func(context.Context) (int, error) { return 1, nil })
				require.NoError(t, err)
			}
			// The default tenant's completions are the total's rest, which
			// the balancer counts as workers report: wait for all of them.
			require.Eventually(t, func() bool {
				s := d.Stats()
				return s.Completed == n+plain && s.Pending == 0
			}, 5*time.Second, time.Millisecond)

			fams := scrape(t, reg)
			for tenant, ran := range map[string]float64{"reports": n, dispatcher.DefaultTenant: plain} {
				l := map[string]string{"tenant": tenant, "pool": "test"}
				assert.Equal(t, ran, num(value(t, fams, "balancer_tenant_completed_total", l)), tenant)
				assert.Equal(t, ran, num(value(t, fams, "balancer_tenant_dispatched_total", l)), tenant)
				assert.Zero(t, num(value(t, fams, "balancer_tenant_running", l)), tenant)
				assert.Zero(t, num(value(t, fams, "balancer_tenant_queued", l)), tenant)
				assert.Zero(t, num(value(t, fams, "balancer_tenant_refused_total", l)), tenant)
			}
			wait := value(t, fams, "balancer_tenant_wait_seconds", map[string]string{"tenant": "reports"}).GetSummary()
			assert.Positive(t, wait.GetSampleCount(), "one request in 64 has its wait timed")
			require.Len(t, wait.GetQuantile(), 4)
			assert.LessOrEqual(t, wait.GetQuantile()[0].GetValue(), wait.GetQuantile()[3].GetValue())

			for _, name := range []string{
				"balancer_class_queued", "balancer_class_running", "balancer_class_dispatched_total",
				"balancer_class_completed_total", "balancer_class_refused_total", "balancer_class_wait_seconds",
			} {
				require.Len(t, fams[name].GetMetric(), 8, name)
			}
			for class, ran := range map[string]float64{"0": n/2 + plain, "3": n / 2, "1": 0, "7": 0} {
				l := map[string]string{"class": class, "pool": "test"}
				assert.Equal(t, ran, num(value(t, fams, "balancer_class_completed_total", l)), class)
				assert.Equal(t, ran, num(value(t, fams, "balancer_class_dispatched_total", l)), class)
				assert.Zero(t, num(value(t, fams, "balancer_class_running", l)), class)
			}
			idle := value(t, fams, "balancer_class_wait_seconds", map[string]string{"class": "7"}).GetSummary()
			assert.Zero(t, idle.GetSampleCount())
			assert.True(t, math.IsNaN(idle.GetQuantile()[0].GetValue()), "no sample: NaN quantiles")
		})
	}
}
