package grpcbalancer

import (
	"testing"
	"time"

	"github.com/gobalancer/balancer/strategies"
	"github.com/stretchr/testify/require"
)

// TestPolicyPath: each policy's picker on a real channel takes the path
// its strategy declares: lock-free for a strategies.Cyclic or
// strategies.Sampler, else the shared picker, concurrent for a strategy
// declaring Traits.Concurrent.
func TestPolicyPath(t *testing.T) {
	addrs := servers(t, 2)
	for _, name := range strategies.Names() {
		t.Run(name, func(t *testing.T) {
			s, err := strategies.New(name, []int{1, 1})
			require.NoError(t, err)
			_, cyclic := s.(strategies.Cyclic)
			_, sampler := s.(strategies.Sampler)
			ch := openChannel(t, PolicyName(name), "", addrs, nil)
			p := ch.picker()
			if cyclic || sampler {
				require.IsType(t, &lockFreePicker{}, p)
				return
			}
			require.IsType(t, &picker{}, p)
			require.Equal(t, strategies.TraitsOf(s).Concurrent, p.(*picker).sh.concurrent)
		})
	}
	// Two pinned: nginx-swrr declares its cycle, consistent-hash its
	// concurrent picks.
	require.IsType(t, &lockFreePicker{}, openChannel(t, PolicyName("nginx-swrr"), "", addrs, nil).picker())
	require.True(t, openChannel(t, PolicyName("consistent-hash"), "", addrs, nil).picker().(*picker).sh.concurrent)
}

// TestLockFreeMembership: a membership or weight change sends a new picker
// whose schedule follows the change; the old picker keeps its own snapshot.
func TestLockFreeMembership(t *testing.T) {
	addrs := servers(t, 3)
	ch := openChannel(t, PolicyName("swrr"), "", addrs[:2], []int{3, 1})
	old := ch.picker().(*lockFreePicker)
	require.Len(t, old.pickers, 2)
	require.Len(t, old.sel.sched, 4)

	n := ch.pickers()
	ch.r.UpdateState(addrState(addrs, []int{1, 1, 2}))
	p := ch.waitFor(t, 3).(*lockFreePicker)
	require.Greater(t, ch.pickers(), n, "the update sent a new picker")
	require.NotSame(t, old, p)
	require.Len(t, p.sel.sched, 4)
	c := pickAll(p, 400)
	var got []int
	for _, k := range c {
		got = append(got, k)
	}
	require.ElementsMatch(t, []int{100, 100, 200}, got, "weights 1:1:2")
	require.Len(t, pickAll(old, 40), 2, "the old picker still has its two members")
}

// TestLongPeriodKeepsMutex: a schedule too long to replay leaves the policy
// on the mutex path, and a later update that shortens it goes lock-free.
func TestLongPeriodKeepsMutex(t *testing.T) {
	addrs := servers(t, 2)
	ch := openChannel(t, PolicyName("swrr"), "", addrs, []int{maxSchedule, 1})
	require.IsType(t, &picker{}, ch.picker(), "period %d > %d", maxSchedule+1, maxSchedule)
	ch.r.UpdateState(addrState(addrs, []int{2, 1}))
	require.Eventually(t, func() bool {
		_, ok := ch.picker().(*lockFreePicker)
		return ok
	}, 10*time.Second, 5*time.Millisecond)
}
