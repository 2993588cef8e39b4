package httpbalancer_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/contrib/httpbalancer"
	"github.com/gobalancer/balancer/strategies"
)

// TestAddSlowStart: a backend added to a proxy whose strategy has slow
// start gets a share that grows from the floor to its weight over the
// window, and so does one that comes back from weight 0 (the path of an
// ejected backend's re-admission). The window is counted in picks, one per
// request sent one at a time, so the shares do not depend on the machine's
// speed; the guard bounds the test in time.
func TestAddSlowStart(t *testing.T) {
	ctx := guard(t, 30*time.Second)
	const window, segs = 800, 8
	bs := startBackends(t, 0, 0, 0)
	us := urls(bs)
	s, err := strategies.New("swrr", strategies.Equal(2), strategies.WithSlowStart(strategies.PickWindow(window), 0.1, 1))
	require.NoError(t, err)
	p, err := httpbalancer.New(us[:2], s)
	require.NoError(t, err)
	srv := httptest.NewServer(p)
	t.Cleanup(func() { srv.Close(); _ = p.Close() })
	c := client(t)

	// segment sends n requests one after the other and returns how many
	// reached the third backend.
	segment := func(n int) int64 {
		before := bs[2].calls.Load()
		res := load(ctx, c, srv.URL, http.MethodGet, n, 1)
		require.Equal(t, map[int]int{http.StatusOK: n}, res.status, "%v", res.netErrs)
		return bs[2].calls.Load() - before
	}
	ramp := func(what string) {
		shares := make([]int64, segs)
		for k := range shares {
			shares[k] = segment(window / segs)
		}
		t.Logf("%s: picks of the third backend per %d requests: %v (full share %d)", what, window/segs, shares, window/segs/3)
		for k := 1; k < segs; k++ {
			require.GreaterOrEqual(t, shares[k], shares[k-1], "%s: segment %d: %v", what, k, shares)
		}
		per := float64(window / segs)
		assert.InDelta(t, 0.1/2.1, float64(shares[0])/per, 0.04, "%s: the first segment is near the floor's share", what)
		assert.InDelta(t, 1.0/3, float64(shares[segs-1])/per, 0.05, "%s: the last segment is near the full share", what)
		assert.InDelta(t, 100, segment(300), 2, "%s: after the window, the full share", what)
	}

	require.NoError(t, p.Add(us[2], 1))
	ramp("added")
	require.NoError(t, p.SetWeight(us[2], 0))
	require.Zero(t, segment(30), "drained")
	require.NoError(t, p.SetWeight(us[2], 1))
	ramp("re-admitted")
	for _, st := range p.Stats() {
		// The first two weights come from the strategy's Weight: the
		// configured ones, not the scaled weights the wrapped swrr holds.
		require.Equal(t, 1, st.Weight, "%+v", st)
	}
}
