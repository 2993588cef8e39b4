package dispatcher

import (
	"sync"
	"sync/atomic"

	"github.com/gobalancer/balancer/internal/cacheline"
	"github.com/gobalancer/balancer/pool"
	"github.com/gobalancer/balancer/worker"
)

// channels is the channel engine: Pike's topology. Submitters send
// requests on a request channel; the balancer receives requests and
// completions in one select, sends each request on the picked worker's
// channel, and every worker sends on the shared completion channel when it
// finishes requests.
//
// With a buffered intake (WithIntakeBuffer(n), n > 0, the default) the
// request channel carries runs: submitters append to a locked slice (in)
// and the first one after the balancer took the last run sends the slice
// as one message, so requests that arrive while a run is on its way join
// the next one (channels_intake.go). With WithIntakeBuffer(0) it is
// Pike's unbuffered channel of single requests, a rendezvous.
//
// Deadlock-free at any buffers by one rule: the balancer sends only to a
// worker with room (fewer than depth pending), so the send never waits
// for a worker that waits on the completion channel; while the picked
// worker is full the request case is nil and the balancer only serves
// completions (and control) until the worker has room.
type channels struct {
	d *Dispatcher
	workerSet[*worker.Chan[*request]]

	reqs  chan *request    // WithIntakeBuffer(0): Pike's unbuffered request channel; nil otherwise
	runs  chan []*request  // a buffer: runs of requests staged in in, one on its way at most; nil otherwise
	done  chan worker.Done // the completion channel (WithCompletionBuffer)
	kicks chan struct{}    // capacity 1: a lifecycle change or control call to look at

	// closeMu makes Close's "no request accepted after this" exact on the
	// unbuffered channel: a submitter holds it for reading from its closed
	// check to the end of its send; Close takes it for writing once, after
	// closing closing. Alone on its cache lines: every such submit writes
	// its reader count.
	_       cacheline.Pad
	closeMu sync.RWMutex
	_       cacheline.Pad
	closing chan struct{} // closed by Close: blocked submitters return ErrClosed

	// The buffered intake, written by submitters per request: the staged
	// run, its count against the buffer and the line of submitters waiting
	// for room. sending and reuse are guarded by in.mu too.
	in      intake
	sending bool       // a run is on runs (or about to be), not yet received
	reuse   []*request // an empty slice for the next staged run, from the balancer
	_       cacheline.Pad

	// The balancer's own: the last run received, of which next is the
	// first request not yet taken.
	backlog []*request
	next    int

	gate    tryGate      // TrySubmit at a zero intake buffer
	dirty   []int        // workers with requests put and not yet published
	marked  []bool       // by worker index: in dirty
	blocked atomic.Int64 // submitters blocked in the unbuffered send (Stats.Blocked)

	// Go requests come back as on rings: each worker hands them back on its
	// return ring (ret, by worker index), the balancer collects a worker's
	// when it hears of its completions and passes them to the intake's
	// spare list under the lock it takes anyway.
	ret []*retRing
	spares
}

func newChannels(d *Dispatcher, n, depth, intake, completion int) *channels {
	e := &channels{
		d:       d,
		done:    make(chan worker.Done, completion),
		kicks:   make(chan struct{}, 1),
		closing: make(chan struct{}),
		spares:  newSpares(n, depth),
	}
	if intake == 0 {
		e.reqs = make(chan *request)
	} else {
		e.runs = make(chan []*request, 1)
		e.in.cap = intake
		d.b.laneIn = &e.in
	}
	e.gate.init(true) // every worker is empty, and some weight is positive
	cfg := d.workerConfig(depth)
	cfg.Quiet = quiet
	e.pool = pool.New(n, func(i int, spawn func(func())) *worker.Chan[*request] {
		c := cfg
		c.Spawn = spawn
		c.Run, c.Stop = d.runner(i) // its own sample counter and index
		for len(e.ret) <= i {
			e.ret = append(e.ret, nil)
		}
		e.ret[i] = newRetRing(depth) // a forgotten index, reused: a new worker's
		return worker.NewChan(c, i, e.done)
	})
	return e
}

