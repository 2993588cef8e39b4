package dispatcher

import (
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/gobalancer/balancer/internal/cacheline"
	"github.com/gobalancer/balancer/pool"
	"github.com/gobalancer/balancer/worker"
)

// member is what the balancer needs of a worker of any engine: the pool's
// part, the hand-off of requests (Put, made visible by Publish, taken back
// by TryTake) and its busy time. worker.Chan and worker.Worker are both.
type member interface {
	pool.Member
	Put(r *request)
	Publish()
	TryTake() (*request, bool)
	Busy() time.Duration
}

// workerSet is the balancer's workers, whatever the engine: the pool,
// each worker's return ring for finished Go requests, and the workers
// given requests this turn, published once per turn (a run per worker
// per turn, not a message or a store per request). The engine only makes
// each worker (engine.worker), wired to its completions. Balancer only.
type workerSet struct {
	pool   *pool.Pool[member]
	ret    []*retRing // by worker index
	dirty  []int      // workers given requests not yet published
	marked []bool     // by worker index: in dirty
}

// start makes n workers, each by mk from a fresh config and its return
// ring.
func (s *workerSet) start(n, depth int, mk func(i int, spawn func(func())) member) {
	s.pool = pool.New(n, func(i int, spawn func(func())) member {
		for len(s.ret) <= i {
			s.ret = append(s.ret, nil)
			s.marked = append(s.marked, false)
		}
		s.ret[i] = newRetRing(depth) // a forgotten index, reused: a new worker's
		return mk(i, spawn)
	})
}

// send puts r in worker i's next run; flush publishes it.
func (s *workerSet) send(i int, r *request) {
	r.ret = s.ret[i]
	s.pool.Worker(i).Put(r)
	if !s.marked[i] {
		s.marked[i] = true
		s.dirty = append(s.dirty, i)
	}
}

// flush publishes what this turn sent. Called before the balancer waits
// for anything, so nothing put is left unsent.
func (s *workerSet) flush() {
	for _, i := range s.dirty {
		s.pool.Worker(i).Publish()
		s.marked[i] = false
	}
	s.dirty = s.dirty[:0]
}

// takeBack removes a request still queued at worker i, if any, so it can
// be answered without running (abandon). What this turn sent is published
// first: a request sent but not yet published would reach its worker
// after the abandon (a held request re-picked in the same turn, say).
func (s *workerSet) takeBack(i int) (*request, bool) {
	s.flush()
	return s.pool.Worker(i).TryTake()
}

func (s *workerSet) add() int                 { return s.pool.Add() }
func (s *workerSet) forget(i int) error       { return s.pool.Forget(i) }
func (s *workerSet) busy(i int) time.Duration { return s.pool.Worker(i).Busy() }
func (s *workerSet) replaced() int64          { return s.pool.Replaced() }

// remove closes worker i. The balancer's slot is its record of membership
// and it removes only a worker its slot says is live; the pool's refusal
// (ErrNoWorker, asked of the worker) guards other callers and cannot
// happen here.
func (s *workerSet) remove(i int) { _ = s.pool.Remove(i) }

// stop stops every worker and waits for all their goroutines.
func (s *workerSet) stop() {
	s.pool.Stop()
	s.pool.Wait()
}

// workerConfig is what every worker of either engine does with a request.
func (d *Dispatcher) workerConfig(depth int) worker.Config[*request] {
	return worker.Config[*request]{
		Depth:    depth,
		Panicked: d.panicked,
		Exited:   d.exited,
	}
}

// runner returns the worker side of a request for worker i: run with
// that worker's own count of tasks, which picks the tasks it times, and
// its own indexer (WithWorkerIndex); and what the worker does when it
// stops for good: drop the last context its indexer wrapped, which a
// removed worker would otherwise keep reachable for the dispatcher's life.
func (d *Dispatcher) runner(i int) (run func(*request, func()), stop func()) {
	// The tasks this worker ran (its goroutines run one at a time), on a
	// line of its own: a small counter allocated next to another worker's
	// hot word (the tiny allocator packs them) is written per task.
	n := new(cacheline.Padded[uint32])
	x := d.indexer(i)
	long := d.b.longFlag(i)
	run = func(r *request, count func()) {
		n.V++
		d.run(r, count, n.V%LatencySampleEvery == 0, x, &long.V)
	}
	if x == nil {
		return run, nil
	}
	return run, func() { x.last, x.reusable = nil, false }
}

