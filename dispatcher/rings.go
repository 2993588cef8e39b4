package dispatcher

import (
	"sync/atomic"

	"github.com/gobalancer/balancer/internal/cacheline"
	"github.com/gobalancer/balancer/pool"
	"github.com/gobalancer/balancer/worker"
)

// Balancer states of the rings engine: running, or parked waiting for
// intake, control or Close only (idle), or also for a completion
// (needComp): only then do workers pay a wake-up after a task.
const (
	running int32 = iota
	parkedIdle
	parkedNeedComp
)

// rings is the rings engine: the locked intake slice (in) swapped out
// whole, a single-producer ring per worker published once per turn,
// per-worker atomic completion counters, and Go requests handed back
// through per-worker return rings. Channels only wake a goroutine that
// parked with nothing to do. The fields from d to w are read by every
// goroutine and written only by New; in, state and wake are the shared
// hand-off; the rest belongs to the balancer goroutine.
type rings struct {
	d *Dispatcher
	workerSet[*worker.Worker[*request]]
	wake chan struct{} // capacity 1: the balancer's wake-up token
	base int           // the limit a worker starts at (setLimit)

	// Submitters, workers and the balancer write these per request: keep
	// them off the line above.
	_  cacheline.Pad
	in intake
	// The balancer parks only when it has nothing to do, and whoever
	// clears state from a parked value sends the one token on wake.
	state atomic.Int32
	_     cacheline.Pad
	w     []ringSlot

	// backlog is the last intake swapped out; next is the first request of
	// it not yet dispatched.
	backlog []*request
	next    int

	// dirty lists the workers given requests not yet published to them:
	// a turn publishes each worker's ring once, not once per request.
	dirty []int

	spares // finished Go requests on their way back to submitters
}

type ringSlot struct {
	doneSeen uint64   // the worker's Done() when last reaped
	dirty    bool     // in rings.dirty
	ret      *retRing // the worker's finished Go requests
	// wakeAt is half the worker's limit: the queue length at or below
	// which its completions wake a balancer waiting for one.
	wakeAt *cacheline.Padded[atomic.Int32]
}

func newRings(d *Dispatcher, n, depth, base, intake int) *rings {
	e := &rings{d: d, spares: newSpares(n, depth), wake: make(chan struct{}, 1), base: base}
	e.in.cap = intake
	d.b.laneIn = &e.in
	if intake == 0 {
		// Every worker is empty until the balancer says otherwise. Only a
		// zero buffer admits by free slots: the balancer never updates
		// free for a positive one, which must bound admission alone.
		e.in.free = n * base
	}
	cfg := d.workerConfig(depth)
	e.pool = pool.New(n, func(i int, spawn func(func())) *worker.Worker[*request] {
		c := cfg
		c.Spawn = spawn
		c.Run, c.Stop = d.runner(i)               // its own sample counter and index
		at := new(cacheline.Padded[atomic.Int32]) // read per task by this worker only
		at.V.Store(int32(base / 2))
		c.Completed = func(queued int) { e.workerDone(&at.V, queued) }
		rs := ringSlot{ret: newRetRing(depth), wakeAt: at}
		if i < len(e.w) {
			e.w[i] = rs // a forgotten index, reused: a new worker, counted from 0
		} else {
			e.w = append(e.w, rs)
		}
		return worker.New(c)
	})
	return e
}

// send never blocks: the worker's ring holds depth items and at most depth
// are counted against it. The request reaches the worker at the turn's
// publish.
func (e *rings) send(i int, r *request) {
	s := &e.w[i]
	r.ret = s.ret
	e.pool.Worker(i).Put(r)
	if !s.dirty {
		s.dirty = true
		e.dirty = append(e.dirty, i)
	}
}

// takeBack publishes what this turn sent first: a request sent but not yet
// published is invisible to TryTake, and would reach its worker after the
// abandon (a held request re-picked in the same turn, say).
func (e *rings) takeBack(i int) (*request, bool) {
	e.publish()
	return e.pool.Worker(i).TryTake()
}

func (e *rings) takeIntake() []*request {
	q := e.backlog[e.next:]
	e.backlog, e.next = nil, 0
	in := &e.in
	in.mu.Lock()
	q = append(q, in.q...)
	in.q = nil
	in.mu.Unlock()
	return q
}

// publish makes the requests sent this turn visible to their workers.
func (e *rings) publish() {
	for _, i := range e.dirty {
		e.w[i].dirty = false
		e.pool.Worker(i).Publish()
	}
	e.dirty = e.dirty[:0]
}

// turn reads completions, dispatches what it holds, then swaps out the
// intake under one lock, where it also settles the line of submitters.
func (e *rings) turn() bool {
	b := &e.d.b
	progress := e.reaped()
	progress = e.drain() || progress
	e.publish()

	in := &e.in
	in.mu.Lock()
	in.account(b.left())
	if e.next == len(e.backlog) && len(in.q) > 0 {
		clear(e.backlog)
		e.backlog, in.q, e.next = in.q, e.backlog[:0], 0
		progress = true
	}
	e.give(in)
	if in.cap == 0 {
		in.free = b.freeSlots()
	}
	// Hysteresis (offerDue); park wakes the line whenever there is
	// room at all, so none waits for a balancer that has nothing left
	// to free.
	if in.offerDue() {
		in.offer()
	}
	in.offerLanes(false)
	in.mu.Unlock()
	return progress
}

