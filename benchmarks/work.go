package benchmarks

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Kinds are the task kinds of BenchmarkBatch, in report order.
var Kinds = []string{"empty", "spin1us", "spin10us", "spin100us", "exp10us"}

var (
	calibrateOnce sync.Once
	itersPerUS    float64 // spin loop iterations per microsecond on this machine

	sink atomic.Uint64 // keeps the spin loop's result alive

	// expTable holds spin iteration counts drawn from an exponential
	// distribution with a 10 µs mean; tasks take them in turn, so every
	// implementation runs the same sequence of durations.
	expTable [4096]int
	expNext  atomic.Uint32
)

// spinIters burns CPU for n iterations of a xorshift: real work, no Sleep,
// nothing the compiler can drop.
func spinIters(n int) {
	x := uint64(n) | 1
	for range n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	if x == 0 { // never true; the store is what matters to the compiler
		sink.Store(x)
	}
}

// calibrate measures the spin loop once: the best of many short runs
// (about 100 µs each, well inside a scheduler time slice), so that on a
// shared machine at least one run is uninterrupted and every process of a
// benchmark round gets the same task lengths. Five 2 ms runs were not
// enough: with another job on the core, some processes calibrated tasks
// to half their length.
func calibrate() {
	calibrateOnce.Do(func() {
		const n = 200_000
		best := time.Duration(math.MaxInt64)
		for range 50 {
			start := time.Now()
			spinIters(n)
			if d := time.Since(start); d < best {
				best = d
			}
		}
		itersPerUS = n / (float64(best) / float64(time.Microsecond))
		r := rand.New(rand.NewPCG(1, 2))
		for i := range expTable {
			expTable[i] = int(r.ExpFloat64() * 10 * itersPerUS)
		}
	})
}

// Task returns the task of the given kind. Calibration happens once, here,
// outside any timed region.
func Task(kind string) func() {
	calibrate()
	spin := func(us float64) func() {
		n := int(us * itersPerUS)
		return func() { spinIters(n) }
	}
	switch kind {
	case "empty":
		return func() {}
	case "spin1us":
		return spin(1)
	case "spin10us":
		return spin(10)
	case "spin100us":
		return spin(100)
	case "exp10us":
		return func() { spinIters(expTable[expNext.Add(1)%uint32(len(expTable))]) }
	}
	panic("benchmarks: unknown task kind " + kind)
}

// Requesters is the number of closed-loop requesters of BenchmarkRequesters
// and BenchmarkClosedLoop; the pike impl sizes its worker buffers by it.
const Requesters = 64
