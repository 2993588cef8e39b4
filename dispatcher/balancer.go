package dispatcher

import (
	"fmt"
	"runtime"
	"time"

	"github.com/gobalancer/balancer/pool"
	"github.com/gobalancer/balancer/strategies"
)

// spinTurns is how many empty turns the balancer yields its P for before it
// parks. A closed loop of requesters submits again within microseconds;
// yielding (runtime.Gosched, not a busy wait: whoever is runnable runs)
// lets them do so without the balancer paying a park and a wake-up per
// request. Closed-loop Do with empty tasks: 850 -> 537 CPU ns per request
// (0, 1, 3 turns: 850, 587, 537), batches and fairness unchanged.
const spinTurns = 3

// balancer is the state the balancer goroutine owns: no locks guard it.
type balancer[R any] struct {
	strat strategies.Strategy
	dyn   strategies.Dynamic   // nil when strat cannot change membership
	batch strategies.BatchDone // nil when strat takes completions one by one
	pool  *pool.Pool[*request[R]]
	depth int // most requests counted against one worker

	w     []slot[R]
	room  int // live workers with a positive weight and room for one more
	live  int // live workers
	total int // requests pending over all workers

	// backlog is the last intake swapped out; next is the first request of
	// it not yet dispatched. sent counts requests that left the accepted
	// state (sent or answered) since the intake last heard of it.
	backlog []*request[R]
	next    int
	sent    int

	held  *request[R] // picked for a full worker, sent when it has room
	heldW int

	// dirty lists the workers given requests not yet published to them:
	// a turn publishes each worker's ring once, not once per request.
	dirty []int

	closing, abandonDone bool

	// free holds finished Go requests collected from the workers' return
	// rings, passed to the intake's spare list at the next intake lock.
	free    []*request[R]
	freeCap int // most Go requests kept for reuse

	dispatched, completed, stalls int64
	pend                          pendingStats
}

type slot[R any] struct {
	weight     int
	pending    int
	maxPending int
	completed  int64
	busy       int64 // nanoseconds
	removed    bool

	doneSeen uint64        // the worker's Done() when last reaped
	busySeen time.Duration // its Busy() then
	per      time.Duration // the last mean duration per task, for Done
	dirty    bool          // in balancer.dirty
	ret      *retRing[R]   // the worker's finished Go requests
}

func (b *balancer[R]) init(s strategies.Strategy, p *pool.Pool[*request[R]], depth int, weights []int) {
	b.strat, b.pool, b.depth = s, p, depth
	b.dyn, _ = s.(strategies.Dynamic)
	b.batch, _ = s.(strategies.BatchDone)
	b.freeCap = max(1024, 2*depth*len(weights))
	b.w = make([]slot[R], len(weights))
	for i, w := range weights {
		b.w[i].weight = w
		b.w[i].ret = newRetRing[R](depth)
		b.live++
		if w > 0 {
			b.room++
		}
	}
}

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
			free += b.depth - b.w[i].pending
		}
	}
	return free
}

func (b *balancer[R]) hasRoom(i int) bool {
	s := &b.w[i]
	return !s.removed && s.weight > 0 && s.pending < b.depth
}

