package httpbalancer_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gobalancer/balancer/contrib/httpbalancer"
	"github.com/stretchr/testify/require"
)

// TestStats: requests, 5xx errors and latency per backend, consistent with
// each other; with 5xx ejection off, a failing backend stays in.
func TestStats(t *testing.T) {
	ctx := guard(t, 10*time.Second)
	b := startServing(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(5 * time.Millisecond)
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusInternalServerError)
		}
	})
	p, proxy := newProxy(t, []*url.URL{b.url()}, "round-robin", nil, httpbalancer.WithEject5xx(0))
	c := client(t)
	load(ctx, c, proxy.URL+"/ok", http.MethodGet, 20, 2)
	res := load(ctx, c, proxy.URL+"/fail", http.MethodGet, 10, 2)
	require.Equal(t, map[int]int{http.StatusInternalServerError: 10}, res.status, "a 5xx reaches the client")

	st, ok := statsOf(p, b.url())
	require.True(t, ok)
	require.True(t, st.Serving)
	require.Equal(t, uint64(30), st.Requests)
	require.Equal(t, uint64(10), st.Errors)
	require.Zero(t, st.InFlight)
	require.Equal(t, st.Requests, st.Latency.Count+uint64(st.InFlight))
	p50, err := st.Latency.Quantile(0.5)
	require.NoError(t, err)
	require.GreaterOrEqual(t, p50, 5*time.Millisecond-5*time.Millisecond/16, "the bucket's middle is within 1/16")
	require.LessOrEqual(t, p50, st.Latency.Max)
	var n uint64
	for _, bk := range st.Latency.Buckets {
		n += bk.Count
		require.Less(t, bk.Low, bk.High)
	}
	require.Equal(t, st.Latency.Count, n)
}

// TestEject5xxDefault: by default five 5xx in a row eject a backend; the
// 5xx themselves go to the client, and the other backend takes the rest.
func TestEject5xxDefault(t *testing.T) {
	ctx := guard(t, 10*time.Second)
	good := startLive(t, "good")
	bad := startServing(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	p, proxy := newProxy(t, []*url.URL{bad.url(), good.url()}, "round-robin", nil)
	res := load(ctx, client(t), proxy.URL, http.MethodGet, 40, 1)
	require.Equal(t, map[int]int{http.StatusServiceUnavailable: 5, http.StatusOK: 35}, res.status)
	st, _ := statsOf(p, bad.url())
	require.False(t, st.Serving)
	require.True(t, strings.Contains(st.Reason, "5 consecutive 5xx, the last status 503"), st.Reason)
	require.Equal(t, uint64(1), st.Ejections)
}
