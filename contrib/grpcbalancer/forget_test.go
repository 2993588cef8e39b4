package grpcbalancer

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/gobalancer/balancer/strategies"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/balancer"
)

// TestForgetsRemovedEndpoints: a channel whose endpoints come and go keeps
// its strategy at the size of the endpoints it has. An endpoint removed
// while calls to it are in flight is forgotten only after their Done, so
// its index is not reused before (an endpoint added meanwhile gets another
// one); after 30 rounds of churn the strategy holds no more indices than
// the two endpoints and one changing. Both a strategy
// whose Done counts (least-pending, the mutex path) and one that ignores
// it (consistent-hash, forgotten at once) are run.
func TestForgetsRemovedEndpoints(t *testing.T) {
	addrs := servers(t, 3)
	for _, name := range []string{"least-pending", "consistent-hash"} {
		t.Run(name, func(t *testing.T) {
			ch := openChannel(t, PolicyName(name), "", addrs[:2], nil)
			sh := ch.picker().(*picker).sh
			size := func() int {
				sh.exclusive()
				defer sh.unlockAll()
				return sh.s.(interface{ Len() int }).Len()
			}
			// Calls in flight on both members.
			var held []func(balancer.DoneInfo)
			for k := range 4 {
				r, err := ch.picker().Pick(balancer.PickInfo{Ctx: WithKey(context.Background(), uint64(k))})
				require.NoError(t, err)
				if r.Done != nil {
					held = append(held, r.Done)
				}
			}
			if strategies.TraitsOf(sh.s).IgnoresDone {
				require.Empty(t, held, "no Done is reported to a strategy that ignores it")
			} else {
				require.Len(t, held, 4)
			}
			var last map[balancer.SubConn]bool
			set := func(a ...string) {
				ch.r.UpdateState(addrState(a, nil))
				last = reach(t, ch, len(a), last)
			}
			set(addrs[0], addrs[2]) // addrs[1] leaves with calls in flight
			set(addrs[0], addrs[1]) // and comes back, at another index while its old one drains
			require.Same(t, sh, ch.picker().(*picker).sh, "changed in place")
			draining := func() (n int) {
				sh.exclusive()
				defer sh.unlockAll()
				for i, d := range sh.draining {
					if d {
						n++
						require.Nil(t, sh.pickers[i], "draining member %d is not reused", i)
						require.EqualValues(t, 2, sh.inflight[i], "its two calls")
					}
				}
				return n
			}
			if len(held) > 0 {
				require.Equal(t, 1, draining())
			}
			require.LessOrEqual(t, size(), 4)
			for _, d := range held {
				d(balancer.DoneInfo{})
			}
			require.Zero(t, draining(), "forgotten once its calls are done")
			for round := range 30 {
				set(addrs[0], addrs[2])
				set(addrs[0], addrs[1])
				require.LessOrEqual(t, size(), 3, "round %d: two endpoints, one leaving", round)
			}
			// The channel still balances over what it has.
			seen := pickAll(ch.picker(), 200)
			require.Len(t, seen, 2)
		})
	}
}

// reach waits until the latest picker reaches n distinct SubConns other
// than the set before, as channel.waitFor does, but completes its picks
// only after it has seen them all: a least-pending policy with calls held
// on one member would otherwise give every pick to another. It returns the
// SubConns.
func reach(t *testing.T, ch *channel, n int, before map[balancer.SubConn]bool) map[balancer.SubConn]bool {
	t.Helper()
	var seen map[balancer.SubConn]bool
	require.Eventually(t, func() bool {
		p := ch.picker()
		if p == nil {
			return false
		}
		seen = map[balancer.SubConn]bool{}
		var dones []func(balancer.DoneInfo)
		for key := range 200 * n {
			r, err := p.Pick(balancer.PickInfo{Ctx: WithKey(context.Background(), uint64(key))})
			if err != nil {
				continue
			}
			seen[r.SubConn] = true
			if r.Done != nil {
				dones = append(dones, r.Done)
			}
		}
		for _, d := range dones {
			d(balancer.DoneInfo{})
		}
		return len(seen) == n && !maps.Equal(seen, before)
	}, 10*time.Second, 5*time.Millisecond, "%s: want %d endpoints", ch.policy, n)
	return seen
}
