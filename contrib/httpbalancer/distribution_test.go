package httpbalancer_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gobalancer/balancer/strategies"
	"github.com/stretchr/testify/require"
)

// needStrategy fails a subtest whose strategy is not registered: the
// distributions below are documented for every one of them.
func needStrategy(t *testing.T, name string) {
	t.Helper()
	require.Contains(t, strategies.Names(), name)
}

// TestDistribution reproduces the shape of skipper's leastRequests
// experiment (backends of 1, 5, 10 and 25 s took 4299/927/478/296 of the
// requests) at millisecond scale: 1000 requests from 16, then 64,
// concurrent clients to backends of 4, 20, 40 and 100 ms (skipper's seconds
// times 4 ms, so the proxy's own overhead, a few ms under -race on a busy
// machine, does not flatten the 1:5:10:25 ratio). At 64 callers the
// load-aware strategies would keep about 16 requests on each backend, 5 360
// a second in all, which the one process here (clients, proxy, backends)
// cannot serve on 2 cores: the wait for CPU adds to every backend's latency
// and flattens the split (docs/beyond.md has the figures).
func TestDistribution(t *testing.T) {
	for _, conc := range []int{16, 64} {
		t.Run(fmt.Sprintf("%d callers", conc), func(t *testing.T) { distribution(t, conc) })
	}
}

func distribution(t *testing.T, conc int) {
	const requests = 1000
	ctx := guard(t, 25*time.Second)
	bs := startBackends(t, 4*time.Millisecond, 20*time.Millisecond, 40*time.Millisecond, 100*time.Millisecond)

	run := func(t *testing.T, strategy string, weights []int) []int64 {
		for _, b := range bs {
			b.calls.Store(0)
		}
		proxy := startProxy(t, bs, strategy, weights)
		res := load(ctx, client(t), proxy.URL, http.MethodGet, requests, conc)
		require.Equal(t, map[int]int{http.StatusOK: requests}, res.status, "bodies %v, errors %v", res.bodies, res.netErrs)
		c := counts(bs)
		t.Logf("%s, %d callers: %v (4, 20, 40, 100 ms)", strategy, conc, c)
		return c
	}

	// The weighted splits do not depend on the callers; they run once.
	fixed := conc == 16
	if fixed {
		t.Run("round-robin", func(t *testing.T) {
			for _, n := range run(t, "round-robin", nil) {
				require.InDelta(t, requests/4, n, 1)
			}
		})
	}
	for _, name := range []string{"least-pending", "least-requests", "latency"} {
		t.Run(name, func(t *testing.T) {
			needStrategy(t, name)
			c := run(t, name, nil)
			// skipper's shape: the fastest takes the most by far, each
			// slower backend fewer. (How steep depends on how many requests
			// are in flight at the backends, which the proxy's CPU bounds
			// here; docs/beyond.md has measured runs.) At 64 callers the CPU
			// flattens it to about 45/27/18/10 % under -race: only the order holds.
			if !fixed {
				require.True(t, c[0] > c[1] && c[1] > c[2] && c[2] > c[3], "slower, fewer: %v", c)
				return
			}
			require.Greater(t, 2*c[0], 3*c[1], "4 ms vs 20 ms: %v", c)
			require.Greater(t, c[1], c[3], "20 ms vs 100 ms: %v", c)
			require.Greater(t, c[0], 3*c[3], "4 ms vs 100 ms: %v", c)
		})
	}
	if !fixed {
		return
	}
	t.Run("swrr", func(t *testing.T) {
		needStrategy(t, "swrr")
		weights := []int{4, 3, 2, 1}
		c := run(t, "swrr", weights)
		for i, w := range weights {
			require.InDelta(t, requests*w/10, c[i], 1, "member %d: %v", i, c)
		}
	})
}

// TestBackendGoesAway kills one of four backends (its connections and its
// listener) after a third of the requests. GETs that were in flight on it
// are retried once on another backend, so all succeed; POSTs with a body are
// not replayed and fail with a 502 naming the backend, never silently.
func TestBackendGoesAway(t *testing.T) {
	const requests, conc = 600, 16
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		t.Run(method, func(t *testing.T) {
			ctx := guard(t, 20*time.Second)
			var calls atomic.Int64
			third := make(chan struct{})
			bs := startBackendsHook(t, func() {
				if calls.Add(1) == requests/3 {
					close(third)
				}
			}, 2*time.Millisecond, 2*time.Millisecond, 2*time.Millisecond, 2*time.Millisecond)
			proxy := startProxy(t, bs, strategies.Default, nil)
			killed := make(chan int64)
			go func() {
				select {
				case <-third:
				case <-ctx.Done():
					// The load failed first; load reports why.
				}
				_ = bs[3].Listener.Close()
				bs[3].CloseClientConnections()
				killed <- bs[3].calls.Load()
			}()
			res := load(ctx, client(t), proxy.URL, method, requests, conc)
			atKill := <-killed

			require.Empty(t, res.netErrs, "every request gets an HTTP answer")
			require.Equal(t, requests, res.status[http.StatusOK]+res.status[http.StatusBadGateway], "statuses %v", res.status)
			for b := range res.bodies {
				require.True(t, strings.HasPrefix(b, "httpbalancer: backend failed: "+bs[3].Listener.Addr().String()), "clear message: %q", b)
			}
			t.Logf("%s: statuses %v, 502 bodies %v, counts %v, killed backend had %d", method, res.status, res.bodies, counts(bs), atKill)
			if method == http.MethodGet {
				require.Equal(t, requests, res.status[http.StatusOK], "GETs are retried: %v", res.bodies)
			}
		})
	}
}
