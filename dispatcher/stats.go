package dispatcher

import (
	"math"
	"slices"
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
	Pending    int   // requests at workers now
	Held       bool  // a request waits for its picked worker's room
	Stalls     int64 // picks that found the worker full and waited
	Replaced   int64 // worker goroutines replaced after a task's (or a panic handler's) Goexit
	Panics     int64 // tasks that panicked (answered with a *PanicError, or dropped for Go)
	Goexits    int64 // tasks that called runtime.Goexit (answered with ErrTaskExited)
	Canceled   int64 // requests answered with their context's error instead of running

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
}

// Stats returns a snapshot taken by the balancer goroutine, or the final
// one once the dispatcher has stopped.
func (d *Dispatcher[R]) Stats() Stats {
	var s Stats
	if !d.made() {
		return s // nothing was ever dispatched
	}
	if err := d.call(func() error { d.eng.reap(); s = d.snapshot(); return nil }); err != nil {
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

func (d *Dispatcher[R]) snapshot() Stats {
	b := &d.b
	s := Stats{
		Workers:    make([]WorkerStats, len(b.w)),
		Dispatched: b.dispatched,
		Completed:  b.completed,
		Pending:    b.total,
		Held:       b.held != nil,
		Stalls:     b.stalls,
		Replaced:   b.links.replaced(),
		Panics:     d.panics.Load(),
		Goexits:    d.goexits.Load(),
		Canceled:   d.canceled.Load(),

		PanicHandlerFailures: d.handlerFailures.Load(),
	}
	s.Queued, s.Blocked = d.eng.intakeStats()
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
