package dispatcher

import (
	"fmt"
	"time"

	"github.com/gobalancer/balancer/strategies"
)

// balancer is the balancer's policy and its state, written once for both
// engines: the strategy calls, the held request, room accounting, pending
// statistics, membership and the lifecycle as the balancer has acted on
// it. Only the balancer goroutine touches it (no locks guard it); the
// engine's links are the only part that differs.
type balancer[R any] struct {
	strat strategies.Strategy
	dyn   strategies.Dynamic   // nil when strat cannot change membership
	batch strategies.BatchDone // nil when strat takes completions one by one
	links links[R]
	depth int // most requests a worker's queue holds (its ring's size on rings)
	// base is the limit a worker starts at, and keeps while its tasks take
	// half a microsecond or more: depth, unless the queues deepen
	// (adapt).
	base int

	w     []slot
	room  int // live workers with a positive weight and room for one more
	live  int // live workers
	total int // requests pending over all workers

	held  *request[R] // picked for a full worker, sent when it has room
	heldW int

	seen lifecycle // the lifecycle state the balancer has acted on

	// dispatched counts requests sent to workers, answered those the
	// balancer answered itself (abandoned, or a bad pick): together, every
	// request that left the balancer.
	dispatched, answered, completed, stalls int64
	pend                                    pendingStats
}

// links are what an engine does differently: how a request reaches a
// worker and comes back. Called on the balancer goroutine only.
type links[R any] interface {
	// send hands r to worker i, which has room (fewer than depth pending).
	send(i int, r *request[R])
	// takeBack removes a request still queued at worker i, if any, so it
	// can be answered without running (abandon).
	takeBack(i int) (*request[R], bool)
	// add starts a worker and returns its index; remove makes worker i
	// finish its queue and exit.
	add() int
	remove(i int)
	// busy is worker i's published busy time; replaced counts goroutines
	// replaced after a Goexit.
	busy(i int) time.Duration
	replaced() int64
	// recycle keeps an async request the balancer answered itself.
	recycle(r *request[R])
	// takeIntake returns every request accepted and not yet received by
	// the balancer (abandon; the intake is fenced by then).
	takeIntake() []*request[R]
	// stop stops every worker and waits for all their goroutines.
	stop()
}

// slot is the balancer's view of one worker and the dispatcher's one
// record of its weight, pending count and removal: the per-request checks
// (hasRoom, isLive) read them here, with no call and no other cache line.
// A dynamic strategy keeps its own weight and removal (and, if it balances
// on load, pending) because strategies is a standalone package, used
// without a dispatcher too; AddWorker, RemoveWorker, SetWeight and Resize
// change both copies in one balancer call, and the dispatcher never reads
// the strategy's. The worker's closed flag is the removal delivered to its
// goroutine; the pool asks it, the balancer never does.
type slot struct {
	weight     int
	pending    int
	limit      int // most requests counted against this worker now: base to depth
	maxPending int
	completed  int64
	busy       int64 // nanoseconds
	removed    bool

	busySeen time.Duration // the worker's busy time when last accounted
	per      time.Duration // the last mean duration per task, for Done
	unbilled int           // completions since busySeen last moved
}

func (b *balancer[R]) init(s strategies.Strategy, l links[R], depth, base int, weights []int) {
	b.strat, b.links, b.depth, b.base = s, l, depth, base
	b.dyn, _ = s.(strategies.Dynamic)
	b.batch, _ = s.(strategies.BatchDone)
	b.w = make([]slot, len(weights))
	for i, w := range weights {
		b.w[i].weight, b.w[i].limit = w, base
		b.live++
		if w > 0 {
			b.room++
		}
	}
}

func (b *balancer[R]) hasRoom(i int) bool {
	s := &b.w[i]
	return !s.removed && s.weight > 0 && s.pending < s.limit
}

func (b *balancer[R]) isLive(i int) bool { return i >= 0 && i < len(b.w) && !b.w[i].removed }

// canTake reports whether the balancer can take a request now: nothing is
// held and some live, weighted worker has room.
func (b *balancer[R]) canTake() bool { return b.held == nil && b.room > 0 }

// freeSlots is how many more requests the live, weighted workers can take
// now, or 0 while a request is held. O(workers): only a zero intake buffer
// needs it.
func (b *balancer[R]) freeSlots() int {
	if b.held != nil {
		return 0
	}
	free := 0
	for i := range b.w {
		if b.hasRoom(i) {
			free += b.w[i].limit - b.w[i].pending
		}
	}
	return free
}

// drained reports whether nothing the balancer accepted is still
// unanswered at it or at a worker.
func (b *balancer[R]) drained() bool { return b.held == nil && b.total == 0 }

