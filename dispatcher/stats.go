package dispatcher

import (
	"math"
	"slices"
	"strconv"
	"time"
)

// WorkerStats describes one worker.
type WorkerStats struct {
	Index      int
	Weight     int
	Pending    int           // requests sent to it and not yet reported done
	MaxPending int           // the most it ever had pending
	Completed  int64         // requests it finished
	Busy       time.Duration // time it spent running them
	Removed    bool
}

// Stats is a snapshot of the dispatcher.
type Stats struct {
	Workers    []WorkerStats
	Dispatched int64 // requests sent to workers
	Completed  int64 // requests workers reported done
	// RetiredCompleted is the part of Completed done by removed workers
	// whose index a later worker took (AddWorker reuses a drained
	// worker's index): Completed is RetiredCompleted plus the sum over
	// Workers.
	RetiredCompleted int64
	Pending          int   // requests at workers now
	Held             bool  // a request waits for its picked worker's room
	Stalls           int64 // picks that found the worker full and waited
	Replaced         int64 // worker goroutines replaced after a task's (or a panic handler's) Goexit, counted before that request is answered
	Panics           int64 // tasks that panicked (answered with a *PanicError, or dropped for Go)
	Goexits          int64 // tasks that called runtime.Goexit (answered with ErrTaskExited)
	Canceled         int64 // requests answered with their context's error instead of running

	// PanicHandlerFailures counts calls of the WithPanicHandler function
	// that panicked or called runtime.Goexit (contained).
	PanicHandlerFailures int64

	// Queued is how many accepted requests wait in the intake for the
	// balancer (the held one is not among them). Blocked is how many
	// submitters wait for room in the intake.
	Queued, Blocked int

	// Pike's figure: the mean and standard deviation of pending across live
	// workers, now and averaged over every balancer event of the run (the
	// run's deviation is the root of the mean variance).
	PendingMean, PendingStdDev       float64
	RunPendingMean, RunPendingStdDev float64

	// Latency: percentiles of the tasks' run times, from a sample.
	Latency LatencyStats

	// Tenants has a line per tenant name: DefaultTenant for requests
	// outside groups, then the groups' names (Tenant; "group" for groups
	// without one) in the order first used. Classes has a line per
	// priority class, 0 to MaxPriority.
	Tenants, Classes []FlowStats
}

// FlowStats describes the requests of one tenant or one priority class.
type FlowStats struct {
	Name       string // the tenant's name, or the class ("0" to "7")
	Queued     int    // waiting in the balancer's schedule
	Dispatched int64  // handed to a worker
	Running    int64  // handed to a worker and not finished
	Completed  int64  // finished at a worker (ran, or answered there without running)
	Refused    int64  // refused at submit by WithDeadlineAdmission
	// Wait: from the balancer taking a request to its start at a worker,
	// from a sample (one request in LatencySampleEvery).
	Wait LatencyStats
}

// Stats returns a snapshot taken by the balancer goroutine, or the final
// one once the dispatcher has stopped.
func (d *Dispatcher) Stats() Stats {
	var s Stats
	if !d.made() {
		return s // nothing was ever dispatched
	}
	if err := d.call(func() error { (*port)(d).reap(); s = d.snapshot(); return nil }); err != nil {
		// Stopped: the final snapshot is set. Each caller gets its own
		// Workers, as from a live dispatcher.
		s = *d.final.Load()
		s.Workers = slices.Clone(s.Workers)
	}
	// Read here, not on the balancer goroutine, which would stop
	// dispatching for the histogram's pass: workers record a run before
	// they count it, so a run answered before this call is in it.
	s.Latency = d.lat.stats()
	return s
}

