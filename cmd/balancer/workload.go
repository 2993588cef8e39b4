package main

import (
	"context"
	"math"
	"runtime"
	"sync"
	"time"
)

// plan is the workload, a function of the seed and the request's number,
// so every run with the same seed (each row of -compare, each round) does
// the same work with the same faults: differences come from the strategy
// or the buffers. It is drawn per request rather than stored, so that the
// memory of a run does not grow with -requests.
type plan struct {
	seed                  uint64
	dist                  string
	mean                  float64 // -work, in ns
	panicRate, cancelRate float64
}

func newPlan(c *config) *plan {
	return &plan{seed: c.seed, dist: c.dist, mean: float64(c.work), panicRate: c.panicRate, cancelRate: c.cancelRate}
}

// Streams of draws, one per concern, so that adding faults does not
// change the work.
const (
	streamWork = iota + 1
	streamPanic
	streamCancel
	streamCancelAt
)

// at returns request t's CPU work at speed 1, whether its task panics
// after the work, and when its context is cancelled (<0: never).
func (p *plan) at(t int) (work time.Duration, panics bool, cancelAfter time.Duration) {
	var w float64
	switch p.dist {
	case "const":
		w = p.mean
	case "uniform":
		w = 2 * p.mean * p.unit(streamWork, t)
	case "exp":
		w = -p.mean * math.Log1p(-p.unit(streamWork, t)) // inverse transform; unit < 1
	}
	cancelAfter = -1
	if p.unit(streamCancel, t) < p.cancelRate {
		// Within the mean work: some are cancelled while queued, some
		// while running, a few not before they finish.
		cancelAfter = time.Duration(p.mean * p.unit(streamCancelAt, t))
	}
	return time.Duration(w), p.unit(streamPanic, t) < p.panicRate, cancelAfter
}

// unit is a uniform draw in [0, 1) for request t in a stream: splitmix64's
// finaliser over (seed, stream, t), a counter-based generator, so that any
// request's draws cost the same whatever t is.
func (p *plan) unit(stream uint64, t int) float64 {
	x := mix64(mix64(p.seed^stream*0x9e3779b97f4a7c15) + uint64(t))
	return float64(x>>11) / (1 << 53)
}

func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
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
