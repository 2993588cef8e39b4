package dispatcher

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
)

// The lanes' line driven by hand, each interleaving forced. As in
// rings_intake_internal_test.go no balancer runs: the test plays it,
// calling the same functions under mu in the order rings.loop and
// rings.park do.

// laneRings returns a rings engine with no balancer whose intake of cap
// has lanes of mode.
func laneRings(cap int, mode laneMode) *rings {
	d := &Dispatcher{book: newTenantBook()}
	e := &rings{d: d, wake: make(chan struct{}, 1)}
	e.in.cap = cap
	d.b.laneIn, e.in.mode = &e.in, mode
	return e
}

// balancerTurn is the locked part of a rings turn after the balancer sent
// sent requests (account lowers n by them), then the locked part of park.
func balancerTurn(in *intake, sent int) {
	in.mu.Lock()
	in.account(in.left + int64(sent))
	if in.offerDue() {
		in.offer()
	}
	in.offerLanes(false)
	in.mu.Unlock()
	// park
	in.mu.Lock()
	if in.waitq.n > 0 && in.admits() {
		in.offer()
	}
	in.offerLanes(true)
	in.mu.Unlock()
}

// leave runs without the lock: a submitter that read its lane's old held
// under mu and joins the line after the balancer's leave must still be
// offered the room (it once waited for the next request to leave a lane:
// a task to finish, unbounded if the flood's tasks are long).
//
// The interleaving is inside admit's critical section, so it is replayed
// by hand: the submitter's steps are admit's.
func TestLaneLeaveRacesJoin(t *testing.T) {
	e := laneRings(4, lanesByClass)
	in := &e.in
	flood, _ := e.d.book.laneOf(lanesByClass, nil, 7)
	quiet, qw := e.d.book.laneOf(lanesByClass, nil, 0)

	// The flood (class 7) fills the buffer; class 0's part is
	// max(1, 4*1/129) = 1, which its one request holds (second buffer).
	in.mu.Lock()
	for range 4 {
		in.enter(flood, 128)
		in.n++
	}
	require.True(t, in.laneAdmits(quiet, qw, true))
	in.enter(quiet, qw)
	in.n++

	// A second class-0 submitter, in admit, under mu:
	blocks := !in.admits() && !in.laneAdmits(quiet, qw, true)
	require.True(t, blocks, "its lane is full: it will wait")
	// ... meanwhile the balancer (no lock) hands out class 0's request:
	// next() -> leave(quiet). Nobody is in line yet, so laneDue stays false.
	in.leave(quiet)
	// ... the submitter carries on: into the line.
	ch := in.waitq.newChan()
	quiet.weight = qw
	in.activate(quiet)
	in.waitq.pushBack(ch, quiet)
	in.mu.Unlock()

	// The balancer accounts the request it sent, and parks.
	balancerTurn(in, 1)

	require.Len(t, ch, 1, "the class-0 submitter is offered its lane's room before the balancer parks")
	require.Equal(t, 1, quiet.offered)
}

// Under FIFO a newcomer that finds the buffer full waits in line behind
// earlier waiters, and offerDue bounds how many newcomers pass a waiter
// (half a buffer) before an offer. A lane's room appears at leave(),
// before the balancer's offerLanes runs: a newcomer of the same lane must
// not take it past the lane's waiter (it once did, every time). Class 3
// (part 3 of 4 beside class 0's flood) has three requests in and a fourth
// submitter in line, then 3·cap newcomers of class 3 come one by one;
// the FIFO subtest is the same line without lanes.
func TestLaneNewcomersDoNotPassItsWaiter(t *testing.T) {
	for _, mode := range []laneMode{lanesOff, lanesByClass} {
		name := map[laneMode]string{lanesOff: "FIFO", lanesByClass: "lanes"}[mode]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const cap = 4
				e := laneRings(cap, mode)
				in := &e.in
				flood, fw := e.d.book.laneOf(lanesByClass, nil, 0)
				quiet, qw := e.d.book.laneOf(lanesByClass, nil, 3)
				in.mu.Lock()
				in.n = cap // the flood fills the buffer
				if mode != lanesOff {
					for range cap {
						in.enter(flood, fw)
					}
					for range 3 { // class 3's part: max(1, 4*8/9) = 3
						require.True(t, in.laneAdmits(quiet, qw, true))
						in.enter(quiet, qw)
						in.n++
					}
					require.False(t, in.laneAdmits(quiet, qw, true))
				}
				in.mu.Unlock()

				waiter := lineSubmit(e, t.Context(), &request{meta: meta{prio: 3}})
				synctest.Wait()
				require.False(t, waiter.done)
				require.Equal(t, 1, in.waitq.n)

				passed := 0
				for range 3 * cap {
					// The balancer pops one class-3 request (next -> leave)
					// and, before it takes the lock, a class-3 newcomer
					// submits (TrySubmit; Submit would do the same).
					if mode != lanesOff {
						in.leave(quiet)
					}
					if err := e.enqueue(t.Context(), &request{meta: meta{prio: 3}}, false); err == nil {
						passed++
					}
					// It then accounts the request it sent, offers, parks.
					balancerTurn(in, 1)
					synctest.Wait()
					if waiter.done {
						break
					}
				}
				t.Logf("%s: newcomers that passed the waiter: %d; waiter admitted: %v", name, passed, waiter.done)
				require.True(t, waiter.done, "the waiter in line was passed by %d newcomers of its own lane (offerDue bounds passing at max(1, cap/2) = %d)", passed, max(1, cap/2))
				require.LessOrEqual(t, passed, max(1, cap/2))
			})
		})
	}
}

// The second buffer's room comes back when in.n drops (account), not only
// at leave(). A request that leaves the schedule into b.held leaves its
// lane then, while n still counts it; offerLanes at that turn finds the
// second buffer full. When the held request is sent later (complete), n
// drops with no leave(): the room must still be offered before the
// balancer parks. Five tenants of share 1 at cap 2: every part is
// max(1, 2/5) = 1.
func TestLaneHeldSendOffersRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := laneRings(2, lanesByTenant)
		in := &e.in
		book := e.d.book
		var ts []*tenant
		for _, name := range []string{"a", "b", "c", "d", "e"} {
			ts = append(ts, &tenant{share: 1, member: -1, stats: book.named(name)})
		}
		// a and b fill the buffer, c and d come in through their lanes.
		for _, tn := range ts[:4] {
			require.NoError(t, e.enqueue(t.Context(), &request{meta: meta{tenant: tn}}, false))
		}
		require.Equal(t, 4, in.n)
		waiter := lineSubmit(e, t.Context(), &request{meta: meta{tenant: ts[4]}})
		synctest.Wait()
		require.False(t, waiter.done, "the second buffer is full")

		// The balancer pops a's request (leave) and holds it: its worker
		// is full. Nothing was sent this turn.
		la, _ := book.laneOf(lanesByTenant, ts[0], 0)
		in.leave(la)
		balancerTurn(in, 0)
		synctest.Wait()
		require.False(t, waiter.done)

		// A completion: the held request is sent (n drops), no leave().
		balancerTurn(in, 1)
		synctest.Wait()

		require.True(t, waiter.done, "e's submitter is offered the second buffer's room before the balancer parks")
	})
}
