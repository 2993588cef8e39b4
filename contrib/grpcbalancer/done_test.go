package grpcbalancer

import (
	"context"
	"testing"

	"github.com/gobalancer/balancer/strategies"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/balancer"
)

// TestDoneReachesStrategy: on the mutex path a pick stays pending in the
// channel's strategy until its Done, which is pooled, not allocated.
func TestDoneReachesStrategy(t *testing.T) {
	addrs := servers(t, 3)
	ch := openChannel(t, PolicyName("least-pending"), "", addrs, nil)
	p := ch.picker().(*picker)
	lp := p.sh.s.(*strategies.LeastPending)
	info := balancer.PickInfo{Ctx: context.Background()}
	var dones []func(balancer.DoneInfo)
	for range 6 {
		r, err := p.Pick(info)
		require.NoError(t, err)
		dones = append(dones, r.Done)
	}
	pending := func() (n int) {
		p.sh.mu.Lock()
		defer p.sh.mu.Unlock()
		for i := range 3 {
			n += lp.Pending(i)
			require.LessOrEqual(t, lp.Pending(i), 2, "least-pending spreads them")
		}
		return n
	}
	require.Equal(t, 6, pending())
	for _, d := range dones {
		d(balancer.DoneInfo{})
	}
	require.Equal(t, 0, pending())
	dones[0](balancer.DoneInfo{}) // a second Done of one call is ignored
	require.Equal(t, 0, pending())
}