// send puts r in worker i's next run; publish sends the run.
func (e *channels) send(i int, r *request) {
	r.ret = e.ret[i]
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
func (e *channels) publish() {
	for _, i := range e.dirty {
		e.pool.Worker(i).Publish()
		e.marked[i] = false
	}
	e.dirty = e.dirty[:0]
}

// setLimit: the balancer's count alone keeps a worker under its limit.
func (e *channels) setLimit(int, int) {}

// accepting reports whether the balancer takes a request now: one a
// worker can take, or, under a schedule, one the schedule has room for:
// as many as the intake buffer (which counts the schedule too).
func (e *channels) accepting() bool {
	b := &e.d.b
	switch {
	case e.runs == nil:
		// Pike's rendezvous: accepted only when a worker has room for it
		// beside those already taken. O(workers), as on rings.
		return b.sched.len() < b.freeSlots()
	}
	return b.sched.len() < e.in.bound()
}
func (e *channels) takeBack(i int) (*request, bool) {
	return e.pool.Worker(i).TryTake()
}

// turn takes what is ready without waiting (see poll). With Pike's
// unbuffered channel it first tells TrySubmit whether the balancer takes
// a request now.
func (e *channels) turn() bool {
	if e.runs == nil {
		e.gate.set(e.accepting() && e.d.b.seen == lifeOpen)
	}
	return e.poll()
}

// park is Pike's select over the request and completion channels, with
// control calls and lifecycle kicks beside them. While the picked worker
// is full (or the backlog is not taken yet) the request case is nil: the
// balancer serves completions only. What it receives is taken at the next
// turn.
func (e *channels) park() {
	d := e.d
	reqs, runs := e.reqs, e.runs
	if !e.accepting() || e.next < len(e.backlog) {
		reqs, runs = nil, nil
	}
	e.publish()    // what a control call or the last receive dispatched
	e.settle(true) // room for the line before the balancer waits
	select {
	case q := <-runs:
		e.receive(q)
	case r := <-reqs:
		e.took(r)
	case c := <-e.done:
		e.completed(c)
	case f := <-d.ctl:
		d.ctlWaiting.Add(-1)
		f()
	case <-e.kicks:
	}
}

// pollBatch bounds how many messages of one kind a turn takes without
// waiting, so control calls and the lifecycle are looked at between.
const pollBatch = 256

// poll takes the completions and then the requests that are ready, without
// waiting, and reports whether it took any.
func (e *channels) poll() bool {
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
	if e.runs != nil {
		took = e.takeBacklog() || took
		if e.next == len(e.backlog) && e.accepting() {
			select {
			case q := <-e.runs:
				e.receive(q)
				e.takeBacklog()
				took = true
			default:
			}
		}
	} else {
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
	}
	e.settle(false)
	for r := b.next(); r != nil; r = b.next() {
		d.dispatch(r)
		took = true
	}
	e.publish()
	return took
}

// took dispatches r, or puts it in the schedule.
func (e *channels) took(r *request) {
	e.d.b.take(r)
}

// completed counts one completion message: c.N requests of worker c.Worker.
func (e *channels) completed(c worker.Done) {
	b := &e.d.b
	e.collect(e.ret[c.Worker])
	b.account(c.Worker, c.N)
	b.complete(c.Worker, c.N)
}

// quiet: nobody waits for a Go request's answer, so its worker may report
// its completion with others' (worker.Chan). Every other request is
// reported before it is answered, so Stats read after an answer counts it.
func quiet(r *request) bool { return r.async }

// reap takes every completion message already sent, so a snapshot read
// after an answer counts its request (workers report before answering).
func (e *channels) reap() {
	for {
		select {
		case c := <-e.done:
			e.completed(c)
		default:
			return
		}
	}
}
