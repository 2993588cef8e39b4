package dispatcher

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/gobalancer/balancer/internal/cacheline"
	"github.com/gobalancer/balancer/strategies"
)

// balancer is the balancer's policy and its state, written once for every
// engine: the strategy calls, the held request, room accounting, pending
// statistics, the worker set, membership and the lifecycle as the
// balancer has acted on it. Only the balancer goroutine touches it (no
// locks guard it); engines see it through their port.
type balancer struct {
	strat strategies.Strategy
	dyn   strategies.Dynamic   // nil when strat cannot change membership
	batch strategies.BatchDone // nil when strat takes completions one by one
	ws    workerSet
	eng   engine // for setLimit
	// spares are the finished Go requests the workers handed back, on
	// their way to the intake's spare list.
	spares spares
	depth  int // most requests a worker's queue holds (its ring's size on rings)
	// base is the limit a worker starts at; with a budget, adapt moves it
	// between lo and depth by the worker's measured task time.
	base, lo int
	budget   time.Duration // WithQueueBudget; 0: limits stay at base

	// sched holds the requests taken and not handed out, in the
	// schedule's order; nil under FIFO, where the engine keeps its own.
	sched scheduler
	book  *tenantBook
	// laneIn is the intake whose mode says which flows have a part of it
	// (lanes.go); nil on Pike's unbuffered channel.
	laneIn *intake
	// meanPer is a moving mean of the workers' task times (admission's
	// estimate); sampleN picks the requests whose wait is recorded.
	meanPer time.Duration
	sampleN uint32
	// long tells each worker's goroutine that its tasks are long (its
	// time per task at least budget/longShare), so it yields after each
	// waited answer.
	long []*cacheline.Padded[atomic.Bool]

	w     []slot
	room  int // live workers with a positive weight and room for one more
	live  int // live workers
	total int // requests pending over all workers

	held  *request // picked for a full worker, sent when it has room
	heldW int

	seen lifecycle // the lifecycle state the balancer has acted on

	// dispatched counts requests sent to workers, answered those the
	// balancer answered itself (abandoned, or a bad pick): together, every
	// request that left the balancer.
	dispatched, answered, completed, stalls int64
	retired                                 int64 // completions of workers whose index was reused
	pend                                    pendingStats
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
	forgotten  bool // removed, drained, and its index free for reuse

	busySeen time.Duration // the worker's busy time when last accounted
	per      time.Duration // the last mean duration per task, for Done
	perPrev  time.Duration // the one before: adapt takes the smaller
	limitPer time.Duration // the mean the limit was last set from
	unbilled int           // completions since busySeen last moved
}

