package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func get(t *testing.T, c *http.Client, url, tenant string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if tenant != "" {
		req.Header.Set("X-Tenant", tenant)
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// serve starts the service with two workers behind a test server on
// 127.0.0.1; both stop when the test ends.
func serve(t *testing.T) (*Service, *httptest.Server) {
	t.Helper()
	s, err := New(2)
	require.NoError(t, err)
	srv := httptest.NewServer(s)
	t.Cleanup(func() {
		srv.Close()
		require.NoError(t, s.Close(context.Background()))
	})
	return s, srv
}

// TestThreeTypesOneDispatcher: each task type answers with its own
// result type through the one dispatcher.
func TestThreeTypesOneDispatcher(t *testing.T) {
	s, srv := serve(t)
	c := srv.Client()

	code, body := get(t, c, srv.URL+"/count?n=100", "pro")
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, "25\n", body, "25 primes below 100")

	code, body = get(t, c, srv.URL+"/thumbnail?side=8", "free")
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, string(Thumbnail(8)), body)
	assert.Len(t, body, 64)

	code, body = get(t, c, srv.URL+"/report?rows=3", "enterprise")
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, Report(3), body)

	for _, tc := range []struct{ url, tenant string }{
		{"/count?n=100", ""},
		{"/count?n=100", "nobody"},
		{"/count?n=0", "pro"},
		{"/count?n=x", "pro"},
		{"/thumbnail?side=5000", "pro"},
		{"/report?rows=-1", "pro"},
	} {
		code, body := get(t, c, srv.URL+tc.url, tc.tenant)
		assert.Equal(t, http.StatusBadRequest, code, "%s as %q: %s", tc.url, tc.tenant, body)
	}
	var names []string
	for _, f := range s.Stats().Tenants {
		names = append(names, f.Name)
	}
	assert.Subset(t, names, []string{"free", "pro", "enterprise"})
}

// TestTenantsShareByWeight saturates the workers with every tenant's
// clients (each cycling over the three task types) and checks that the
// tasks the tenants completed meanwhile split 1:2:4 within 10% of each
// weight's share.
func TestTenantsShareByWeight(t *testing.T) {
	s, srv := serve(t)
	c := srv.Client()
	c.Transport.(*http.Transport).MaxIdleConnsPerHost = 64

	completed := func() map[string]int64 {
		m := map[string]int64{}
		for _, f := range s.Stats().Tenants {
			m[f.Name] = f.Completed
		}
		return m
	}
	// Enough clients per tenant that none runs out of waiting requests
	// while the workers are busy: Fair shares hand-outs among the
	// tenants that wait.
	const clients = 12
	// Tasks of about a millisecond each: long beside the HTTP round trip,
	// so the workers, not the server, are what the tenants queue for.
	paths := []string{"/count?n=300000", "/thumbnail?side=160", "/report?rows=4000"}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	halt := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer halt() // also when an assertion stops the test early
	for name := range Shares {
		for k := range clients {
			wg.Go(func() {
				for i := k; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					req, _ := http.NewRequest(http.MethodGet, srv.URL+paths[i%len(paths)], nil)
					req.Header.Set("X-Tenant", name)
					resp, err := c.Do(req)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		}
	}
	// Warm up until every tenant has completed work, then measure a
	// window of completions.
	total := func(m map[string]int64) (n int64) {
		for name := range Shares {
			n += m[name]
		}
		return n
	}
	deadline := time.Now().Add(time.Minute)
	wait := func(from map[string]int64, n int64) {
		for total(completed())-total(from) < n {
			require.True(t, time.Now().Before(deadline), "the service stopped completing tasks")
			time.Sleep(5 * time.Millisecond)
		}
	}
	wait(completed(), 150)
	start := completed()
	wait(start, 700)
	end := completed()
	halt()

	weights := 0
	for _, w := range Shares {
		weights += w
	}
	n := total(end) - total(start)
	for name, w := range Shares {
		got := float64(end[name]-start[name]) / float64(n)
		want := float64(w) / float64(weights)
		t.Logf("%s (share %d): %.3f of completions, want %.3f", name, w, got, want)
		assert.InDelta(t, want, got, want/10, fmt.Sprintf("%s (share %d): %.3f of completions, want %.3f±10%%", name, w, got, want))
	}
}
