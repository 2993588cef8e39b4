package httpbalancer_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gobalancer/balancer/contrib/httpbalancer"
	"github.com/gobalancer/balancer/strategies"
	"github.com/stretchr/testify/require"
)

// member is the part of a backend's Stats that SetBackends changes.
type member struct {
	URL     string
	Weight  int
	Serving bool
}

func members(p *httpbalancer.Proxy) []member {
	var m []member
	for _, st := range p.Stats() {
		m = append(m, member{st.URL, st.Weight, st.Serving})
	}
	return m
}

// route sends n requests one at a time and returns how many each live
// backend took.
func route(t *testing.T, ctx context.Context, c *http.Client, proxy string, n int, ls ...*live) []int64 {
	t.Helper()
	before := make([]int64, len(ls))
	for i, l := range ls {
		before[i] = l.calls.Load()
	}
	for range n {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, proxy, nil)
		resp, err := c.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	got := make([]int64, len(ls))
	for i, l := range ls {
		got[i] = l.calls.Load() - before[i]
	}
	return got
}

// TestSetBackendsAnyOrder: the reported case, from {a:1, b:1} to
// [a:0, b:0, c:1], is accepted in every order of the list (it was refused
// with ErrLastMember when a and b came before c, leaving a at 0), and each
// order gives the same members, weights and routing.
func TestSetBackendsAnyOrder(t *testing.T) {
	needStrategy(t, "swrr")
	ctx := guard(t, 10*time.Second)
	a, b, c := startLive(t, "a"), startLive(t, "b"), startLive(t, "c")
	list := []httpbalancer.Backend{{URL: a.url(), Weight: 0}, {URL: b.url(), Weight: 0}, {URL: c.url(), Weight: 1}}
	for _, order := range [][]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}} {
		var bs []httpbalancer.Backend
		for _, i := range order {
			bs = append(bs, list[i])
		}
		p, proxy := newProxy(t, []*url.URL{a.url(), b.url()}, "swrr", nil)
		require.NoError(t, p.SetBackends(bs), "order %v", order)
		require.Equal(t, []member{
			{a.url().String(), 0, true}, {b.url().String(), 0, true}, {c.url().String(), 1, true},
		}, members(p), "order %v", order)
		require.Equal(t, []int64{0, 0, 20}, route(t, ctx, client(t), proxy.URL, 20, a, b, c), "order %v", order)
	}
}

// TestSetBackendsRefusedChangesNothing: every kind of refusal leaves the
// members, their weights and the routing as they were, whatever the list
// changed before its bad entry. The strategy (swrr under slow start) refuses
// a weight above MaxWeight/64, which the proxy cannot know
// before trying: by then it has added c and re-weighted b, and must undo
// both, without starting c's health checks.
func TestSetBackendsRefusedChangesNothing(t *testing.T) {
	needStrategy(t, "swrr")
	ctx := guard(t, 10*time.Second)
	a, b := startLive(t, "a"), startLive(t, "b")
	var cChecks atomic.Int64
	var c *live
	c = startServing(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			cChecks.Add(1)
			return
		}
		c.calls.Add(1)
	})
	s, err := strategies.New("swrr", []int{1, 2}, strategies.WithSlowStart(strategies.PickWindow(100), 0.1, 1))
	require.NoError(t, err)
	p, err := httpbalancer.New([]*url.URL{a.url(), b.url()}, s,
		httpbalancer.WithHealthCheck(httpbalancer.HealthCheck{Path: "/healthz", Interval: time.Second}))
	require.NoError(t, err)
	proxy := httptest.NewServer(p)
	t.Cleanup(func() { proxy.Close(); require.NoError(t, p.Close()) })
	cl := client(t)

	want := []member{{a.url().String(), 1, true}, {b.url().String(), 2, true}}
	require.Equal(t, want, members(p))
	require.Equal(t, []int64{10, 20, 0}, route(t, ctx, cl, proxy.URL, 30, a, b, c))

	huge := strategies.MaxWeight // valid, but too large under slow start, which scales weights up
	for name, tc := range map[string]struct {
		bs  []httpbalancer.Backend
		err error
	}{
		"empty":      {nil, httpbalancer.ErrConfig},
		"nil URL":    {[]httpbalancer.Backend{{URL: a.url(), Weight: 5}, {URL: nil, Weight: 1}}, httpbalancer.ErrConfig},
		"relative":   {[]httpbalancer.Backend{{URL: c.url(), Weight: 1}, {URL: &url.URL{Path: "/x"}, Weight: 1}}, httpbalancer.ErrConfig},
		"duplicate":  {[]httpbalancer.Backend{{URL: a.url(), Weight: 5}, {URL: c.url(), Weight: 1}, {URL: c.url(), Weight: 2}}, httpbalancer.ErrDuplicateBackend},
		"negative":   {[]httpbalancer.Backend{{URL: c.url(), Weight: 1}, {URL: b.url(), Weight: 0}, {URL: a.url(), Weight: -1}}, strategies.ErrNegativeWeight},
		"too large":  {[]httpbalancer.Backend{{URL: b.url(), Weight: 3}, {URL: a.url(), Weight: strategies.MaxWeight + 1}}, strategies.ErrTooLarge},
		"all zero":   {[]httpbalancer.Backend{{URL: a.url(), Weight: 0}, {URL: b.url(), Weight: 0}, {URL: c.url(), Weight: 0}}, strategies.ErrAllZero},
		"strategy's": {[]httpbalancer.Backend{{URL: b.url(), Weight: 3}, {URL: c.url(), Weight: 1}, {URL: a.url(), Weight: huge}}, strategies.ErrTooLarge},
	} {
		err := p.SetBackends(tc.bs)
		require.ErrorIs(t, err, tc.err, name)
		require.Equal(t, want, members(p), "%s: %v", name, err)
		require.Equal(t, []int64{10, 20, 0}, route(t, ctx, cl, proxy.URL, 30, a, b, c), "%s: %v", name, err)
	}

	closed := make(chan error)
	go func() { closed <- p.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-ctx.Done():
		t.Fatal("Close waits for a health check it cannot stop")
	}
	require.Zero(t, cChecks.Load(), "no health check of a backend the refused calls did not keep")
	require.ErrorIs(t, p.SetBackends([]httpbalancer.Backend{{URL: c.url(), Weight: 1}}), httpbalancer.ErrClosed)
	require.Equal(t, want, members(p))
}
