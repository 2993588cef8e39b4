package grpcbalancer

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gobalancer/balancer/strategies"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/balancer"
)

// TestConcurrentPath: a strategy declaring Traits.Concurrent is picked
// from many goroutines under a shared read lock while membership changes
// take it exclusively (run with -race). Between changes a key keeps its
// member, as consistent hashing promises; no pick lands on a removed
// member; and its calls report no Done, since its Done does nothing.
func TestConcurrentPath(t *testing.T) {
	const n = 6
	s, err := strategies.New("consistent-hash", strategies.Equal(n))
	require.NoError(t, err)
	require.True(t, strategies.TraitsOf(s).Concurrent)
	pickers := make([]balancer.Picker, n)
	for i := range pickers {
		pickers[i] = readyPicker{}
	}
	p := &picker{sh: newShared(s, pickers)}
	require.True(t, p.sh.concurrent)
	require.True(t, p.sh.noDone)

	var stop atomic.Bool
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for k := 0; !stop.Load(); k++ {
				ctx := WithKey(context.Background(), uint64(g*1_000_000+k%50))
				r, err := p.Pick(balancer.PickInfo{Ctx: ctx})
				if !assert.NoError(t, err) {
					return
				}
				assert.Nil(t, r.Done, "a Done that does nothing is not reported")
			}
		})
	}
	// Churn: add a member, remove it, forget it, 200 times, each under the
	// exclusive lock, as the balancer's update does.
	d := s.(strategies.Dynamic)
	for range 200 {
		p.sh.exclusive()
		i, err := d.Add(1)
		require.NoError(t, err)
		for len(p.sh.pickers) <= i {
			p.sh.pickers = append(p.sh.pickers, nil)
		}
		p.sh.pickers[i] = readyPicker{}
		p.sh.unlockAll()

		p.sh.exclusive()
		require.NoError(t, d.Remove(i))
		p.sh.pickers[i] = nil // a pick of it would fail the call: the assert above
		require.NoError(t, s.(strategies.Forgetter).Forget(i))
		p.sh.unlockAll()
	}
	stop.Store(true)
	wg.Wait()

	// Without changes, a key's picks all go to one member.
	for key := range uint64(20) {
		p.sh.use()
		first := p.sh.s.Pick(key)
		p.sh.unuse()
		for range 10 {
			p.sh.use()
			require.Equal(t, first, p.sh.s.Pick(key))
			p.sh.unuse()
		}
	}
	require.LessOrEqual(t, len(p.sh.pickers), n+1, "indices reused")
}