// run is the worker side of a request: answer without running when the
// dispatcher abandoned it or its requester's context ended while queued.
// count comes before the answer so Stats, read after an answer, has it;
// a timed run is recorded before both. Only a sampled task reads the
// clock. The sample is picked by a per-worker count, not a random draw per
// task, which cost a batch of empty Go tasks measurably.
func (d *Dispatcher) run(r *request, count func(), sampled bool, x *indexer, long *atomic.Bool) {
	if r.took != 0 {
		d.waited(r)
	}
	if d.life.Load() >= lifeAbandoning {
		d.finished(r)
		count()
		d.reply(r, d.abandon)
		return
	}
	if err := r.ctx.Err(); err != nil {
		d.finished(r)
		count()
		d.canceled.Add(1)
		d.reply(r, err)
		return
	}
	ctx, j := r.ctx, r.job
	if x != nil {
		ctx = x.wrap(ctx)
	}
	// The job is dropped as soon as it has run, before the answer: a Go
	// task's closure and what it captured are not kept.
	r.job = nil
	var start time.Time
	if sampled {
		start = time.Now()
	}
	err := j.run(ctx)
	if sampled {
		d.lat.record(time.Since(start))
	}
	if err != nil && r.owner != nil {
		r.owner.taskFailed(err)
	}
	d.finished(r)
	count()
	waited := !r.async
	d.reply(r, err)
	if waited && (long.Load() || rand.Uint32()%yieldOneIn == 0) {
		// Fairness: the answer readied the requester into this P's runnext
		// slot, and a requester → balancer → worker → requester chain of
		// runnext hand-offs can keep other runnable requesters waiting for
		// the 10 ms preemption. Yielding puts the worker at the back of the
		// global queue instead, so requesters queued on this P take turns.
		runtime.Gosched()
	}
}

// waited records how long sampled request r waited from the balancer
// taking it to its start, for its tenant and its class.
func (d *Dispatcher) waited(r *request) {
	w := time.Duration(time.Now().UnixNano() - r.took)
	r.took = 0
	t := r.tenant
	if t == nil {
		t = d.book.def
	}
	t.stats.recordWait(w)
	d.book.classes[r.prio].recordWait(w)
}

// finished counts r's completion for its tenant and class; the default
// tenant's and class 0's are what the others leave of the total, so the
// common request pays nothing here.
func (d *Dispatcher) finished(r *request) {
	if d.admission {
		d.adm.finished.Add(1)
	}
	if r.tenant != nil {
		r.tenant.stats.completed.Add(1)
	}
	if r.prio != 0 {
		d.book.classes[r.prio].completed.Add(1)
	}
}

// A worker whose tasks are long (half the queue budget or more a task:
// 50 µs by default) yields after every answer somebody waits for: the
// woken requester (a group's Wait, an interactive Do) sits in this P's
// runnext slot, and while both cores run workers it would wait for the
// 10 ms preemption. Against tasks that long a yield costs nothing
// measurable; with short tasks a yield per answer costs closed-loop
// requesters a good part of their throughput, so shorter tasks keep the
// one-in-yieldOneIn yield.
const longShare = 2

// yieldOneIn: a worker yields after one answer in this many, at random
// (rand.Uint32 is per-thread, no shared state). Without the yield a
// requester readied into a busy P's runnext slot waits there while the
// worker and the balancer hand each other the P, and the closed-loop
// requesters' worst cycles grow several-fold; yielding after every answer
// keeps them short but costs CPU per request. One in 4 keeps the tail
// near the every-answer figure at near the never figure's cost
// (docs/performance.md, "The yields").
const yieldOneIn = 4
