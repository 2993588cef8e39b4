package dispatcher

import (
	"sync/atomic"

	"github.com/gobalancer/balancer/internal/cacheline"
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

// rings is the rings engine: the locked intake slice (in) the balancer
// swaps out whole, a single-producer ring per worker published once per
// turn (worker.Worker), per-worker atomic completion counters, and Go
// requests handed back through per-worker return rings. Channels only
// wake a goroutine that parked with nothing to do. The fields from d to
// base are read by every goroutine and written only by New; in, state and
// wake are the shared hand-off; the rest belongs to the balancer
// goroutine.
type rings struct {
	d    *Dispatcher
	p    *port
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
	w     []ringSlot // by worker index

	emptied []*request // the intake last swapped out, emptied: the next one
}

// ringSlot is what the engine keeps of one worker: its completion counter
// as last read, and its wake-up point.
type ringSlot struct {
	worker   *worker.Worker[*request]
	doneSeen uint64 // the worker's Done() when last reaped
	// wakeAt is half the worker's limit: the queue length at or below
	// which its completions wake a balancer waiting for one.
	wakeAt *cacheline.Padded[atomic.Int32]
}

func newRings(d *Dispatcher, n, depth, base, intake int) *rings {
	e := &rings{d: d, p: (*port)(d), wake: make(chan struct{}, 1), base: base}
	e.in.cap = intake
	if intake == 0 {
		// Every worker is empty until the balancer says otherwise. Only a
		// zero buffer admits by free slots: the balancer never updates
		// free for a positive one, which must bound admission alone.
		e.in.free = n * base
	}
	return e
}

// worker makes a ring worker whose completions wake a balancer waiting
// for one (workerDone).
func (e *rings) worker(i int, cfg worker.Config[*request]) member {
	at := new(cacheline.Padded[atomic.Int32]) // read per task by this worker only
	at.V.Store(int32(e.base / 2))
	cfg.Completed = func(queued int) { e.workerDone(&at.V, queued) }
	w := worker.New(cfg)
	rs := ringSlot{worker: w, wakeAt: at}
	if i < len(e.w) {
		e.w[i] = rs // a forgotten index, reused: a new worker, counted from 0
	} else {
		e.w = append(e.w, rs)
	}
	return w
}

// poll reads the completion counters, then swaps out the intake under one
// lock, where it also settles the line of submitters, and takes what it
// swapped out into the schedule.
func (e *rings) poll() bool {
	p := e.p
	took := e.reaped()
	in := &e.in
	in.mu.Lock()
	in.account(p.left())
	q := in.q
	in.q, e.emptied = e.emptied, nil // the last one swapped out, emptied
	p.spares().give(in)
	if in.cap == 0 {
		in.free = p.freeSlots()
	}
	// Hysteresis (offerDue); park wakes the line whenever there is room
	// at all, so none waits for a balancer that has nothing left to free.
	if in.offerDue() {
		in.offer()
	}
	in.offerLanes(false)
	in.mu.Unlock()
	for i, r := range q {
		p.take(r)
		q[i] = nil
	}
	e.emptied = q[:0]
	return took || len(q) > 0
}

// intake reports what waits in the intake, and the line. Balancer only.
func (e *rings) intake() (queued, blocked int) {
	in := &e.in
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.q), in.waitq.n
}

// takeIntake returns what waits in the intake, for the abandon.
func (e *rings) takeIntake() []*request {
	in := &e.in
	in.mu.Lock()
	q := in.q
	in.q = nil
	in.mu.Unlock()
	return q
}

// park blocks until something may have changed. It is the consumer half of
// the wake protocol: publish the parked state, then look again, so a
// producer either sees the state (and sends a token) or is seen here.
func (e *rings) park() {
	d, p := e.d, e.p
	in := &e.in
	in.mu.Lock()
	if in.waitq.n > 0 && in.admits() {
		in.offer()
	}
	in.offerLanes(true)
	needComp := p.awaiting() || in.waitq.n > 0 || in.offered > 0
	state := parkedIdle
	if needComp {
		state = parkedNeedComp
	}
	e.state.Store(state)
	work := len(in.q) > 0
	in.mu.Unlock()
	if !work && needComp {
		work = e.completions()
	}
	if !work {
		work = p.changed()
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
	for i := range e.w {
		if s := &e.w[i]; e.p.busy(i) && s.worker.Done() != s.doneSeen {
			return true
		}
	}
	return false
}

// reaped reads the completion counters of the workers with requests
// pending and reports what changed.
func (e *rings) reaped() bool {
	any := false
	for i := range e.w {
		if !e.p.busy(i) {
			continue
		}
		s := &e.w[i]
		done := s.worker.Done()
		if done == s.doneSeen {
			continue
		}
		n := int(done - s.doneSeen)
		s.doneSeen = done
		e.p.completed(i, n)
		any = true
	}
	return any
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
