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
	var bs []*backend
	for i, l := range latencies {
		b := &backend{}
		b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b.calls.Add(1)
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
	res := result{status: map[int]int{}, bodies: map[string]int{}}
	var (
		next atomic.Int64
		mu   sync.Mutex
		wg   sync.WaitGroup
	)
	for range conc {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
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

func counts(bs []*backend) []int64 {
	c := make([]int64, len(bs))
	for i, b := range bs {
		c[i] = b.calls.Load()
	}
	return c
}
