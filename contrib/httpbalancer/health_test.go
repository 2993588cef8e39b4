package httpbalancer_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gobalancer/balancer/contrib/httpbalancer"
	"github.com/gobalancer/balancer/strategies"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// fastChecks checks every 20 ms; two results in a row change the state.
var fastChecks = httpbalancer.HealthCheck{Path: "/healthz", Interval: 20 * time.Millisecond,
	Timeout: 20 * time.Millisecond, HealthyThreshold: 2, UnhealthyThreshold: 2}

func TestOptionsRejectBadValues(t *testing.T) {
	s, err := strategies.New(strategies.Default, strategies.Equal(1))
	require.NoError(t, err)
	u, _ := url.Parse("http://127.0.0.1:1")
	hc := func(f func(*httpbalancer.HealthCheck)) httpbalancer.Option {
		h := fastChecks
		f(&h)
		return httpbalancer.WithHealthCheck(h)
	}
	for name, tc := range map[string]struct {
		opts []httpbalancer.Option
		err  error
	}{
		"relative path":      {[]httpbalancer.Option{hc(func(h *httpbalancer.HealthCheck) { h.Path = "healthz" })}, httpbalancer.ErrHealthCheck},
		"negative interval":  {[]httpbalancer.Option{hc(func(h *httpbalancer.HealthCheck) { h.Interval = -1 })}, httpbalancer.ErrHealthCheck},
		"negative timeout":   {[]httpbalancer.Option{hc(func(h *httpbalancer.HealthCheck) { h.Timeout = -1 })}, httpbalancer.ErrHealthCheck},
		"timeout > interval": {[]httpbalancer.Option{hc(func(h *httpbalancer.HealthCheck) { h.Timeout = time.Second })}, httpbalancer.ErrHealthCheck},
		"negative healthy":   {[]httpbalancer.Option{hc(func(h *httpbalancer.HealthCheck) { h.HealthyThreshold = -1 })}, httpbalancer.ErrHealthCheck},
		"negative unhealthy": {[]httpbalancer.Option{hc(func(h *httpbalancer.HealthCheck) { h.UnhealthyThreshold = -2 })}, httpbalancer.ErrHealthCheck},
		"two health checks":  {[]httpbalancer.Option{httpbalancer.WithHealthCheck(fastChecks), httpbalancer.WithHealthCheck(fastChecks)}, httpbalancer.ErrConfig},
		"cap below time":     {[]httpbalancer.Option{httpbalancer.WithEjectFor(time.Second), httpbalancer.WithEjectMax(time.Millisecond)}, httpbalancer.ErrConfig},
		"cap, ejection off":  {[]httpbalancer.Option{httpbalancer.WithEjectFor(0), httpbalancer.WithEjectMax(time.Second)}, httpbalancer.ErrConfig},
		"5xx, ejection off":  {[]httpbalancer.Option{httpbalancer.WithEjectFor(0), httpbalancer.WithEject5xx(3)}, httpbalancer.ErrConfig},
		"negative 5xx":       {[]httpbalancer.Option{httpbalancer.WithEject5xx(-1)}, httpbalancer.ErrConfig},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := httpbalancer.New([]*url.URL{u}, s, tc.opts...)
			require.ErrorIs(t, err, tc.err)
			require.ErrorIs(t, err, httpbalancer.ErrConfig)
		})
	}
	p, err := httpbalancer.New([]*url.URL{u}, s, httpbalancer.WithHealthCheck(httpbalancer.HealthCheck{}))
	require.NoError(t, err, "zero fields take their defaults")
	require.NoError(t, p.Close())
}

// TestDiesAndComesBack: one of three backends dies under load. It is
// ejected (passively at its first refused connection, then by its failing
// health checks) and gets no traffic; the GETs that hit it are retried, so
// every request succeeds. Restarted on the same address, it passes two
// checks and takes traffic again.
func TestDiesAndComesBack(t *testing.T) {
	ctx := guard(t, 15*time.Second)
	bs := []*live{startLive(t, "a"), startLive(t, "b"), startLive(t, "c")}
	p, proxy := newProxy(t, []*url.URL{bs[0].url(), bs[1].url(), bs[2].url()}, "least-pending", nil,
		httpbalancer.WithHealthCheck(fastChecks), httpbalancer.WithEjectFor(100*time.Millisecond))
	bg := startLoad(ctx, client(t), proxy.URL, 8)
	waitFor(t, ctx, "traffic on c", func() bool { return bs[2].calls.Load() > 50 })

	bs[2].stop()
	waitFor(t, ctx, "c unhealthy", func() bool {
		st, _ := statsOf(p, bs[2].url())
		return strings.Contains(st.Reason, "unhealthy: ")
	})
	st, _ := statsOf(p, bs[2].url())
	require.False(t, st.Serving)
	before, sent := st.Requests, bg.sent.Load()
	waitFor(t, ctx, "more load", func() bool { return bg.sent.Load() > sent+200 })
	st, _ = statsOf(p, bs[2].url())
	require.Equal(t, before, st.Requests, "an ejected backend gets no traffic")
	t.Logf("dead: %+v", st.Reason)

	bs[2].restart()
	calls := bs[2].calls.Load()
	waitFor(t, ctx, "c re-admitted", func() bool { return bs[2].calls.Load() > calls+50 })
	res := bg.finish()
	st, _ = statsOf(p, bs[2].url())
	require.True(t, st.Serving, st.Reason)
	require.Equal(t, map[int]int{http.StatusOK: res.status[http.StatusOK]}, res.status, "bodies %v", res.bodies)
	require.Empty(t, res.netErrs)
	t.Logf("statuses %v; c: %d requests, %d errors, %d ejections, %d/%d checks failed",
		res.status, st.Requests, st.Errors, st.Ejections, st.FailedChecks, st.Checks)
}

