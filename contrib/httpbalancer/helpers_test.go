package httpbalancer_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gobalancer/balancer/contrib/httpbalancer"
	"github.com/gobalancer/balancer/strategies"
	"github.com/stretchr/testify/require"
)

// guard bounds a test: every request uses the returned context, so a hang
// becomes a failed request and the test fails with the guard's message.
func guard(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeoutCause(context.Background(), d,
		fmt.Errorf("%s exceeded its %v guard", t.Name(), d))
	t.Cleanup(cancel)
	return ctx
}

// backend is an httptest server that answers its index after a latency.
type backend struct {
	*httptest.Server
	calls atomic.Int64
}

func startBackends(t *testing.T, latencies ...time.Duration) []*backend {
	t.Helper()
	return startBackendsHook(t, func() {}, latencies...)
}

// startBackendsHook is startBackends whose backends call hook on every
// call, after counting it: a test can wait for a number of calls as an
// event instead of polling the counters.
func startBackendsHook(t *testing.T, hook func(), latencies ...time.Duration) []*backend {
	t.Helper()
	var bs []*backend
	for i, l := range latencies {
		b := &backend{}
		b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b.calls.Add(1)
			hook()
			_, _ = io.Copy(io.Discard, r.Body)
			tm := time.NewTimer(l)
			defer tm.Stop()
			select {
			case <-tm.C:
				fmt.Fprint(w, i)
			case <-r.Context().Done():
			}
		}))
		t.Cleanup(b.Close)
		bs = append(bs, b)
	}
	return bs
}

func urls(bs []*backend) []*url.URL {
	var us []*url.URL
	for _, b := range bs {
		u, _ := url.Parse(b.URL)
		us = append(us, u)
	}
	return us
}

// startProxy serves a Proxy over the backends with the named strategy.
func startProxy(t *testing.T, bs []*backend, strategy string, weights []int, opts ...httpbalancer.Option) *httptest.Server {
	t.Helper()
	if weights == nil {
		weights = strategies.Equal(len(bs))
	}
	s, err := strategies.New(strategy, weights)
	require.NoError(t, err)
	p, err := httpbalancer.New(urls(bs), s, opts...)
	require.NoError(t, err)
	srv := httptest.NewServer(p)
	t.Cleanup(func() { srv.Close(); p.CloseIdleConnections() })
	return srv
}

// client returns an HTTP client that keeps enough idle connections for the
// test's concurrency and closes them at cleanup.
func client(t *testing.T) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

type result struct {
	status  map[int]int
	bodies  map[string]int // non-200 bodies
	netErrs []error
}

// load sends n requests from conc concurrent clients; a POST carries a body.
func load(ctx context.Context, c *http.Client, target, method string, n, conc int) result {
	var next atomic.Int64
	return drive(ctx, c, target, method, conc, func() bool { return next.Add(1) <= int64(n) })
}

// drive sends requests from conc concurrent clients while more says so.
func drive(ctx context.Context, c *http.Client, target, method string, conc int, more func() bool) result {
	res := result{status: map[int]int{}, bodies: map[string]int{}}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for range conc {
		wg.Go(func() {
			for more() {
				var body io.Reader
				if method == http.MethodPost {
					body = strings.NewReader("payload")
				}
				req, _ := http.NewRequestWithContext(ctx, method, target, body)
				resp, err := c.Do(req)
				var b []byte
				if err == nil {
					b, err = io.ReadAll(resp.Body)
					_ = resp.Body.Close()
				}
				mu.Lock()
				switch {
				case err != nil:
					res.netErrs = append(res.netErrs, err)
				default:
					res.status[resp.StatusCode]++
					if resp.StatusCode != http.StatusOK {
						res.bodies[string(b)]++
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return res
}

// background is load that runs until finish, for tests that change the
// backends while requests flow.
type background struct {
	stop chan struct{}
	out  chan result
	sent atomic.Int64
}

func startLoad(ctx context.Context, c *http.Client, target string, conc int) *background {
	bg := &background{stop: make(chan struct{}), out: make(chan result, 1)}
	go func() {
		bg.out <- drive(ctx, c, target, http.MethodGet, conc, func() bool {
			select {
			case <-bg.stop:
				return false
			default:
				bg.sent.Add(1)
				return ctx.Err() == nil
			}
		})
	}()
	return bg
}

func (bg *background) finish() result {
	close(bg.stop)
	return <-bg.out
}

// requireAnswered: every request got 200, or a 502 whose body says why.
func requireAnswered(t *testing.T, res result) {
	t.Helper()
	require.Empty(t, res.netErrs, "every request gets an HTTP answer")
	for code := range res.status {
		require.Contains(t, []int{http.StatusOK, http.StatusBadGateway}, code, "statuses %v", res.status)
	}
	for b := range res.bodies {
		require.True(t, strings.HasPrefix(b, "httpbalancer: "), "a 502 names its reason: %q", b)
	}
}

// waitFor polls cond until it holds, or fails the test at ctx's end.
func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, context.Cause(ctx))
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// newProxy serves a Proxy over targets with the named strategy; cleanup
// closes the server, then the proxy (its health checks).
func newProxy(t *testing.T, targets []*url.URL, strategy string, weights []int, opts ...httpbalancer.Option) (*httpbalancer.Proxy, *httptest.Server) {
	t.Helper()
	if weights == nil {
		weights = strategies.Equal(len(targets))
	}
	s, err := strategies.New(strategy, weights)
	require.NoError(t, err)
	p, err := httpbalancer.New(targets, s, opts...)
	require.NoError(t, err)
	srv := httptest.NewServer(p)
	t.Cleanup(func() { srv.Close(); require.NoError(t, p.Close()) })
	return p, srv
}

// statsOf returns the Stats entry of target, and whether it is there.
func statsOf(p *httpbalancer.Proxy, target *url.URL) (httpbalancer.BackendStats, bool) {
	for _, s := range p.Stats() {
		if s.URL == target.String() {
			return s, true
		}
	}
	return httpbalancer.BackendStats{}, false
}

func counts(bs []*backend) []int64 {
	c := make([]int64, len(bs))
	for i, b := range bs {
		c[i] = b.calls.Load()
	}
	return c
}
