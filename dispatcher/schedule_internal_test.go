package dispatcher

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/internal/lag"
)

// schedReq is a hand-made request for driving a schedule's queue directly:
// its key is its id, so pops can be checked against a model.
func schedReq(ctx context.Context, id int, prio int, t *tenant) *request {
	r := &request{ctx: ctx, meta: meta{tenant: t}}
	r.prio = uint8(prio)
	r.key = uint64(id)
	return r
}

// TestPriorityQueueFIFOWithinClass: requests of one class come out in the
// order they went in, whatever the other classes do.
func TestPriorityQueueFIFOWithinClass(t *testing.T) {
	q := newPriorityQueue()
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 400
	for id := range n {
		q.push(schedReq(context.Background(), id, rng.IntN(MaxPriority+1), nil))
	}
	require.Equal(t, n, q.len())
	last := make([]int, MaxPriority+1)
	for p := range last {
		last[p] = -1
	}
	seen := map[int]bool{}
	for range n {
		r := q.pop()
		require.NotNil(t, r)
		require.Greater(t, int(r.key), last[r.prio], "class %d out of FIFO order", r.prio)
		last[r.prio] = int(r.key)
		require.False(t, seen[int(r.key)], "request %d popped twice", int(r.key))
		seen[int(r.key)] = true
	}
	require.Nil(t, q.pop())
	require.Zero(t, q.len())
}

// TestPriorityQueueNoStarvationUnderClass7: with class 7 always backlogged,
// a class-0 request arriving at any point of swrr's cycle is popped within
// 3·129 pops, the bound the ByPriority doc states.
func TestPriorityQueueNoStarvationUnderClass7(t *testing.T) {
	const bound = 3 * 129
	for offset := range 140 { // past one swrr cycle (129)
		q := newPriorityQueue()
		id := 0
		push7 := func() { q.push(schedReq(context.Background(), id, 7, nil)); id++ }
		for range 4 {
			push7()
		}
		for range offset {
			r := q.pop()
			require.NotNil(t, r)
			require.EqualValues(t, 7, r.prio)
			push7()
		}
		q.push(schedReq(context.Background(), -1, 0, nil))
		found := 0
		for pops := 1; pops <= bound; pops++ {
			r := q.pop()
			require.NotNil(t, r)
			if r.prio == 0 {
				require.Equal(t, -1, int(r.key))
				found = pops
				break
			}
			push7()
		}
		require.NotZero(t, found, "offset %d: class 0 not popped within %d pops", offset, bound)
	}
}

// TestPriorityQueueNoStarvationAllClasses: with all eight classes kept
// backlogged, class 0's head is popped within 3·255 pops, first and every
// time after.
func TestPriorityQueueNoStarvationAllClasses(t *testing.T) {
	const bound = 3 * 255
	q := newPriorityQueue()
	id := 0
	for p := range MaxPriority + 1 {
		for range 2 {
			q.push(schedReq(context.Background(), id, p, nil))
			id++
		}
	}
	since, class0 := 0, 0
	for range 20 * 255 {
		r := q.pop()
		require.NotNil(t, r)
		since++
		if r.prio == 0 {
			class0++
			since = 0
		}
		require.LessOrEqual(t, since, bound, "class 0's head waited more than %d pops", bound)
		q.push(schedReq(context.Background(), id, int(r.prio), nil)) // keep its class backlogged
		id++
	}
	require.Greater(t, class0, 10)
	require.Equal(t, 16, q.len())
	require.Len(t, q.takeAll(), 16)
	require.Zero(t, q.len())
	require.Nil(t, q.pop())
}

// TestDeadlineQueueOrder: earliest deadline first; equal deadlines and
// requests without one keep FIFO order; those without one go after every
// request with one.
func TestDeadlineQueueOrder(t *testing.T) {
	base := time.Now().Add(time.Hour)
	ctxAt := func(off int) context.Context {
		ctx, cancel := context.WithDeadline(context.Background(), base.Add(time.Duration(off)*time.Millisecond))
		t.Cleanup(cancel)
		return ctx
	}
	q := new(deadlineQueue)
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 300
	offs := make([]int, n) // -1: no deadline
	for id := range n {
		ctx := context.Background()
		offs[id] = -1
		if rng.IntN(4) != 0 {
			offs[id] = rng.IntN(20) // many ties
			ctx = ctxAt(offs[id])
		}
		q.push(schedReq(ctx, id, 0, nil))
	}
	require.Equal(t, n, q.len())
	prevOff, prevID, noneSeen := -1, -1, false
	for range n {
		r := q.pop()
		require.NotNil(t, r)
		off := offs[int(r.key)]
		if off < 0 {
			if noneSeen {
				require.Greater(t, int(r.key), prevID, "no-deadline requests out of FIFO order")
			}
			noneSeen, prevID = true, int(r.key)
			continue
		}
		require.False(t, noneSeen, "request %d with a deadline after one without", int(r.key))
		require.GreaterOrEqual(t, off, prevOff, "deadline order broken at %d", int(r.key))
		if off == prevOff {
			require.Greater(t, int(r.key), prevID, "equal deadlines out of FIFO order")
		}
		prevOff, prevID = off, int(r.key)
	}
	require.Nil(t, q.pop())
	require.Zero(t, q.len())

	// takeAll returns both parts.
	q.push(schedReq(ctxAt(1), 1, 0, nil))
	q.push(schedReq(context.Background(), 2, 0, nil))
	require.Len(t, q.takeAll(), 2)
	require.Zero(t, q.len())
	require.Nil(t, q.pop())
}

