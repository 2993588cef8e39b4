package grpcbalancer

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

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

// TestDoneUnderContention: 64 goroutines Pick and Done at once (run with
// -race), so many Dones find the lock held and are left owed; once the
// last Done has returned, the next holder of the lock settles them all and
// nothing is pending.
func TestDoneUnderContention(t *testing.T) {
	for _, name := range []string{"least-pending", "least-requests", "latency"} {
		t.Run(name, func(t *testing.T) {
			p := newTestPicker(t, name, 5).(*picker)
			var wg sync.WaitGroup
			for g := range 64 {
				wg.Go(func() {
					info := balancer.PickInfo{Ctx: context.Background()}
					var held []func(balancer.DoneInfo)
					for range 500 {
						r, err := p.Pick(info)
						require.NoError(t, err)
						held = append(held, r.Done)
						if len(held) > g%4 { // up to 3 calls in flight per goroutine
							held[0](balancer.DoneInfo{})
							held = held[1:]
						}
					}
					for _, d := range held {
						d(balancer.DoneInfo{})
					}
				})
			}
			wg.Wait()
			p.sh.lock()
			defer p.sh.mu.Unlock()
			require.Nil(t, p.sh.owed.Load())
			type pender interface{ Pending(int) int }
			for i := range 5 {
				require.Zero(t, p.sh.s.(pender).Pending(i), "member %d", i)
			}
		})
	}
}

// TestIgnoresElapsed: the strategies whose calls go unclocked pick the same
// sequence whatever elapsed their Done is given.
func TestIgnoresElapsed(t *testing.T) {
	w := []int{3, 1, 2, 1}
	for name := range ignoresElapsed {
		a, err := strategies.New(name, w)
		require.NoError(t, err)
		b, err := strategies.New(name, w)
		require.NoError(t, err)
		r := rand.New(rand.NewPCG(1, 2))
		var pending []int
		for k := range 20000 {
			if len(pending) > 0 && r.IntN(2) == 0 {
				j := r.IntN(len(pending))
				a.Done(pending[j], 0)
				b.Done(pending[j], time.Duration(1+r.Int64N(int64(time.Second))))
				pending = append(pending[:j], pending[j+1:]...)
				continue
			}
			key := r.Uint64()
			i := a.Pick(key)
			require.Equal(t, i, b.Pick(key), "%s pick %d", name, k)
			pending = append(pending, i)
		}
	}
}
