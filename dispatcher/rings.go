package dispatcher

import (
	"runtime"

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

// rings is the rings engine's links: the locked intake slice (Dispatcher.in)
// swapped out whole, a single-producer ring per worker published once per
// turn, per-worker atomic completion counters, and Go requests handed back
// through per-worker return rings. Balancer goroutine only.
type rings[R any] struct {
	d *Dispatcher[R]
	workerSet[*worker.Worker[*request[R]]]
	w []ringSlot[R]

	// backlog is the last intake swapped out; next is the first request of
	// it not yet dispatched.
	backlog []*request[R]
	next    int

	// dirty lists the workers given requests not yet published to them:
	// a turn publishes each worker's ring once, not once per request.
	dirty []int

	// free holds finished Go requests collected from the workers' return
	// rings, passed to the intake's spare list at the next intake lock.
	free    []*request[R]
	freeCap int // most Go requests kept for reuse
}

type ringSlot[R any] struct {
	doneSeen uint64      // the worker's Done() when last reaped
	dirty    bool        // in rings.dirty
	ret      *retRing[R] // the worker's finished Go requests
}

func newRings[R any](d *Dispatcher[R], n, depth int) *rings[R] {
	e := &rings[R]{d: d, freeCap: max(1024, 2*depth*n)}
	cfg := d.workerConfig(depth)
	cfg.Completed = d.workerDone
	e.pool = pool.New(n, func(i int, spawn func(func())) *worker.Worker[*request[R]] {
		c := cfg
		c.Spawn = spawn
		c.Run, c.Stop = d.runner(i) // its own sample counter and index
		e.w = append(e.w, ringSlot[R]{ret: newRetRing[R](depth)})
		return worker.New(c)
	})
	return e
}

// send never blocks: the worker's ring holds depth items and at most depth
// are counted against it. The request reaches the worker at the turn's
// publish.
func (e *rings[R]) send(i int, r *request[R]) {
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
func (e *rings[R]) takeBack(i int) (*request[R], bool) {
	e.publish()
	return e.pool.Worker(i).TryTake()
}

func (e *rings[R]) takeIntake() []*request[R] {
	q := e.backlog[e.next:]
	e.backlog, e.next = nil, 0
	in := &e.d.in
	in.mu.Lock()
	q = append(q, in.q...)
	in.q = nil
	in.mu.Unlock()
	return q
}

// publish makes the requests sent this turn visible to their workers.
func (e *rings[R]) publish() {
	for _, i := range e.dirty {
		e.w[i].dirty = false
		e.pool.Worker(i).Publish()
	}
	e.dirty = e.dirty[:0]
}

// balanceRings is the rings engine's balancer goroutine. Each turn it reads
// completions, dispatches what it holds, then swaps out the intake under
// one lock; it parks only when a turn did nothing.
func (d *Dispatcher[R]) balanceRings() {
	b, e := &d.b, d.rings
	idle := 0 // turns in a row that did nothing
	for {
		if d.ctlWaiting.Load() > 0 {
			d.serveControl()
		}
		d.observe()
		progress := e.reap()
		progress = e.drain() || progress
		e.publish()

		in := &d.in
		in.mu.Lock()
		in.n -= b.sent
		b.sent = 0
		took := false
		if e.next == len(e.backlog) && len(in.q) > 0 {
			clear(e.backlog)
			e.backlog, in.q, e.next = in.q, e.backlog[:0], 0
			took = true
		}
		if len(e.free) > 0 {
			e.giveSpare()
		}
		if in.cap == 0 {
			in.free = b.freeSlots()
		}
		// Hysteresis: wake blocked submitters once half the buffer is free,
		// not at every free slot, so a submitter that outruns the workers
		// parks once per half buffer instead of once per request. park
		// wakes them whenever there is room at all, so none waits for a
		// balancer that has nothing left to free.
		if len(in.waitq) > 0 && in.admits() && in.n <= in.cap/2 {
			in.offer()
		}
		// The intake is fenced once the lifecycle leaves open (under mu).
		exit := b.seen >= lifeDraining && len(in.q) == 0 && e.next == len(e.backlog) && b.drained()
		in.mu.Unlock()
		if exit {
			break
		}
		if took || progress {
			idle = 0
			continue
		}
		if idle < spinTurns {
			idle++
			runtime.Gosched()
			continue
		}
		idle = 0
		e.park()
	}
	d.stop(func() { e.reap() })
}

// park blocks until something may have changed. It is the consumer half of
// the wake protocol: publish the parked state, then look again, so a
// producer either sees the state (and sends a token) or is seen here.
func (e *rings[R]) park() {
	d := e.d
	b := &d.b
	in := &d.in
	in.mu.Lock()
	if len(in.waitq) > 0 && in.admits() {
		in.offer()
	}
	needComp := b.held != nil || e.next < len(e.backlog) || b.room == 0 ||
		len(in.waitq) > 0 || in.offered > 0 || (b.seen >= lifeDraining && b.total > 0)
	state := parkedIdle
	if needComp {
		state = parkedNeedComp
	}
	d.state.Store(state)
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
		if !d.state.CompareAndSwap(state, running) {
			<-d.wake // a producer cleared the state: take its token
		}
		return
	}
	select {
	case <-d.wake:
	case f := <-d.ctl:
		d.ctlWaiting.Add(-1)
		if !d.state.CompareAndSwap(state, running) {
			<-d.wake
		}
		f()
	}
}

// completions reports whether any worker finished something not reaped.
func (e *rings[R]) completions() bool {
	b := &e.d.b
	for i := range b.w {
		if b.w[i].pending > 0 && e.pool.Worker(i).Done() != e.w[i].doneSeen {
			return true
		}
	}
	return false
}

// reap reads every worker's completion counter and reports what changed.
func (e *rings[R]) reap() bool {
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
		e.free = s.ret.collect(e.free)
		b.account(i, n)
		b.complete(i, n)
		any = true
	}
	return any
}

// drain dispatches the backlog while requests can go somewhere.
func (e *rings[R]) drain() bool {
	d, b := e.d, &e.d.b
	start := e.next
	for e.next < len(e.backlog) && b.canTake() {
		r := e.backlog[e.next]
		e.backlog[e.next] = nil
		e.next++
		d.dispatch(r)
	}
	return e.next != start
}

// workerDone runs on a worker after each finished task, with the tasks
// still queued at it. The balancer is woken only when it waits for a
// completion (a full worker, waiting submitters, a drain), and then only
// once the worker's queue is at most half full: one wake-up per half queue
// instead of one per task while every worker is saturated, and the worker
// still has half a queue to run while the balancer gets a core. The worker
// reaches that point without help, so no wake-up is lost.
func (d *Dispatcher[R]) workerDone(queued int) {
	if d.state.Load() == parkedNeedComp && queued <= d.b.base/2 &&
		d.state.CompareAndSwap(parkedNeedComp, running) {
		d.wake <- struct{}{}
	}
}

// wakeBalancer wakes the balancer if it is parked. Never blocks: only the
// caller whose CompareAndSwap leaves a parked state sends, and the balancer
// takes exactly one token per such change. The channel engine's balancer
// waits in its select, where a lifecycle change arrives as a kick.
func (d *Dispatcher[R]) wakeBalancer() {
	if d.chans != nil {
		d.chans.wake()
		return
	}
	if s := d.state.Load(); s != running && d.state.CompareAndSwap(s, running) {
		d.wake <- struct{}{}
	}
}
