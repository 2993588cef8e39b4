package balancerview_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/balancerview"
	"github.com/gobalancer/balancer/dispatcher"
)

// serve starts h on 127.0.0.1 under /debug/balancer/ and returns the
// page's URL.
func serve(t testing.TB, h http.Handler) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/debug/balancer/", h)
	srv := httptest.NewUnstartedServer(mux)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL + "/debug/balancer/"
}

func newDispatcher(t testing.TB, workers int) *dispatcher.Dispatcher {
	t.Helper()
	d, err := dispatcher.New(dispatcher.WithWorkers(workers))
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		assert.NoError(t, d.Close(ctx))
	})
	return d
}

// run does n tasks of d, 4 at a time, each a short sleep so that the
// workers share them.
func run(t testing.TB, d *dispatcher.Dispatcher, n int) {
	t.Helper()
	g := dispatcher.NewGroup[int](context.Background(), d)
	for i := range n {
		g.Go(func(context.Context) (int, error) { time.Sleep(50 * time.Microsecond); return i, nil })
	}
	_, err := g.Wait()
	require.NoError(t, err)
}

// client bounds every request of the tests: a handler that hangs fails
// its test instead of the run.
var client = &http.Client{Timeout: 10 * time.Second}

func get(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := client.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func sample(t testing.TB, url string) balancerview.Sample {
	t.Helper()
	code, body := get(t, url)
	require.Equal(t, http.StatusOK, code, body)
	var s balancerview.Sample
	require.NoError(t, json.Unmarshal([]byte(body), &s))
	return s
}

func TestSampleMatchesStats(t *testing.T) {
	v := balancerview.New(balancerview.WithInterval(50 * time.Millisecond))
	defer v.Close()
	d := newDispatcher(t, 3)
	require.NoError(t, d.SetWeight(2, 2))
	require.NoError(t, v.Register("main", d))
	base := serve(t, v.Handler())

	code, body := get(t, base+"api")
	require.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `{"Names":["main"]}`, body)

	run(t, d, 300)
	// The dispatcher is quiet (every completion counted): within a
	// sample, the JSON is Stats itself.
	require.Eventually(t, func() bool { return d.Stats().Completed == 300 }, 5*time.Second, time.Millisecond)
	want := d.Stats()
	s := sample(t, base+"api/main")
	require.GreaterOrEqual(t, s.Seq, int64(1))
	got := s.Stats
	assert.Equal(t, want.Completed, got.Completed)
	assert.Equal(t, want.Dispatched, got.Dispatched)
	assert.Equal(t, int64(300), got.Completed)
	require.Len(t, got.Workers, 3)
	require.Len(t, s.Workers, 3)
	var picks int64
	for i, w := range want.Workers {
		assert.Equal(t, w, got.Workers[i])
		assert.Equal(t, w.Completed, s.Workers[i].Completed)
		assert.Equal(t, w.Completed+int64(w.Pending), s.Workers[i].Picks)
		picks += s.Workers[i].Picks
	}
	assert.InDelta(t, 0.25, s.Workers[0].Share, 1e-9)
	assert.InDelta(t, 0.5, s.Workers[2].Share, 1e-9)
	assert.InDelta(t, float64(s.Workers[2].Picks)-0.5*float64(picks), s.Workers[2].Lag, 1e-9)
	assert.Equal(t, want.Latency.Samples, got.Latency.Samples)
	require.NotEmpty(t, got.Tenants)
	assert.Equal(t, dispatcher.DefaultTenant, got.Tenants[0].Name)
	require.NotEmpty(t, s.History)
	assert.Equal(t, s.Seq, s.History[len(s.History)-1].Seq)
	assert.False(t, s.Control)

	// Live: more samples come while it is read, with the rate and the
	// history after a given sample only.
	run(t, d, 200)
	require.Eventually(t, func() bool {
		s2 := sample(t, base+"api/main")
		return s2.Seq > s.Seq+1 && s2.Stats.Completed == 500 && s2.RateWindow > 0
	}, 5*time.Second, 20*time.Millisecond)
	s3 := sample(t, base+"api/main?after="+itoa(s.Seq))
	require.NotEmpty(t, s3.History)
	assert.Equal(t, s.Seq+1, s3.History[0].Seq)
	assert.Equal(t, int64(500), s3.History[len(s3.History)-1].Completed)
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestPageAndErrors(t *testing.T) {
	v := balancerview.New()
	defer v.Close()
	require.NoError(t, v.Register("a b/c", newDispatcher(t, 2)))
	require.Error(t, v.Register("a b/c", newDispatcher(t, 1)), "a name twice")
	base := serve(t, v.Handler())

	for path, want := range map[string]string{"": "<title>balancer view</title>", "view.js": "api/", "view.css": "tabular-nums"} {
		resp, err := client.Get(base + path)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		assert.Contains(t, string(b), want, path)
		assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "default-src 'self'", path)
	}
	s := sample(t, base+"api/a%20b%2Fc")
	assert.Equal(t, "a b/c", s.Name)

	code, _ := get(t, base+"api/nope")
	assert.Equal(t, http.StatusNotFound, code)
	code, _ = get(t, base+"nope")
	assert.Equal(t, http.StatusNotFound, code)
	code, _ = get(t, base+"api/main?after=x")
	assert.Equal(t, http.StatusBadRequest, code)
	resp, err := client.Post(base+"api/a%20b%2Fc", "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "the JSON is read-only")
}

func post(t testing.TB, url, ctype, body string) (int, string) {
	t.Helper()
	resp, err := client.Post(url, ctype, strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestControlRefusedUnlessAllowed(t *testing.T) {
	v := balancerview.New()
	defer v.Close()
	d := newDispatcher(t, 2)
	require.NoError(t, v.Register("main", d))
	ro := serve(t, v.Handler())

	code, _ := post(t, ro+"control/main", "application/json", `{"Op":"weight","Worker":0,"Weight":5}`)
	assert.Equal(t, http.StatusForbidden, code)
	code, _ = get(t, ro+"control/main")
	assert.Equal(t, http.StatusForbidden, code)
	assert.Equal(t, 1, d.Stats().Workers[0].Weight, "nothing changed")

	rw := serve(t, v.Handler(balancerview.AllowControl()))
	code, _ = get(t, rw+"control/main")
	assert.Equal(t, http.StatusMethodNotAllowed, code, "POST only")
	code, _ = post(t, rw+"control/main", "application/x-www-form-urlencoded", `Op=weight`)
	assert.Equal(t, http.StatusUnsupportedMediaType, code, "no form from another site")
	code, _ = post(t, rw+"control/nope", "application/json", `{"Op":"resize","Workers":3}`)
	assert.Equal(t, http.StatusNotFound, code)
	code, body := post(t, rw+"control/main", "application/json", `{"Op":"weight","Worker":9,"Weight":5}`)
	assert.Equal(t, http.StatusBadRequest, code, body)
	code, _ = post(t, rw+"control/main", "application/json", `{"Op":"explode"}`)
	assert.Equal(t, http.StatusBadRequest, code)

	code, body = post(t, rw+"control/main", "application/json", `{"Op":"weight","Worker":0,"Weight":5}`)
	require.Equal(t, http.StatusNoContent, code, body)
	assert.Equal(t, 5, d.Stats().Workers[0].Weight)
	code, body = post(t, rw+"control/main", "application/json", `{"Op":"resize","Workers":3}`)
	require.Equal(t, http.StatusNoContent, code, body)
	assert.Len(t, d.Stats().Workers, 3)
	assert.True(t, sample(t, rw+"api/main").Control)
	assert.False(t, sample(t, ro+"api/main").Control)
}

// The view samples only while it is read: no goroutine before the first
// read, one while reads come, none once they stop for the idle time, and
// a new one at the next read.
func TestSamplesOnlyWhileRead(t *testing.T) {
	v := balancerview.New(balancerview.WithInterval(50*time.Millisecond), balancerview.WithIdle(200*time.Millisecond))
	defer v.Close()
	d := newDispatcher(t, 2)
	require.NoError(t, v.Register("main", d))
	base := serve(t, v.Handler())

	running, starts := v.Sampling()
	assert.False(t, running)
	assert.Zero(t, starts)
	code, _ := get(t, base)
	require.Equal(t, http.StatusOK, code)
	running, _ = v.Sampling()
	assert.False(t, running, "the page alone samples nothing until its script reads the JSON")

	first := sample(t, base+"api/main")
	running, starts = v.Sampling()
	assert.True(t, running)
	assert.Equal(t, 1, starts)
	time.Sleep(150 * time.Millisecond)
	s := sample(t, base+"api/main")
	assert.Greater(t, s.Seq, first.Seq, "sampled while read")

	require.Eventually(t, func() bool { r, _ := v.Sampling(); return !r }, 3*time.Second, 10*time.Millisecond,
		"the sampler stops once no one reads")
	idle := sample(t, base+"api/main").Seq // restarts it, with a fresh sample
	assert.Greater(t, idle, s.Seq)
	require.Eventually(t, func() bool { r, _ := v.Sampling(); return !r }, 3*time.Second, 10*time.Millisecond,
		"stopped again")
	_, starts = v.Sampling()
	assert.Equal(t, 2, starts)
	last := v.Seq("main")
	time.Sleep(200 * time.Millisecond) // four intervals
	assert.Equal(t, last, v.Seq("main"), "no sample while no one reads")
	running, _ = v.Sampling()
	assert.False(t, running)
}

func TestCloseStopsTheSampler(t *testing.T) {
	v := balancerview.New(balancerview.WithInterval(50 * time.Millisecond))
	require.NoError(t, v.Register("main", newDispatcher(t, 1)))
	base := serve(t, v.Handler())
	sample(t, base+"api/main")
	running, _ := v.Sampling()
	require.True(t, running)
	v.Close() // goleak in TestMain checks the goroutine is gone
	running, _ = v.Sampling()
	assert.False(t, running)
	code, _ := get(t, base+"api/main")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.ErrorIs(t, v.Register("other", newDispatcher(t, 1)), balancerview.ErrClosed)
	v.Close() // twice is fine
}

// Register and Handler at package level serve Default.
func TestDefault(t *testing.T) {
	d := newDispatcher(t, 1)
	require.NoError(t, balancerview.Register("default-test", d))
	defer balancerview.Unregister("default-test")
	base := serve(t, balancerview.Handler())
	s := sample(t, base+"api/default-test")
	assert.Equal(t, "default-test", s.Name)
	balancerview.Unregister("default-test")
	code, _ := get(t, base+"api/default-test")
	assert.Equal(t, http.StatusNotFound, code)
	// Nothing left to sample: the goroutine exits at its next tick.
	require.Eventually(t, func() bool { r, _ := balancerview.Default.Sampling(); return !r }, 5*time.Second, 10*time.Millisecond)
}
