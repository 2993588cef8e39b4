package grpcbalancer_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gobalancer/balancer/contrib/grpcbalancer"
	"github.com/gobalancer/balancer/strategies"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/status"
)

const (
	calls   = 1000
	callers = 16 // concurrent callers, so load-aware policies see pending calls
)

var latencies = []time.Duration{1 * time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond}

// needStrategy fails a subtest whose strategy is not registered: the
// distributions below are documented for every one of them.
func needStrategy(t *testing.T, name string) {
	t.Helper()
	require.Contains(t, strategies.Names(), name)
}

// TestDistribution runs 1000 calls from 16 callers, then from 64, against
// backends of 1, 2, 5 and 20 ms latency under each policy and checks the
// shape of the split. The 64-caller run puts 16 calls in flight per backend
// on average, through lock-free pickers and the mutex alike; on a 2-core
// machine the callers take turns on the CPU rather than run at once, so it
// checks the accounting under contention, not 64-way parallel speed.
func TestDistribution(t *testing.T) {
	for _, conc := range []int{callers, 64} {
		t.Run(fmt.Sprintf("callers=%d", conc), func(t *testing.T) { testDistribution(t, conc) })
	}
}

func testDistribution(t *testing.T, conc int) {
	ctx := guard(t, 25*time.Second)
	bs := startBackends(t, latencies...)

	run := func(t *testing.T, policy string, weights []int) []int64 {
		cc := dial(t, bs, weights, lbConfig(policy))
		warmUp(t, ctx, cc, bs)
		res := load(ctx, cc, calls, conc)
		require.Zero(t, res.failed, "failed calls: %v", res.errs)
		require.EqualValues(t, calls, res.ok)
		c := counts(bs)
		t.Logf("%s: %v (1, 2, 5, 20 ms)", policy, c)
		return c
	}

	t.Run("round_robin", func(t *testing.T) {
		// gRPC's own policy, the baseline: blind to latency, even split.
		for _, n := range run(t, "round_robin", nil) {
			require.InDelta(t, calls/4, n, calls/20)
		}
	})
	for _, name := range []string{"least-pending", "least-requests", "latency"} {
		t.Run(grpcbalancer.PolicyName(name), func(t *testing.T) {
			needStrategy(t, name)
			c := run(t, grpcbalancer.PolicyName(name), nil)
			// Clearly more to the faster servers: the 1 ms one takes at
			// least twice the 20 ms one's share, the faster half the
			// majority.
			require.Greater(t, c[0], 2*c[3], "1 ms vs 20 ms: %v", c)
			require.Greater(t, c[0]+c[1], c[2]+c[3], "fast half vs slow half: %v", c)
		})
	}
	t.Run(grpcbalancer.PolicyName("swrr"), func(t *testing.T) {
		needStrategy(t, "swrr")
		weights := []int{4, 3, 2, 1} // from resolver attributes
		c := run(t, grpcbalancer.PolicyName("swrr"), weights)
		for i, w := range weights {
			// Latency-blind, weight-exact up to the calls in flight when
			// the warm-up ended.
			require.InDelta(t, calls*w/10, c[i], calls/50, "member %d: %v", i, c)
		}
	})
}

// TestBackendGoesAway stops one of four backends after a third of the calls.
// The service config's retryPolicy retries an UNAVAILABLE call once (health
// Check is idempotent); a call that still fails must fail with a status
// that says why. Either way no call is lost: ok + failed == calls.
func TestBackendGoesAway(t *testing.T) {
	needStrategy(t, strategies.Default)
	ctx := guard(t, 25*time.Second)
	bs := startBackends(t, 2*time.Millisecond, 2*time.Millisecond, 2*time.Millisecond, 2*time.Millisecond)
	const sc = `{
	  "loadBalancingConfig": [{"gobalancer_least_pending": {}}],
	  "methodConfig": [{
	    "name": [{"service": "grpc.health.v1.Health"}],
	    "retryPolicy": {"maxAttempts": 2, "initialBackoff": "0.005s", "maxBackoff": "0.005s",
	                    "backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE"]}
	  }]}`
	cc := dial(t, bs, nil, sc)
	warmUp(t, ctx, cc, bs)

	stopped := make(chan int64)
	go func() {
		for bs[0].calls.Load()+bs[1].calls.Load()+bs[2].calls.Load()+bs[3].calls.Load() < calls/3 {
			time.Sleep(time.Millisecond)
		}
		bs[3].srv.Stop() // closes its connections: in-flight calls fail UNAVAILABLE
		stopped <- bs[3].calls.Load()
	}()
	res := load(ctx, cc, calls, 16)
	atStop := <-stopped

	require.EqualValues(t, calls, res.ok+res.failed, "every call ends in a result")
	for _, err := range res.errs {
		st, ok := status.FromError(err)
		require.True(t, ok, "a gRPC status: %v", err)
		require.NotEmpty(t, st.Message(), "failure says why: %v", err)
	}
	require.Equal(t, atStop, bs[3].calls.Load(), "no call reaches a stopped backend")
	t.Logf("ok %d, failed %d (first errors %v), counts %v, stopped backend had %d",
		res.ok, res.failed, res.errs, counts(bs), atStop)
	require.LessOrEqual(t, res.failed, int64(callers), "only calls in flight at the stop may fail")
}
