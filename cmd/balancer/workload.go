package main

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"
)

// plan is the workload, drawn from the seed before the run, so every run
// with the same seed (each row of -compare, each round) does the same work
// with the same faults: differences come from the strategy or the buffers.
type plan struct {
	work        []time.Duration // CPU work of request t at speed 1
	panics      []bool          // task t panics after its work
	cancelAfter []time.Duration // request t's context is cancelled after this; <0: never
}

func newPlan(c *config) *plan {
	// A stream per concern, so that adding faults does not change the work.
	rw := rand.New(rand.NewPCG(c.seed, 1))
	rf := rand.New(rand.NewPCG(c.seed, 2))
	p := &plan{
		work:        make([]time.Duration, c.requests),
		panics:      make([]bool, c.requests),
		cancelAfter: make([]time.Duration, c.requests),
	}
	mean := float64(c.work)
	for t := range p.work {
		var w float64
		switch c.dist {
		case "const":
			w = mean
		case "uniform":
			w = 2 * mean * rw.Float64()
		case "exp":
			w = mean * rw.ExpFloat64()
		}
		p.work[t] = time.Duration(w)
		p.panics[t] = rf.Float64() < c.panicRate
		p.cancelAfter[t] = -1
		if rf.Float64() < c.cancelRate {
			// Within the mean work: some are cancelled while queued, some
			// while running, a few not before they finish.
			p.cancelAfter[t] = time.Duration(mean * rf.Float64())
		}
	}
	return p
}

// spinCheck is how many loop iterations run between looks at the context:
// a few microseconds, so a cancelled task stops promptly.
const spinCheck = 4096

// spin does n iterations of xorshift, real CPU work that the compiler cannot
// drop because the result is returned (it becomes the task's value). It
// stops early with ctx's error.
func spin(ctx context.Context, n int64, x uint64) (uint64, error) {
	x |= 1
	done := ctx.Done()
	for n > 0 {
		k := min(n, spinCheck)
		x = xorshift(k, x)
		n -= k
		// Yield between chunks: with more busy workers than cores, a task
		// that never yields keeps the balancer goroutine off the CPU until
		// the scheduler preempts it (10 ms), and the demo would measure Go's
		// preemption instead of the balancer. Real work yields often anyway
		// (allocation, I/O, syscalls).
		runtime.Gosched()
		if done != nil {
			select {
			case <-done:
				return x, ctx.Err()
			default:
			}
		}
	}
	return x, nil
}

// xorshift runs k rounds of xorshift64 on x.
func xorshift(k int64, x uint64) uint64 {
	for range k {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

// calibSink keeps the calibration's result alive, so the compiler cannot
// drop the loop.
//
//lint:ignore U1000 written, never read, on purpose (see above)
var calibSink uint64

// itersPerNs is the speed of the busy loop on this machine, measured once:
// the best of many trials of about 10 µs each. A trial that short is rarely
// preempted, so on a shared machine the best one still shows the core's
// real speed; long trials there all come out slow, and the demo's tasks
// would then do less work than -work asks.
var itersPerNs = sync.OnceValue(func() float64 {
	const n = 1 << 14
	best := time.Duration(math.MaxInt64)
	x := uint64(1)
	for range 50 {
		start := time.Now()
		x = xorshift(n, x)
		best = min(best, time.Since(start))
	}
	calibSink = x
	return n / float64(max(best, 1))
})

// iterations converts CPU work into spin iterations.
func iterations(d time.Duration) int64 {
	return int64(float64(d) * itersPerNs())
}