// dispatch picks a worker for r and sends r to it, or holds r until the
// picked worker has room: the pick is honoured, never re-routed.
func (d *Dispatcher[R]) dispatch(r *request[R]) {
	b := &d.b
	if b.seen >= lifeAbandoning {
		b.answered++
		d.replyErrB(r, d.abandon)
		return
	}
	i := b.strat.Pick(r.key)
	if !b.isLive(i) {
		b.answered++
		d.replyErrB(r, fmt.Errorf("%w: %d", ErrBadPick, i))
		return
	}
	if b.w[i].pending >= b.w[i].limit {
		b.held, b.heldW = r, i
		b.stalls++
		return
	}
	b.send(i, r)
}

// send hands r to worker i and counts it pending.
func (b *balancer[R]) send(i int, r *request[R]) {
	s := &b.w[i]
	b.links.send(i, r)
	b.pend.add(s.pending, 1)
	s.pending++
	b.total++
	b.dispatched++
	if s.pending > s.maxPending {
		s.maxPending = s.pending
	}
	if s.pending == s.limit && s.weight > 0 && !s.removed {
		b.room--
	}
	b.pend.sample(b.live)
}

// account bills worker i's busy time to the completions it covers. Busy
// time is published per run of tasks, not per task (the clock was a sixth
// of the CPU of empty tasks), so completions reported before their run's
// time is published keep the last mean, and a change is spread over every
// completion since the previous change, however many reports (one per
// message on the channel engine, one per reap on rings) carried them.
func (b *balancer[R]) account(i, n int) {
	s := &b.w[i]
	s.unbilled += n
	if busy := b.links.busy(i); busy != s.busySeen {
		s.per = (busy - s.busySeen) / time.Duration(s.unbilled)
		s.busy += int64(busy - s.busySeen)
		s.busySeen = busy
		s.unbilled = 0
		if b.base < b.depth {
			b.adapt(i)
		}
	}
}

// queueBudget is how much work, by its tasks' mean run time, a worker's
// queue may hold beyond base requests when the queues deepen. A variable
// only so tests under the race detector, whose empty tasks take
// microseconds, can widen it.
var queueBudget = 32 * time.Microsecond

// adapt sets worker i's limit from the mean run time of its tasks: base
// requests, or as many as fill queueBudget, up to depth. A batch of empty
// tasks then keeps up to depth requests queued per worker, so the
// balancer refills a queue and wakes its worker a quarter as often; tasks
// of half a microsecond or more keep base, so a worker slow from the start
// holds no more work behind it than before (one whose tasks turn long
// keeps its limit until it next publishes its busy time: after at most 64
// tasks, or when it goes idle). The budget is 32 µs because a run's
// mean, which counts the time the worker's goroutine was descheduled in
// it, puts an empty task anywhere from 17 to 95 ns on 2 busy cores: at
// 16 µs the limit fell to 168-238 in one measurement of four.
func (b *balancer[R]) adapt(i int) {
	s := &b.w[i]
	want := b.base
	if s.per > 0 {
		want = int(min(max(queueBudget/s.per, time.Duration(b.base)), time.Duration(b.depth)))
	}
	if want == s.limit {
		return
	}
	had := b.hasRoom(i)
	s.limit = want
	if has := b.hasRoom(i); has != had {
		if has {
			b.room++
		} else {
			b.room--
		}
	}
}

// complete counts n requests of worker i as done.
func (b *balancer[R]) complete(i, n int) {
	s := &b.w[i]
	had := b.hasRoom(i)
	if !s.removed { // a removed worker left Pike's figure when it was removed
		b.pend.add(s.pending, -n)
	}
	s.pending -= n
	b.total -= n
	s.completed += int64(n)
	b.completed += int64(n)
	if !had && b.hasRoom(i) {
		b.room++
	}
	if b.batch != nil {
		b.batch.DoneN(i, n, s.per)
	} else {
		for range n {
			b.strat.Done(i, s.per)
		}
	}
	b.pend.sample(b.live)
	if b.held != nil && b.heldW == i && s.pending < s.limit {
		r := b.held
		b.held = nil
		b.send(i, r)
	}
}

// replyErrB answers r with err on the balancer goroutine, which owns
// an unsent async request and recycles it itself.
func (d *Dispatcher[R]) replyErrB(r *request[R], err error) {
	if r.async {
		d.b.links.recycle(r)
		return
	}
	var zero R
	r.answer(zero, err)
}

// spinTurns is how many empty turns the balancer yields its P for before it
// parks. A closed loop of requesters submits again within microseconds;
// yielding (runtime.Gosched, not a busy wait: whoever is runnable runs)
// lets them do so without the balancer paying a park and a wake-up per
// request. Closed-loop Do with empty tasks: 850 -> 537 CPU ns per request
// (0, 1, 3 turns: 850, 587, 537), batches and fairness unchanged.
const spinTurns = 3
