package dispatcher

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// Closed-loop flows under ByPriority and Fair: each flow has one request
// waiting at a time and submits the next only after some hand-outs (its
// answer's round trip), so flows leave the rotation and come back all
// the time: the pattern that starved class 0 beside classes 3 and 7 (and
// a tenant of share 1 beside shares 8 and 128) for thousands of
// hand-outs. A flow that keeps coming back must be served within 3·W
// hand-outs of its request's arrival, W the flows' summed weight.

// closedLoop drives q with flows of the given classes and tenants: after
// each hand-out, the flow served resubmits rtt hand-outs later (rtt
// random in [1, 2]: two workers). It returns the longest wait of each flow, in
// hand-outs.
func closedLoop(t *testing.T, q scheduler, prios []int, tenants []*tenant, handouts int) []int {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 5))
	n := len(prios)
	since := make([]int, n) // hand-outs since the flow's request arrived; -1: none waiting
	back := make([]int, n)  // hand-outs until the flow resubmits
	worst := make([]int, n)
	for f := range n {
		q.push(schedReq(context.Background(), f, prios[f], tenants[f]))
	}
	for range handouts {
		f := -1 // no flow waits: time passes without a hand-out
		if r := q.pop(); r != nil {
			f = int(r.key)
			worst[f] = max(worst[f], since[f])
			since[f], back[f] = -1, 1+rng.IntN(2)
		}
		for g := range n {
			switch {
			case since[g] >= 0 && g != f:
				since[g]++
			case since[g] < 0 && g != f:
				if back[g]--; back[g] == 0 {
					q.push(schedReq(context.Background(), g, prios[g], tenants[g]))
					since[g] = 0
				}
			}
		}
	}
	for g := range n {
		worst[g] = max(worst[g], since[g]) // a wait not over yet counts too
	}
	return worst
}

func TestPriorityClosedLoopNoStarvation(t *testing.T) {
	q := newPriorityQueue()
	worst := closedLoop(t, q, []int{0, 3, 3, 7, 7}, make([]*tenant, 5), 30000)
	t.Logf("worst waits in hand-outs: class 0 %d, class 3 %d, class 7 %d", worst[0], max(worst[1], worst[2]), max(worst[3], worst[4]))
	require.LessOrEqual(t, worst[0], 3*(1+8+128), "class 0 within 3·W")
}

func TestFairClosedLoopNoStarvation(t *testing.T) {
	book := newTenantBook()
	q := newFairQueue(book)
	ts := []*tenant{
		{share: 1, member: -1, stats: book.named("a")},
		{share: 8, member: -1, stats: book.named("b")},
		{share: 128, member: -1, stats: book.named("c")},
	}
	ts = []*tenant{ts[0], ts[1], ts[1], ts[2], ts[2]}
	worst := closedLoop(t, q, make([]int, 5), ts, 30000)
	t.Logf("worst waits in hand-outs: share 1 %d, share 8 %d, share 128 %d", worst[0], max(worst[1], worst[2]), max(worst[3], worst[4]))
	require.LessOrEqual(t, worst[0], 3*(1+8+128), "share 1 within 3·W")
}
