package dispatcher

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/gobalancer/balancer/pool"
	"github.com/gobalancer/balancer/worker"
)

// channels is the channel engine: Pike's topology. Submitters send on one
// shared request channel; the balancer receives requests and completions
// in one select, sends each request on the picked worker's buffered
// channel, and every worker sends its index on the shared completion
// channel once per finished request.
//
// Deadlock-free at any buffers by one rule: the balancer sends only to a
// worker with room (fewer than depth pending), so the send never waits
// for a worker that waits on the completion channel; while the picked
// worker is full the request case is nil and the balancer only serves
// completions (and control) until the worker has room.
type channels[R any] struct {
	d *Dispatcher[R]
	workerSet[*worker.Chan[*request[R]]]

	reqs  chan *request[R] // the shared request channel (WithIntakeBuffer)
	done  chan worker.Done // the completion channel (WithCompletionBuffer)
	kicks chan struct{}    // capacity 1: a lifecycle change or control call to look at

	// closeMu makes Close's "no request accepted after this" exact: a
	// submitter holds it for reading from its closed check to the end of
	// its send; Close takes it for writing once, after closing closing.
	// Alone on its cache lines: every submit writes its reader count, and
	// beside the channels the balancer reads on every turn that write cost
	// a fifth of a batch's CPU time.
	_       [64]byte
	closeMu sync.RWMutex
	_       [64]byte
	closing chan struct{} // closed by Close: blocked submitters return ErrClosed

	// schedCap bounds what the balancer takes into a schedule: the intake
	// buffer (so at most twice it wait, the channel's and the
	// schedule's); with a zero buffer, only what a worker can take now.
	schedCap int

	line    line         // submitters waiting for room in a buffered request channel
	gate    tryGate      // TrySubmit at a zero intake buffer
	dirty   []int        // workers with requests put and not yet published
	marked  []bool       // by worker index: in dirty
	goReqs  sync.Pool    // finished Go requests, reused by the next Go
	blocked atomic.Int64 // submitters waiting for room (Stats.Blocked)
}

func newChannels[R any](d *Dispatcher[R], n, depth, intake, completion int) *channels[R] {
	e := &channels[R]{
		d:        d,
		reqs:     make(chan *request[R], intake),
		done:     make(chan worker.Done, completion),
		kicks:    make(chan struct{}, 1),
		closing:  make(chan struct{}),
		schedCap: intake,
	}
	e.goReqs.New = func() any { return &request[R]{async: true} }
	e.gate.init(true) // every worker is empty, and some weight is positive
	cfg := d.workerConfig(depth)
	cfg.Quiet = quiet[R]
	e.pool = pool.New(n, func(i int, spawn func(func())) *worker.Chan[*request[R]] {
		c := cfg
		c.Spawn = spawn
		c.Run, c.Stop = d.runner(i) // its own sample counter and index
		return worker.NewChan(c, i, e.done)
	})
	return e
}

// send puts r in worker i's next run; publish sends the run.
func (e *channels[R]) send(i int, r *request[R]) {
	e.pool.Worker(i).Put(r)
	for len(e.marked) <= i {
		e.marked = append(e.marked, false)
	}
	if !e.marked[i] {
		e.marked[i] = true
		e.dirty = append(e.dirty, i)
	}
}

// publish sends every worker the run of requests its turn put there: one
// message per worker per turn, not per request. Called before the
// balancer waits for anything, so nothing put is left unsent.
func (e *channels[R]) publish() {
	for _, i := range e.dirty {
		e.pool.Worker(i).Publish()
		e.marked[i] = false
	}
	e.dirty = e.dirty[:0]
}

// setLimit: the balancer's count alone keeps a worker under its limit.
func (e *channels[R]) setLimit(int, int) {}

// accepting reports whether the balancer takes a request now: one a
// worker can take, or, under a schedule, one the schedule has room for.
func (e *channels[R]) accepting() bool {
	b := &e.d.b
	switch {
	case b.sched == nil:
		return b.canTake()
	case e.schedCap == 0:
		// Pike's rendezvous: accepted only when a worker has room for it
		// beside those already taken. O(workers), as on rings.
		return b.sched.len() < b.freeSlots()
	}
	return b.sched.len() < e.schedCap
}
func (e *channels[R]) takeBack(i int) (*request[R], bool) {
	return e.pool.Worker(i).TryTake()
}

func (e *channels[R]) recycle(r *request[R]) {
	r.ctx, r.fn = nil, nil
	e.goReqs.Put(r)
}

// takeIntake drains the request channel. The intake is fenced (abandon
// follows Close), so nothing arrives after it is empty.
func (e *channels[R]) takeIntake() []*request[R] {
	var q []*request[R]
	for {
		select {
		case r := <-e.reqs:
			q = append(q, r)
		default:
			return q
		}
	}
}

// enqueue sends r on the request channel, waiting for room if block.
// Once it returns nil, r will be answered exactly once.
func (e *channels[R]) enqueue(ctx context.Context, r *request[R], block bool) error {
	e.closeMu.RLock()
	defer e.closeMu.RUnlock()
	if e.d.life.Load() != lifeOpen {
		return ErrClosed
	}
	// Try without waiting first: a non-blocking send costs no select over
	// three channels, and it is the common case when the intake has room.
	select {
	case e.reqs <- r:
		return nil
	default:
		if !block {
			if cap(e.reqs) == 0 {
				return e.try(r)
			}
			return ErrBusy
		}
	}
	// Full: yield a few times before blocking. A sender blocked on the
	// channel makes the balancer's every receive also ready the sender (a
	// wake-up per request on the balancer, the engine's bottleneck, when
	// one submitter outruns it); a sender that yields lets the balancer
	// take a run of requests at the cost of a receive each.
	for k := 0; k < spinTurns && e.blocked.Load() == 0; k++ {
		runtime.Gosched()
		select {
		case e.reqs <- r:
			return nil
		default:
		}
	}
	if cap(e.reqs) > 0 {
		return e.wait(ctx, r)
	}
	// Pike's unbuffered channel: the send is the rendezvous. Safe to
	// block: the balancer receives whenever it can place a request, ctx's
	// end returns the request to the caller unsent, and Close closes
	// closing before it waits for the fence. It waits however long room
	// takes, whoever calls it (see Dispatcher on nested submits).
	e.blocked.Add(1)
	defer e.blocked.Add(-1)
	select {
	case e.reqs <- r:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-e.closing:
		return ErrClosed
	}
}