// fairTenants makes n tenants with the given shares; tenant 0 is the
// default one when withDefault (its share is then 1).
func fairTenants(book *tenantBook, shares []int, withDefault bool) []*tenant {
	ts := make([]*tenant, len(shares))
	for i, w := range shares {
		if i == 0 && withDefault {
			ts[i] = book.def
			continue
		}
		ts[i] = &tenant{share: w, member: -1, stats: book.named(fmt.Sprintf("t%d", i))}
	}
	return ts
}

// fairLag pushes per requests for each tenant in a random order, pops
// while every tenant is still backlogged, and returns the picks' MaxLag
// over the shares; it also checks FIFO within each tenant.
func fairLag(t testing.TB, shares []int, withDefault bool, per int, rng *rand.Rand) float64 {
	book := newTenantBook()
	ts := fairTenants(book, shares, withDefault)
	q := newFairQueue(book)
	index := map[*tenant]int{}
	for i, tn := range ts {
		index[tn] = i
	}
	var order []int
	for i := range ts {
		for range per {
			order = append(order, i)
		}
	}
	rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
	left := make([]int, len(ts))
	for id, i := range order {
		tn := ts[i]
		if tn == book.def {
			tn = nil // the default tenant's requests carry none
		}
		q.push(schedReq(context.Background(), id, 0, tn))
		left[i]++
	}
	last := make([]int, len(ts))
	for i := range last {
		last[i] = -1
	}
	var picks []int
	for {
		r := q.pop()
		require.NotNil(t, r)
		tn := r.tenant
		if tn == nil {
			tn = book.def
		}
		i, ok := index[tn]
		require.True(t, ok, "request %d of an unknown tenant", int(r.key))
		require.Equal(t, i, order[int(r.key)], "request %d popped as another tenant's", int(r.key))
		require.Greater(t, int(r.key), last[i], "tenant %d out of FIFO order", i)
		last[i] = int(r.key)
		picks = append(picks, i)
		left[i]--
		if left[i] == 0 {
			break
		}
	}
	return lag.Max(shares, picks)
}

// TestFairQueueLag: tenants with shares all backlogged are served within 2
// of their share, with and without the default tenant among them.
func TestFairQueueLag(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for run := range 60 {
		n := 2 + rng.IntN(5)
		shares := make([]int, n)
		for i := range shares {
			shares[i] = 1 + rng.IntN(10)
		}
		withDefault := run%2 == 0
		if withDefault {
			shares[0] = 1
		}
		lag := fairLag(t, shares, withDefault, 40, rng)
		require.Less(t, lag, 2.0, "shares %v (default tenant %v)", shares, withDefault)
	}
}

// TestFairQueueJoinLeave: tenants that empty, leave and come back never
// lose, duplicate or reorder a request, against a model of per-tenant
// FIFOs.
func TestFairQueueJoinLeave(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for run := range 12 {
		book := newTenantBook()
		shares := []int{1, 1 + rng.IntN(5), 1 + rng.IntN(5), 1 + rng.IntN(5), 1 + rng.IntN(5)}
		ts := fairTenants(book, shares, true)
		q := newFairQueue(book)
		model := make([][]int, len(ts))
		owner := map[int]int{}
		id, total := 0, 0
		pop := func() {
			r := q.pop()
			if total == 0 {
				require.Nil(t, r)
				return
			}
			require.NotNil(t, r, "run %d: %d waiting but pop returned nil", run, total)
			i, ok := owner[int(r.key)]
			require.True(t, ok, "run %d: request %d popped twice or never pushed", run, int(r.key))
			delete(owner, int(r.key))
			require.NotEmpty(t, model[i])
			require.Equal(t, model[i][0], int(r.key), "run %d: tenant %d out of FIFO order", run, i)
			model[i] = model[i][1:]
			total--
		}
		for range 1500 {
			switch op := rng.IntN(10); {
			case op < 5:
				// Pushes favour a few tenants at a time so others empty and leave.
				i := rng.IntN(len(ts))
				if rng.IntN(3) != 0 {
					i = rng.IntN(2)
				}
				tn := ts[i]
				if i == 0 {
					tn = nil
				}
				q.push(schedReq(context.Background(), id, 0, tn))
				model[i] = append(model[i], id)
				owner[id] = i
				id++
				total++
			default:
				pop()
			}
			require.Equal(t, total, q.len())
		}
		if run%2 == 0 {
			all := q.takeAll()
			require.Len(t, all, total)
			for _, r := range all {
				_, ok := owner[int(r.key)]
				require.True(t, ok)
				delete(owner, int(r.key))
			}
			total = 0
			require.Nil(t, q.pop())
		} else {
			for total > 0 {
				pop()
			}
			require.Nil(t, q.pop())
		}
		require.Empty(t, owner, "run %d: requests lost", run)
		require.Zero(t, q.len())
	}
}

// FuzzFairLag: random shares (1..10), tenant counts (2..6) and push orders
// of backlogged requests: among tenants that stay backlogged, MaxLag < 2.
func FuzzFairLag(f *testing.F) {
	f.Add(uint64(1), uint8(2), false)
	f.Add(uint64(2), uint8(6), true)
	f.Add(uint64(3), uint8(4), false)
	f.Add(uint64(4), uint8(5), true)
	f.Fuzz(func(t *testing.T, seed uint64, count uint8, withDefault bool) {
		rng := rand.New(rand.NewPCG(seed, uint64(count)))
		n := 2 + int(count)%5
		shares := make([]int, n)
		for i := range shares {
			shares[i] = 1 + rng.IntN(10)
		}
		if withDefault {
			shares[0] = 1
		}
		lag := fairLag(t, shares, withDefault, 30, rng)
		require.Less(t, lag, 2.0, "shares %v (default tenant %v)", shares, withDefault)
	})
}

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