// balance is the balancer goroutine. Each turn it reads completions,
// dispatches what it holds, then swaps out the intake under one lock; it
// parks only when a turn did nothing.
func (d *Dispatcher[R]) balance() {
	b := &d.b
	idle := 0 // turns in a row that did nothing
	for {
		if d.ctlWaiting.Load() > 0 {
			select {
			case f := <-d.ctl:
				d.ctlWaiting.Add(-1)
				f()
			default: // the caller has not reached its send yet: next turn
			}
		}
		if !b.closing && d.closing.Load() {
			b.closing = true
		}
		if !b.abandonDone && d.abandoned.Load() {
			b.abandonDone = true
			d.abandonQueued()
		}
		progress := d.reap()
		progress = d.drain() || progress
		d.publish()

		in := &d.in
		in.mu.Lock()
		in.n -= b.sent
		b.sent = 0
		took := false
		if b.next == len(b.backlog) && len(in.q) > 0 {
			clear(b.backlog)
			b.backlog, in.q, b.next = in.q, b.backlog[:0], 0
			took = true
		}
		if len(b.free) > 0 {
			d.giveSpare()
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
		exit := b.closing && in.closed && len(in.q) == 0 && b.next == len(b.backlog) &&
			b.held == nil && b.total == 0
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
		d.park()
	}
	b.pool.Stop()
	b.pool.Wait()
	d.reap()
	s := d.snapshot()
	d.final.Store(&s)
	close(d.stopped)
}

// park blocks until something may have changed. It is the consumer half of
// the wake protocol: publish the parked state, then look again, so a
// producer either sees the state (and sends a token) or is seen here.
func (d *Dispatcher[R]) park() {
	b := &d.b
	in := &d.in
	in.mu.Lock()
	if len(in.waitq) > 0 && in.admits() {
		in.offer()
	}
	needComp := b.held != nil || b.next < len(b.backlog) || b.room == 0 ||
		len(in.waitq) > 0 || in.offered > 0 || (b.closing && b.total > 0)
	state := parkedIdle
	if needComp {
		state = parkedNeedComp
	}
	d.state.Store(state)
	// New intake is work only once the backlog is gone: until then the
	// balancer would not take it, and waking for it would spin.
	work := len(in.q) > 0 && b.next == len(b.backlog)
	in.mu.Unlock()
	if !work && needComp {
		work = d.completions()
	}
	if !work {
		work = (!b.closing && d.closing.Load()) || (!b.abandonDone && d.abandoned.Load())
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
func (d *Dispatcher[R]) completions() bool {
	b := &d.b
	for i := range b.w {
		if b.w[i].pending > 0 && b.pool.Worker(i).Done() != b.w[i].doneSeen {
			return true
		}
	}
	return false
}

// reap reads every worker's completion counter and reports what changed.
func (d *Dispatcher[R]) reap() bool {
	b := &d.b
	any := false
	for i := range b.w {
		s := &b.w[i]
		if s.pending == 0 {
			continue
		}
		w := b.pool.Worker(i)
		done := w.Done()
		if done == s.doneSeen {
			continue
		}
		n := int(done - s.doneSeen)
		s.doneSeen = done
		b.free = s.ret.collect(b.free)
		// Busy time is published per run of tasks, not per task (the clock
		// was a sixth of the CPU of empty tasks): bill the change to the
		// tasks reaped with it, or the last mean if it has not moved.
		if busy := w.Busy(); busy != s.busySeen {
			s.per = (busy - s.busySeen) / time.Duration(n)
			s.busy += int64(busy - s.busySeen)
			s.busySeen = busy
		}
		d.complete(i, n)
		any = true
	}
	return any
}

// drain dispatches the backlog while requests can go somewhere.
func (d *Dispatcher[R]) drain() bool {
	b := &d.b
	start := b.next
	for b.next < len(b.backlog) && b.held == nil && b.room > 0 {
		r := b.backlog[b.next]
		b.backlog[b.next] = nil
		b.next++
		d.dispatch(r)
	}
	return b.next != start
}

// dispatch picks a worker for r and sends r to it, or holds r until the
// picked worker has room: the pick is honoured, never re-routed.
func (d *Dispatcher[R]) dispatch(r *request[R]) {
	b := &d.b
	if d.abandoned.Load() {
		b.sent++
		d.replyErrB(r, d.abandon)
		return
	}
	i := b.strat.Pick(r.key)
	if !b.pool.Live(i) {
		b.sent++
		d.replyErrB(r, fmt.Errorf("%w: %d", ErrBadPick, i))
		return
	}
	if b.w[i].pending >= b.depth {
		b.held, b.heldW = r, i
		b.stalls++
		return
	}
	d.send(i, r)
}

// send never blocks: the worker's ring holds depth items and at most depth
// are counted against it. The request reaches the worker at the turn's
// publish.
func (d *Dispatcher[R]) send(i int, r *request[R]) {
	b := &d.b
	s := &b.w[i]
	r.ret = s.ret
	b.pool.Worker(i).Put(r)
	if !s.dirty {
		s.dirty = true
		b.dirty = append(b.dirty, i)
	}
	b.sent++
	b.pend.add(s.pending, 1)
	s.pending++
	b.total++
	b.dispatched++
	if s.pending > s.maxPending {
		s.maxPending = s.pending
	}
	if s.pending == b.depth && s.weight > 0 && !s.removed {
		b.room--
	}
	b.pend.sample(b.live)
}

// recycle keeps an async request the balancer answered itself.
func (b *balancer[R]) recycle(r *request[R]) {
	r.ctx, r.fn = nil, nil
	b.free = append(b.free, r)
}

// giveSpare passes the collected Go requests to submitters, keeping at
// most freeCap. Called with the intake's mu held.
func (d *Dispatcher[R]) giveSpare() {
	b, in := &d.b, &d.in
	if len(in.spare) == 0 && len(b.free) <= b.freeCap {
		in.spare, b.free = b.free, in.spare[:0]
		return
	}
	k := min(len(b.free), b.freeCap-len(in.spare))
	if k > 0 {
		in.spare = append(in.spare, b.free[:k]...)
	}
	clear(b.free)
	b.free = b.free[:0]
}

// publish makes the requests sent this turn visible to their workers.
func (d *Dispatcher[R]) publish() {
	b := &d.b
	for _, i := range b.dirty {
		b.w[i].dirty = false
		b.pool.Worker(i).Publish()
	}
	b.dirty = b.dirty[:0]
}

// complete counts n requests of worker i as done.
func (d *Dispatcher[R]) complete(i, n int) {
	b := &d.b
	s := &b.w[i]
	had := b.hasRoom(i)
	b.pend.add(s.pending, -n)
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
	if b.held != nil && b.heldW == i && s.pending < b.depth {
		r := b.held
		b.held = nil
		d.send(i, r)
	}
}

// abandonQueued answers, without running them, the requests Close gave up
// on: the held one, those queued at workers, the backlog and the intake's.
func (d *Dispatcher[R]) abandonQueued() {
	b := &d.b
	if b.held != nil {
		b.sent++
		d.replyErrB(b.held, d.abandon)
		b.held = nil
	}
	// Requests queued at workers would otherwise wait for (maybe never)
	// the task running ahead of them: take them back and count each as
	// completed, so pending, room and the strategy stay consistent.
	for i := range b.w {
		for b.w[i].pending > 0 {
			r, ok := b.pool.TryTake(i)
			if !ok {
				break
			}
			d.replyErrB(r, d.abandon)
			d.complete(i, 1)
		}
	}
	for ; b.next < len(b.backlog); b.next++ {
		b.sent++
		d.replyErrB(b.backlog[b.next], d.abandon)
		b.backlog[b.next] = nil
	}
	in := &d.in
	in.mu.Lock()
	q := in.q
	in.q = nil
	in.mu.Unlock()
	for _, r := range q {
		b.sent++
		d.replyErrB(r, d.abandon)
	}
}
