// Package dispatcher is Pike's heap load balancer as an embeddable work
// dispatcher for tasks of every result type. Requesters submit tasks to
// one shared intake; a single balancer goroutine takes them into its
// schedule, asks a strategy for a worker for the next one, hands it to
// that worker's queue and counts it pending; the worker runs it, answers
// the requester and counts the completion; the balancer tells the
// strategy.
//
// Unlike the textbook version, the balancer never blocks on a worker: it
// sends only to a worker with room, and when the picked worker is full it
// holds that request and serves completions until there is room, while
// what arrives waits in the schedule, bounded by the intake buffer.
//
// The Dispatcher owns the balancer's loop, its policy and the workers;
// an engine (WithEngine) is the transport between them. Channels is the
// textbook topology: a shared request channel, a channel per worker and a
// completion channel. Its messages carry runs where there are several:
// the requests submitted while the last run was on its way to the
// balancer, the requests the balancer gave one worker in one turn, and
// the completions of Go requests, which nobody waits for (see
// WithCompletionBuffer); with WithIntakeBuffer(0) the request channel is
// Pike's unbuffered one, a rendezvous per request. Rings has no channel
// operation per request besides the answer: the intake is a locked slice
// the balancer swaps out whole, each worker's queue is a single-producer
// ring, and completions are per-worker atomic counters; channels only
// wake a goroutine that parked with nothing to do. Both give the same
// guarantees (docs/design.md).
package dispatcher

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/gobalancer/balancer/internal/cacheline"
	"github.com/gobalancer/balancer/strategies"
)

// Dispatcher balances tasks of any result type over one set of workers,
// under one schedule: Go takes a task that returns an error, and the
// package functions Do, Submit, TrySubmit, NewGroup and Map take tasks
// that return a value of any type. Create it with New and stop it with
// Close. All methods are safe for concurrent use.
//
// Nested submits. A task may submit to any dispatcher, its own included.
// A blocking submit (Do, Submit, Go, Group.Go) waits for room whoever
// calls it, always: the answer never depends on how long it waited. So a
// task's blocking submit to its own dispatcher can wait for room that
// only its own worker would make: if every worker does so while the
// intake is full, nothing progresses until Close gives up on them. A task
// that submits to its own dispatcher should use TrySubmit or Group.TryGo
// (which never wait, and return ErrBusy or false when there is no room),
// or a context that bounds the wait; nor should it wait for the answer of
// what it submitted (the request may be queued behind the task itself),
// nor Close the dispatcher. errgroup and ants give the same rule.
//
// Cost: one balancer hand-off per request, shared by both engines; Do
// and Go allocate nothing, nor does Submit when it reuses a Future handed
// back by Release (TestDoAllocatesNothing, BenchmarkSubmit).
type Dispatcher struct {
	// life is the one lifecycle state: open, then draining once Close has
	// fenced the intake, abandoning once Close's context ended first,
	// stopped once every goroutine has exited. It only moves forward.
	life    atomic.Int32
	abandon error  // the answer of abandoned requests; set before abandoning
	eng     engine // the engine: its intake, links and balancer loop
	stopped chan struct{}
	closing chan struct{} // closed when Close begins: waits outside the intake end
	ctl     chan func()
	onPanic func(*PanicError) // WithPanicHandler
	lat     *latency          // sampled task run times (Stats.Latency)
	idxKey  *workerIndexKey   // WithWorkerIndex; nil without it
	book    *tenantBook       // tenants and priority classes (Stats.Tenants, Stats.Classes)

	schedule  Schedule
	admission bool // WithDeadlineAdmission

	// Everything above is read per request and written only by New and
	// Close: keep it off the cache lines that submitters, workers and the
	// balancer write per request.
	_          cacheline.Pad
	ctlWaiting atomic.Int32 // control calls about to send on ctl
	panics     atomic.Int64
	// Written only when a task panics, exits or is cancelled, or a panic
	// handler fails: off the hot path.
	goexits, canceled, handlerFailures atomic.Int64

	closeOnce   sync.Once
	abandonOnce sync.Once

	pools sync.Map              // per result type: Do's holders and Futures (poolOf)
	final atomic.Pointer[Stats] // the last snapshot, taken when the balancer stopped
	adm   admissionState        // WithDeadlineAdmission's figures

	b balancer // owned by the balancer goroutine
}

// made reports whether d was made by New: the zero value and a nil
// pointer answer ErrNotStarted from every method instead of crashing.
func (d *Dispatcher) made() bool { return d != nil && d.stopped != nil }

// New starts a dispatcher and its workers. Bad options yield an error
// wrapping ErrBadOption (and the strategy's own error, if any).
func New(opts ...Option) (*Dispatcher, error) {
	c := defaults()
	for _, o := range opts {
		if o == nil {
			c.bad("nil option")
			continue
		}
		o.apply(&c)
	}
	if err := c.plan(); err != nil {
		return nil, err
	}
	weights := c.weights
	if weights == nil {
		weights = strategies.Equal(c.workers)
	}
	strat := c.strategy
	if strat == nil {
		s, err := strategies.New(c.strategyName, weights, c.strategyOpts...)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadOption, err)
		}
		strat = s
	}
	// depth is what a worker's queue holds, base the limit it starts at.
	depth, base := c.workerBuffer+1, c.workerBuffer+1
	if c.engine != Channels && c.set["WithWorkerBuffer"] == 0 && c.workers <= MaxBuffer/deepDepth {
		depth = deepDepth // the queues deepen for short tasks (balancer.adapt)
	}
	if c.intake < 0 {
		// As many as the queues may hold: with base instead, deepened
		// queues bought a batch of empty tasks nothing (BenchmarkBatch).
		c.intake = c.workers * depth
	}

	d := &Dispatcher{
		ctl:     make(chan func()),
		stopped: make(chan struct{}),
		closing: make(chan struct{}),
		onPanic: c.panicHandler,
		lat:     new(latency),
		book:    newTenantBook(),

		schedule:  c.schedule,
		admission: c.admission,
	}
	if c.workerIndex {
		d.idxKey = new(workerIndexKey)
	}
	if c.engine == Channels && c.completion < 0 {
		// A slot for every request that can be pending: a worker never
		// waits for the balancer to take its report. With one slot per
		// worker, batches of 10 µs tasks ran markedly slower
		// (BenchmarkBatch): workers sat blocked on a full completion
		// channel while the balancer waited for a P.
		c.completion = c.workers * depth
	}
	budget := c.budget
	if budget < 0 {
		budget = DefaultQueueBudget
	}
	eng, laneIn := newEngine(d, &c, depth, base)
	d.eng = eng
	d.b.init(strat, eng, depth, base, budget, weights)
	d.b.book = d.book
	d.b.sched = newScheduler(c.schedule, d.book)
	if laneIn != nil && laneIn.cap > 0 { // without a buffer nothing waits for room
		d.b.laneIn = laneIn
		laneIn.mode = lanesFor(c.schedule)
	}
	cfg := d.workerConfig(depth)
	d.b.ws.start(c.workers, depth, func(i int, spawn func(func())) member {
		wc := cfg
		wc.Spawn = spawn
		wc.Run, wc.Stop = d.runner(i) // its own sample counter and index
		return eng.worker(i, wc)
	})
	go d.serve()
	return d, nil
}