func (d *Dispatcher) snapshot() Stats {
	b := &d.b
	s := Stats{
		Workers:    make([]WorkerStats, len(b.w)),
		Dispatched: b.dispatched,
		Completed:  b.completed,

		RetiredCompleted: b.retired,
		Pending:          b.total,
		Held:             b.held != nil,
		Stalls:           b.stalls,
		Replaced:         b.ws.replaced(),
		Panics:           d.panics.Load(),
		Goexits:          d.goexits.Load(),
		Canceled:         d.canceled.Load(),

		PanicHandlerFailures: d.handlerFailures.Load(),
	}
	queued, blocked := d.eng.intake()
	s.Queued, s.Blocked = queued+b.sched.len(), blocked
	s.Tenants, s.Classes = d.book.snapshot(b.dispatched, b.completed)
	var live int
	var s1, s2 float64
	for i, w := range b.w {
		s.Workers[i] = WorkerStats{
			Index: i, Weight: w.weight, Pending: w.pending, MaxPending: w.maxPending,
			Completed: w.completed, Busy: time.Duration(w.busy), Removed: w.removed,
		}
		if !w.removed {
			live++
			p := float64(w.pending)
			s1 += p
			s2 += p * p
		}
	}
	if live > 0 {
		s.PendingMean = s1 / float64(live)
		s.PendingStdDev = math.Sqrt(math.Max(0, s2/float64(live)-s.PendingMean*s.PendingMean))
	}
	s.RunPendingMean, s.RunPendingStdDev = b.pend.run()
	return s
}

// pendingStats keeps Σpending and Σpending² over workers incrementally, so
// sampling Pike's mean and deviation after every event costs O(1).
type pendingStats struct {
	s1, s2  int64   // Σp and Σp² now
	events  int64   // samples taken
	sumMean float64 // Σ over samples of s1/n
	sumVar  float64 // Σ over samples of the variance
}

// add records one worker's pending going from p to p+delta.
func (ps *pendingStats) add(p, delta int) {
	q := int64(p + delta)
	ps.s1 += int64(delta)
	ps.s2 += q*q - int64(p)*int64(p)
}

func (ps *pendingStats) sample(live int) {
	if live == 0 {
		return
	}
	n := float64(live)
	mean := float64(ps.s1) / n
	ps.sumMean += mean
	ps.sumVar += float64(ps.s2)/n - mean*mean
	ps.events++
}

func (ps *pendingStats) run() (mean, stddev float64) {
	if ps.events == 0 {
		return 0, 0
	}
	e := float64(ps.events)
	return ps.sumMean / e, math.Sqrt(math.Max(0, ps.sumVar/e))
}

// snapshot reports every tenant and class. The default tenant and class 0
// are not counted as their requests are dispatched and finish (that would
// cost every plain request two counters and an atomic add): they get what
// the others leave of dispatched and completed. Balancer goroutine only
// (queued and dispatched are its own).
func (b *tenantBook) snapshot(dispatched, completed int64) (tenants, classes []FlowStats) {
	b.mu.Lock()
	names := slices.Clone(b.order)
	stats := make([]*flowStats, len(names))
	for i, n := range names {
		stats[i] = b.names[n]
	}
	b.mu.Unlock()
	line := func(name string, f *flowStats) FlowStats {
		return FlowStats{Name: name, Queued: f.queued, Dispatched: f.dispatched,
			Completed: f.completed.Load(), Refused: f.refused.Load(), Wait: f.waitStats()}
	}
	finish := func(lines []FlowStats) {
		rest, restD := completed, dispatched
		for i := 1; i < len(lines); i++ {
			rest -= lines[i].Completed
			restD -= lines[i].Dispatched
		}
		lines[0].Completed, lines[0].Dispatched = max(rest, 0), max(restD, 0)
		for i := range lines {
			lines[i].Running = max(lines[i].Dispatched-lines[i].Completed, 0)
		}
	}
	for i, n := range names {
		tenants = append(tenants, line(n, stats[i]))
	}
	finish(tenants)
	for p := range b.classes {
		classes = append(classes, line(strconv.Itoa(p), &b.classes[p]))
	}
	finish(classes)
	return tenants, classes
}