// TestSlowBackend: a backend slower than the health-check timeout leaves
// traffic, but the requests it already had finish with their answer (the
// proxy cuts no request); fast again, it comes back.
func TestSlowBackend(t *testing.T) {
	ctx := guard(t, 15*time.Second)
	bs := []*live{startLive(t, "a"), startLive(t, "b")}
	hc := fastChecks
	hc.HealthyThreshold, hc.UnhealthyThreshold = 1, 1
	// a's checks pass at once whatever the machine's load (a check of a
	// real server can miss 20 ms on a loaded machine, and a's leaving
	// would fail requests); b's go to the server, slow or not.
	tr := healthyFor{RoundTripper: http.DefaultTransport.(*http.Transport).Clone(), host: bs[0].addr}
	t.Cleanup(tr.RoundTripper.(*http.Transport).CloseIdleConnections)
	p, proxy := newProxy(t, []*url.URL{bs[0].url(), bs[1].url()}, "round-robin", nil,
		httpbalancer.WithHealthCheck(hc), httpbalancer.WithTransport(tr))
	bg := startLoad(ctx, client(t), proxy.URL, 4)
	waitFor(t, ctx, "traffic on b", func() bool { return bs[1].calls.Load() > 20 })

	bs[1].delay.Store(int64(300 * time.Millisecond))
	waitFor(t, ctx, "b out", func() bool {
		st, _ := statsOf(p, bs[1].url())
		return strings.Contains(st.Reason, "no answer within 20ms")
	})
	st, _ := statsOf(p, bs[1].url())
	require.Positive(t, st.InFlight, "requests were in flight on the slow backend")
	waitFor(t, ctx, "b's requests done", func() bool { st, _ := statsOf(p, bs[1].url()); return st.InFlight == 0 })
	st, _ = statsOf(p, bs[1].url())
	slow, err := st.Latency.Quantile(1)
	require.NoError(t, err)
	require.Greater(t, slow, 250*time.Millisecond, "the slow requests ran to their end")

	bs[1].delay.Store(0)
	calls := bs[1].calls.Load()
	waitFor(t, ctx, "b back", func() bool { return bs[1].calls.Load() > calls+20 })
	res := bg.finish()
	require.Equal(t, map[int]int{http.StatusOK: res.status[http.StatusOK]}, res.status, "bodies %v, errors %v", res.bodies, res.netErrs)
}

// TestFlapping: a health endpoint that alternates pass and fail never
// reaches two results in a row, so the thresholds keep the backend in; a
// backend whose process keeps dying and coming back is ejected again and
// again with a growing time, and the GETs that meet it dead are retried.
func TestFlapping(t *testing.T) {
	t.Run("checks", func(t *testing.T) {
		ctx := guard(t, 10*time.Second)
		hc := fastChecks
		hc.Interval, hc.Timeout = 10*time.Millisecond, 10*time.Millisecond
		// The checks alternate: a test-side ticker would race the
		// checker, so the transport flips its answer on each check. Not a
		// server: a real check can miss 10 ms on a loaded machine, and
		// that failure next to a 503 would make two in a row.
		flap, steady := &url.URL{Scheme: "http", Host: "flap.invalid"}, &url.URL{Scheme: "http", Host: "steady.invalid"}
		var n atomic.Int32
		tr := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			code := http.StatusOK
			if r.URL.Host == flap.Host && n.Add(1)%2 == 0 {
				code = http.StatusServiceUnavailable
			}
			return &http.Response{StatusCode: code, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
		})
		p, _ := newProxy(t, []*url.URL{flap, steady}, "round-robin", nil, httpbalancer.WithHealthCheck(hc), httpbalancer.WithTransport(tr))
		waitFor(t, ctx, "20 checks", func() bool {
			st, _ := statsOf(p, flap)
			require.True(t, st.Serving, "flapped out: %s", st.Reason)
			return st.Checks >= 20
		})
		st, _ := statsOf(p, flap)
		require.InDelta(t, st.Checks/2, st.FailedChecks, 1)
	})
	t.Run("process", func(t *testing.T) {
		ctx := guard(t, 10*time.Second)
		bs := []*live{startLive(t, "a"), startLive(t, "b")}
		p, proxy := newProxy(t, []*url.URL{bs[0].url(), bs[1].url()}, "least-pending", nil,
			httpbalancer.WithEjectFor(20*time.Millisecond), httpbalancer.WithEjectMax(200*time.Millisecond))
		bg := startLoad(ctx, client(t), proxy.URL, 4)
		for range 4 {
			time.Sleep(100 * time.Millisecond)
			bs[1].stop()
			time.Sleep(100 * time.Millisecond)
			bs[1].restart()
		}
		res := bg.finish()
		st, _ := statsOf(p, bs[1].url())
		t.Logf("statuses %v; flapper: %d requests, %d errors, %d ejections", res.status, st.Requests, st.Errors, st.Ejections)
		require.Equal(t, map[int]int{http.StatusOK: res.status[http.StatusOK]}, res.status, "bodies %v, errors %v", res.bodies, res.netErrs)
		require.GreaterOrEqual(t, st.Ejections, uint64(4), "ejected at each death")
	})
}

