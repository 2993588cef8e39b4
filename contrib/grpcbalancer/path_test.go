package grpcbalancer

import (
	"testing"

	"github.com/gobalancer/balancer/strategies"
	"github.com/stretchr/testify/require"
)

// lockFreePolicies is the documented split: these strategies get the
// lock-free picker, every other registered one the mutex.
var lockFreePolicies = map[string]bool{
	"round-robin": true, "iwrr": true, "swrr": true, "random": true, "weighted-random": true,
}

// TestPolicyPath: each policy's picker on a real channel takes the path its
// documentation says.
func TestPolicyPath(t *testing.T) {
	addrs := servers(t, 2)
	for _, name := range strategies.Names() {
		t.Run(name, func(t *testing.T) {
			ch := openChannel(t, PolicyName(name), "", addrs, nil)
			p := ch.picker()
			if lockFreePolicies[name] {
				require.IsType(t, &lockFreePicker{}, p)
			} else {
				require.IsType(t, &picker{}, p)
			}
		})
	}
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
