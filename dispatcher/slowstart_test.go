package dispatcher_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
	"github.com/gobalancer/balancer/strategies"
)

// TestAddWorkerSlowStart: a worker added to a dispatcher whose strategy has
// slow start gets a share that grows over the window, from the floor to its
// weight, and then keeps its weight. The dispatcher picks once per request,
// in order, so the window counted in picks is the requests submitted and
// the ramp is the strategy's own on both engines.
func TestAddWorkerSlowStart(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		const window, segs = 1600, 8
		s, err := strategies.New("swrr", strategies.Equal(2), strategies.WithSlowStart(strategies.PickWindow(window), 0.1, 1))
		require.NoError(t, err)
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2), dispatcher.WithStrategy(s))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		t.Cleanup(cancel)
		// Each segment is submitted and answered before the next, so that
		// Completed counts it whole.
		segment := func(n int) int64 {
			before := d.Stats().Workers[2].Completed
			fs := make([]*dispatcher.Future[int], n)
			for k := range fs {
				fs[k], err = dispatcher.Submit(ctx, d, ok(k))
				require.NoError(t, err)
			}
			for _, f := range fs {
				_, err := waitFuture(t, f, 10*time.Second)
				require.NoError(t, err)
			}
			require.Eventually(t, func() bool { return d.Stats().Pending == 0 }, 10*time.Second, time.Millisecond)
			return d.Stats().Workers[2].Completed - before
		}
		i, err := d.AddWorker(1)
		require.NoError(t, err)
		require.Equal(t, 2, i)
		require.Equal(t, 1, d.Stats().Workers[i].Weight, "the dispatcher keeps the configured weight")
		shares := make([]int64, segs)
		for k := range shares {
			shares[k] = segment(window / segs)
		}
		t.Logf("new worker's picks per %d: %v (full share %d)", window/segs, shares, window/segs/3)
		for k := 1; k < segs; k++ {
			require.GreaterOrEqual(t, shares[k], shares[k-1], "segment %d: %v", k, shares)
		}
		per := float64(window / segs)
		assert.InDelta(t, 0.1/2.1, float64(shares[0])/per, 0.03, "the first segment is near the floor's share")
		assert.InDelta(t, 1.0/3, float64(shares[segs-1])/per, 0.04, "the last segment is near the full share")
		assert.InDelta(t, 100, segment(300), 2, "after the window: the full share, 1/3")
	})
}