// TestNothingLeft: when every backend fails its checks, a request gets 502
// naming each backend and its last check.
func TestNothingLeft(t *testing.T) {
	ctx := guard(t, 10*time.Second)
	bs := []*live{startLive(t, "a"), startLive(t, "b")}
	p, proxy := newProxy(t, []*url.URL{bs[0].url(), bs[1].url()}, "least-pending", nil, httpbalancer.WithHealthCheck(fastChecks))
	for _, b := range bs {
		b.health.Store(http.StatusServiceUnavailable)
	}
	waitFor(t, ctx, "both out", func() bool {
		for _, st := range p.Stats() {
			if st.Serving {
				return false
			}
		}
		return true
	})
	res := load(ctx, client(t), proxy.URL, http.MethodGet, 5, 1)
	require.Equal(t, map[int]int{http.StatusBadGateway: 5}, res.status)
	for body := range res.bodies {
		require.True(t, strings.HasPrefix(body, "httpbalancer: no backend available: "), body)
		for _, b := range bs {
			// The last check answered 503, or, on a loaded machine, not
			// within the 20 ms timeout: both fail it.
			require.Regexp(t, regexp.QuoteMeta(b.addr)+` unhealthy: \d+ failed health checks in a row, the last: (status 503|no answer within 20ms)`, body)
		}
	}
}

// TestCloseStopsChecks: Close ends every health-check goroutine, also those
// of backends added later, and refuses what comes after.
func TestCloseStopsChecks(t *testing.T) {
	ctx := guard(t, 10*time.Second)
	bs := []*live{startLive(t, "a"), startLive(t, "b"), startLive(t, "c")}
	opts := goleak.IgnoreCurrent()
	s, err := strategies.New("least-pending", strategies.Equal(2))
	require.NoError(t, err)
	p, err := httpbalancer.New([]*url.URL{bs[0].url(), bs[1].url()}, s, httpbalancer.WithHealthCheck(fastChecks))
	require.NoError(t, err)
	require.NoError(t, p.Add(bs[2].url(), 1))
	waitFor(t, ctx, "checks", func() bool { st, _ := statsOf(p, bs[2].url()); return st.Checks > 2 })
	require.NoError(t, p.Close())
	require.NoError(t, p.Close(), "idempotent")
	goleak.VerifyNone(t, opts)
	require.ErrorIs(t, p.Add(bs[0].url(), 1), httpbalancer.ErrClosed)
	res := load(ctx, client(t), "http://"+bs[0].addr, http.MethodGet, 1, 1)
	require.Equal(t, map[int]int{http.StatusOK: 1}, res.status, "the backend itself is fine")
}

// TestChecksOwnConnections: health checks run on connections of their
// own, never on one a proxied request uses (a check's timeout ending as
// its bodiless answer returned the connection could fail the request that
// reused it). The backend records which client address each kind came
// from; the two sets never meet.
func TestChecksOwnConnections(t *testing.T) {
	ctx := guard(t, 10*time.Second)
	var mu sync.Mutex
	checks, proxied := map[string]bool{}, map[string]bool{}
	b := startServing(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Path == "/healthz" {
			checks[r.RemoteAddr] = true
			return
		}
		proxied[r.RemoteAddr] = true
	})
	p, proxy := newProxy(t, []*url.URL{b.url()}, "round-robin", nil, httpbalancer.WithHealthCheck(fastChecks))
	c := client(t)
	waitFor(t, ctx, "5 checks and 200 requests", func() bool {
		res := load(ctx, c, proxy.URL, http.MethodGet, 20, 2)
		require.Equal(t, map[int]int{http.StatusOK: 20}, res.status, "bodies %v, errors %v", res.bodies, res.netErrs)
		st, _ := statsOf(p, b.url())
		return st.Checks >= 5 && st.Requests >= 200
	})
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, checks)
	require.NotEmpty(t, proxied)
	for addr := range checks {
		require.False(t, proxied[addr], "connection %s carried a check and a proxied request", addr)
	}
}

// roundTripFunc is a RoundTripper made of a function: a backend that needs
// no server.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// healthyFor answers host's health checks 200 at once and passes
// everything else on.
type healthyFor struct {
	http.RoundTripper
	host string
}

func (h healthyFor) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host == h.host && r.URL.Path == "/healthz" {
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
	}
	return h.RoundTripper.RoundTrip(r)
}