// intakeEmpty reports whether nothing accepted waits in the intake or the
// backlog. The lifecycle is past open: the intake is fenced.
func (e *rings) intakeEmpty() bool {
	if e.next < len(e.backlog) {
		return false
	}
	e.in.mu.Lock()
	defer e.in.mu.Unlock()
	return len(e.in.q) == 0
}

// park blocks until something may have changed. It is the consumer half of
// the wake protocol: publish the parked state, then look again, so a
// producer either sees the state (and sends a token) or is seen here.
func (e *rings) park() {
	d := e.d
	b := &d.b
	in := &e.in
	in.mu.Lock()
	if in.waitq.n > 0 && in.admits() {
		in.offer()
	}
	in.offerLanes(true)
	needComp := b.held != nil || e.next < len(e.backlog) || b.room == 0 ||
		b.sched.len() > 0 ||
		in.waitq.n > 0 || in.offered > 0 || (b.seen >= lifeDraining && b.total > 0)
	state := parkedIdle
	if needComp {
		state = parkedNeedComp
	}
	e.state.Store(state)
	// New intake is work only once the backlog is gone: until then the
	// balancer would not take it, and waking for it would spin.
	work := len(in.q) > 0 && e.next == len(e.backlog)
	in.mu.Unlock()
	if !work && needComp {
		work = e.completions()
	}
	if !work {
		work = d.life.Load() != b.seen
	}
	if work {
		if !e.state.CompareAndSwap(state, running) {
			<-e.wake // a producer cleared the state: take its token
		}
		return
	}
	select {
	case <-e.wake:
	case f := <-d.ctl:
		d.ctlWaiting.Add(-1)
		if !e.state.CompareAndSwap(state, running) {
			<-e.wake
		}
		f()
	}
}

// completions reports whether any worker finished something not reaped.
func (e *rings) completions() bool {
	b := &e.d.b
	for i := range b.w {
		if b.w[i].pending > 0 && e.pool.Worker(i).Done() != e.w[i].doneSeen {
			return true
		}
	}
	return false
}

// reap reads every worker's completion counter.
func (e *rings) reap() { e.reaped() }

// reaped reads every worker's completion counter and reports what changed.
func (e *rings) reaped() bool {
	b := &e.d.b
	any := false
	for i := range b.w {
		if b.w[i].pending == 0 {
			continue
		}
		s := &e.w[i]
		done := e.pool.Worker(i).Done()
		if done == s.doneSeen {
			continue
		}
		n := int(done - s.doneSeen)
		s.doneSeen = done
		e.collect(s.ret)
		b.account(i, n)
		b.complete(i, n)
		any = true
	}
	return any
}

// drain moves the whole backlog into the schedule, so the schedule
// chooses among everything taken, then dispatches while requests can go
// somewhere.
func (e *rings) drain() bool {
	d, b := e.d, &e.d.b
	took := e.next < len(e.backlog)
	for ; e.next < len(e.backlog); e.next++ {
		b.take(e.backlog[e.next])
		e.backlog[e.next] = nil
	}
	for r := b.next(); r != nil; r = b.next() {
		d.dispatch(r)
		took = true
	}
	return took
}

// workerDone runs on a worker after each finished task, with the tasks
// still queued at it. The balancer is woken only when it waits for a
// completion (a full worker, waiting submitters, a drain), and then only
// once the worker's queue is at most half full: one wake-up per half queue
// instead of one per task while every worker is saturated, and the worker
// still has half a queue to run while the balancer gets a core. The worker
// reaches that point without help, so no wake-up is lost.
func (e *rings) workerDone(wakeAt *atomic.Int32, queued int) {
	if e.state.Load() == parkedNeedComp && queued <= int(wakeAt.Load()) &&
		e.state.CompareAndSwap(parkedNeedComp, running) {
		e.wake <- struct{}{}
	}
}

// kick wakes the balancer if it is parked. Never blocks: only the caller
// whose CompareAndSwap leaves a parked state sends, and the balancer takes
// exactly one token per such change.
func (e *rings) kick() {
	if s := e.state.Load(); s != running && e.state.CompareAndSwap(s, running) {
		e.wake <- struct{}{}
	}
}

// setLimit moves worker i's wake-up point with its limit, but never above
// half the base limit: a queue deepened for short tasks still wakes the
// balancer at a quarter of 64, not at half of 256, which cost a batch of
// empty tasks a quarter more CPU in wake-ups.
func (e *rings) setLimit(i, limit int) {
	e.w[i].wakeAt.V.Store(int32(min(limit, e.base) / 2))
}