func (b *balancer) init(s strategies.Strategy, e engine, depth, base int, budget time.Duration, weights []int) {
	b.strat, b.eng, b.depth, b.base, b.budget = s, e, depth, base, budget
	b.spares = newSpares(len(weights), depth)
	b.lo = min(minLimit, depth)
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

func (b *balancer) hasRoom(i int) bool {
	s := &b.w[i]
	return !s.removed && s.weight > 0 && s.pending < s.limit
}

func (b *balancer) isLive(i int) bool { return i >= 0 && i < len(b.w) && !b.w[i].removed }

// canTake reports whether the balancer can take a request now: nothing is
// held and some live, weighted worker has room.
func (b *balancer) canTake() bool { return b.held == nil && b.room > 0 }

// freeSlots is how many more requests the live, weighted workers can take
// now, or 0 while a request is held. O(workers): only a zero intake buffer
// needs it.
func (b *balancer) freeSlots() int {
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
func (b *balancer) drained() bool {
	return b.held == nil && b.total == 0 && b.sched.len() == 0
}

// left is how many requests have left the accepted state: sent to a
// worker, or answered by the balancer itself.
func (b *balancer) left() int64 { return b.dispatched + b.answered }

// take puts r, which the engine took from its intake, in the schedule,
// noting when for one request in LatencySampleEvery (its wait).
func (b *balancer) take(r *request) {
	b.stamp(r)
	b.flow(r).queued++
	b.sched.push(r)
}

// stamp notes when the balancer took r, for one request in
// LatencySampleEvery: its worker records the wait from then to its start.
func (b *balancer) stamp(r *request) {
	if b.sampleN++; b.sampleN%LatencySampleEvery == 0 {
		r.took = time.Now().UnixNano()
	}
}

// flow returns the stats of r's tenant.
func (b *balancer) flow(r *request) *flowStats {
	if r.tenant != nil {
		return r.tenant.stats
	}
	return b.book.def.stats
}

// next returns the schedule's next request while a worker can take one,
// or nil.
func (b *balancer) next() *request {
	if !b.canTake() {
		return nil
	}
	r := b.sched.pop()
	if r != nil {
		b.flow(r).queued--
		if in := b.laneIn; in != nil && in.mode != lanesOff {
			l, _ := b.book.laneOf(in.mode, r.tenant, r.prio)
			in.leave(l)
		}
	}
	return r
}

// dispatch picks a worker for r and sends r to it, or holds r until the
// picked worker has room: the pick is honoured, never re-routed.
func (d *Dispatcher) dispatch(r *request) {
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
func (b *balancer) send(i int, r *request) {
	s := &b.w[i]
	// Counted before the hand-off: from then on r is its worker's, which
	// may answer it and see it reused before send returns. The default
	// tenant and class 0 get what the others leave of the total (Stats),
	// so a plain request pays two tests here, not two counters.
	if r.tenant != nil {
		r.tenant.stats.dispatched++
	}
	if r.prio != 0 {
		b.book.classes[r.prio].dispatched++
	}
	b.ws.send(i, r)
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
func (b *balancer) account(i, n int) {
	s := &b.w[i]
	s.unbilled += n
	if busy := b.ws.busy(i); busy != s.busySeen {
		s.per = (busy - s.busySeen) / time.Duration(s.unbilled)
		s.busy += int64(busy - s.busySeen)
		s.busySeen = busy
		s.unbilled = 0
		if b.meanPer == 0 {
			b.meanPer = s.per
		} else {
			b.meanPer += (s.per - b.meanPer) / 8
		}
		if b.budget > 0 {
			b.adapt(i)
		}
	}
}

// minLimit is the fewest requests a worker's limit falls to: the task it
// runs and the next, so it does not wait for the balancer between two.
const minLimit = 2

// adapt sets worker i's limit from the mean run time of its tasks: as
// many requests as fill the budget, from lo to depth (WithQueueBudget).
// Requests beyond wait in the balancer, where the schedule can still
// choose among them and the strategy picks the worker at the last
// moment. A run's mean counts the time the worker's goroutine was
// descheduled in it, so an empty task measures anywhere from 17 to 95 ns
// on 2 busy cores: the default budget still fills any depth with them.
func (b *balancer) adapt(i int) {
	s := &b.w[i]
	// The smaller of the last two runs' means: a run's mean counts the
	// time its goroutine was descheduled, which only ever inflates it, so
	// one preempted run of empty tasks (15 µs a task for a 1 ms stall)
	// does not cut a deep queue to a few requests. A worker whose tasks
	// turn long gets its short limit one run later.
	per := s.per
	if s.perPrev > 0 && s.perPrev < per {
		per = s.perPrev
	}
	s.perPrev, s.limitPer = s.per, per
	// Long: a tenth of the budget or more a task, whatever the queue's
	// depth (a shallow WithWorkerBuffer clamps the limit, not the time).
	b.long[i].V.Store(per > 0 && per >= b.budget/longShare)
	want := b.base
	if per > 0 {
		want = int(min(max(b.budget/per, time.Duration(b.lo)), time.Duration(b.depth)))
	}
	if want == s.limit {
		return
	}
	had := b.hasRoom(i)
	s.limit = want
	b.eng.setLimit(i, want)
	if has := b.hasRoom(i); has != had {
		if has {
			b.room++
		} else {
			b.room--
		}
	}
}

// forget frees removed, drained worker i's index for the next AddWorker,
// in the strategy and in the engine together, so both hand out the same
// index next. Membership then costs what the live workers cost, however
// many were ever added. A strategy that cannot reuse indices (not a
// strategies.Forgetter) keeps them all, as before.
func (b *balancer) forget(i int) {
	s := &b.w[i]
	if s.forgotten {
		return
	}
	f, ok := b.strat.(strategies.Forgetter)
	if !ok || f.Forget(i) != nil {
		return
	}
	if b.ws.forget(i) != nil {
		return // cannot happen: the engine's worker i is removed too
	}
	s.forgotten = true
}

// longFlag returns worker i's long flag, made when its runner is: by New
// and, for an added worker, on the balancer goroutine.
func (b *balancer) longFlag(i int) *cacheline.Padded[atomic.Bool] {
	for len(b.long) <= i {
		b.long = append(b.long, nil)
	}
	f := new(cacheline.Padded[atomic.Bool])
	b.long[i] = f
	return f
}

// complete counts n requests of worker i as done.
func (b *balancer) complete(i, n int) {
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
	if s.removed && s.pending == 0 {
		b.forget(i)
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
func (d *Dispatcher) replyErrB(r *request, err error) {
	r.took = 0 // never ran: no wait to record when it is reused
	if r.async {
		d.b.spares.recycle(r)
		return
	}
	r.answer(err)
}
