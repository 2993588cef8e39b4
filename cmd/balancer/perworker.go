package main

import (
	"sync"

	"github.com/gobalancer/balancer/dispatcher"
	"github.com/gobalancer/balancer/strategies"
)

// dispatcherOptions are a run's options. The strategy goes by name, so the
// dispatcher builds it as it does for any user, and its optional interfaces
// (strategies.BatchDone, strategies.Dynamic for -churn) apply: a wrapper
// around it would hide them and measure a path nobody else takes. The
// buffers are explicit (see setupWith). The worker index is how a task
// finds its worker's -speeds factor and how -plot counts tasks per worker.
func dispatcherOptions(c *config, s setup) []dispatcher.Option {
	opts := []dispatcher.Option{
		dispatcher.WithEngine(s.engine),
		dispatcher.WithSchedule(s.schedule),
		dispatcher.WithWeights(c.weightsOrEqual()...),
		dispatcher.WithStrategyName(s.strategy, strategies.WithSeed(c.seed)),
		dispatcher.WithWorkerBuffer(s.workerBuffer),
		dispatcher.WithIntakeBuffer(s.intake),
		dispatcher.WithWorkerIndex(),
	}
	if s.completion >= 0 {
		opts = append(opts, dispatcher.WithCompletionBuffer(s.completion))
	}
	return opts
}

// workers is what a task does with the index of the worker running it
// (dispatcher.WorkerIndex): look up that worker's speed, and, for -plot,
// count a task for it.
type workers struct {
	base []float64 // -speeds, or all 1
	mu   sync.Mutex
	cum  *cumulative // tasks per worker in the order they start; nil without -plot
}

func newWorkers(c *config, record bool) *workers {
	w := &workers{base: c.speedsOrOne()}
	if record {
		w.cum = &cumulative{}
	}
	return w
}

// speed is worker i's: -churn removes worker k as it adds worker n+k (n
// the initial count), so each index takes the speed of i mod n and a new
// worker runs at the speed of the one it replaces.
func (w *workers) speed(i int) float64 { return w.base[i%len(w.base)] }

// speeds is the speed of each of the first n indices, added workers
// included, for the report.
func (w *workers) speeds(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = w.speed(i)
	}
	return s
}

// ran counts a task that started on worker i. Workers call it
// concurrently; the lock is taken only with -plot.
func (w *workers) ran(i int) {
	if w.cum == nil {
		return
	}
	w.mu.Lock()
	w.cum.add(i)
	w.mu.Unlock()
}