// enqueueGo takes a recycled request from the pool and gives it back
// unless it is accepted.
func (e *channels[R]) enqueueGo(ctx context.Context, m meta, fn Task[R]) error {
	r := e.goReqs.Get().(*request[R])
	r.ctx, r.fn, r.meta = ctx, fn, m
	err := e.enqueue(ctx, r, true)
	if err != nil {
		e.recycle(r)
	}
	return err
}

func (e *channels[R]) recycleAsync(r *request[R]) { e.goReqs.Put(r) }

// intakeStats: the schedule is the balancer's own, read on the balancer
// goroutine (snapshot).
func (e *channels[R]) intakeStats() (queued, blocked int) {
	queued = len(e.reqs)
	if s := e.d.b.sched; s != nil {
		queued += s.len()
	}
	return queued, int(e.blocked.Load())
}

// fence stops intake for Close: blocked submitters leave with ErrClosed,
// those between their check and their send finish, and every later submit
// sees the lifecycle past open.
func (e *channels[R]) fence() {
	close(e.closing)
	e.closeLine()
	e.closeMu.Lock()
	e.d.advance(lifeDraining)
	e.closeMu.Unlock()
}

// kick tells the balancer to look at the lifecycle or ctl. Never blocks.
func (e *channels[R]) kick() {
	select {
	case e.kicks <- struct{}{}:
	default: // a kick is pending already
	}
}

// loop is the channel engine's balancer goroutine: Pike's
// select over the request and completion channels, with control calls and
// lifecycle kicks beside them. Before it waits in that select it takes what
// is ready without waiting, and yields its P for a few empty turns: a
// balancer that is runnable, not parked, costs the workers nothing when
// they report (their completion sends land in the buffer), where one that
// parks at every completion pays a wake-up per request.
func (e *channels[R]) loop() {
	d := e.d
	b := &d.b
	idle := 0 // turns in a row that took nothing
	for {
		if d.ctlWaiting.Load() > 0 {
			d.serveControl()
		}
		d.observe()
		if d.admission {
			b.publishAdmission(&d.adm)
		}
		// Past open the intake is fenced: what is buffered is all there is.
		if b.seen >= lifeDraining && len(e.reqs) == 0 && b.drained() {
			break
		}
		if cap(e.reqs) == 0 {
			e.gate.set(e.accepting() && b.seen == lifeOpen)
		}
		if e.poll() {
			idle = 0
			continue
		}
		// A yield queues the balancer behind every runnable goroutine;
		// with submitters in line that is thousands of them, where a park
		// is ended by the next send's wake-up at once.
		if idle < spinTurns && e.line.waiting.Load() == 0 {
			idle++
			runtime.Gosched()
			continue
		}
		idle = 0
		reqs := e.reqs
		if !e.accepting() {
			reqs = nil // the picked worker is full: serve completions only
		}
		e.publish() // what a control call or the last receive dispatched
		if cap(e.reqs) > 0 {
			e.offerIdle()
		}
		select {
		case r := <-reqs:
			e.took(r)
			e.offer()
		case c := <-e.done:
			e.completed(c)
		case f := <-d.ctl:
			d.ctlWaiting.Add(-1)
			f()
		case <-e.kicks:
		}
	}
	d.stop()
}

// pollBatch bounds how many messages of one kind a turn takes without
// waiting, so control calls and the lifecycle are looked at between.
const pollBatch = 256

// poll takes the completions and then the requests that are ready, without
// waiting, and reports whether it took any.
func (e *channels[R]) poll() bool {
	d, b := e.d, &e.d.b
	took := false
	for range pollBatch {
		select {
		case c := <-e.done:
			e.completed(c)
			took = true
			continue
		default:
		}
		break
	}
	for k := 0; k < pollBatch && e.accepting(); k++ {
		select {
		case r := <-e.reqs:
			e.took(r)
			took = true
			continue
		default:
		}
		break
	}
	e.offer()
	if b.sched != nil {
		for r := b.next(); r != nil; r = b.next() {
			d.dispatch(r)
			took = true
		}
	}
	e.publish()
	return took
}

// took dispatches r, or puts it in the schedule.
func (e *channels[R]) took(r *request[R]) {
	if b := &e.d.b; b.sched != nil {
		b.take(r)
		return
	}
	e.d.dispatch(r)
}

// completed counts one completion message: c.N requests of worker c.Worker.
func (e *channels[R]) completed(c worker.Done) {
	b := &e.d.b
	b.account(c.Worker, c.N)
	b.complete(c.Worker, c.N)
}

// quiet: nobody waits for a Go request's answer, so its worker may report
// its completion with others' (worker.Chan). Every other request is
// reported before it is answered, so Stats read after an answer counts it.
func quiet[R any](r *request[R]) bool { return r.async }

// reap takes every completion message already sent, so a snapshot read
// after an answer counts its request (workers report before answering).
func (e *channels[R]) reap() {
	for {
		select {
		case c := <-e.done:
			e.completed(c)
		default:
			return
		}
	}
}
