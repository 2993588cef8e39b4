package dispatcher

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// LatencySampleEvery: a worker times about one task in this many. Reading
// the clock twice per task was measured at a sixth of the CPU of an empty
// task; at one in 64 it is below the benchmarks' noise, and at any rate
// where a percentile is worth watching the samples are plenty.
const LatencySampleEvery = 64

// LatencyRelativeError bounds how far a reported percentile is from the
// nearest-rank percentile of the timed tasks, relative to that value
// (1/64, about 1.6%). Max is exact.
const LatencyRelativeError = 1.0 / (2 << latSubBits)

// LatencyStats describes the run time of the tasks a worker timed: from
// just before the worker calls the task to just after it returns. Time
// spent waiting in the intake or a worker's queue is not in it (measuring
// it would take a clock read at every submit, before knowing whether the
// request is sampled), nor are tasks that panicked or called Goexit, nor
// requests answered without running (canceled, abandoned).
//
// One task in LatencySampleEvery is timed (every 64th of each worker), so the
// percentiles are those of a systematic sample: P999 needs some 64 000 tasks
// before it rests on more than one timed task.
type LatencyStats struct {
	Samples int64         // tasks timed
	Sum     time.Duration // their total run time (exact): Sum/Samples is the mean

	// Nearest-rank percentiles of the timed tasks, each within
	// LatencyRelativeError of the true value.
	P50, P90, P99, P999 time.Duration
	Max                 time.Duration // the longest timed run (exact)
}

// Log-linear buckets, as HdrHistogram has them: values below 2^latSubBits
// nanoseconds are counted exactly; above, each power of two [2^e, 2^(e+1))
// is cut into 2^latSubBits buckets of width 2^(e-latSubBits), at most
// 1/2^latSubBits of any value in the bucket. Reporting a bucket's middle
// is then within half a width: 1/2^(latSubBits+1) relative error. The
// buckets cover every positive int64, so no duration is ever clamped, in
// a fixed 15 KB per dispatcher.
const (
	latSubBits  = 5
	latSubCount = 1 << latSubBits
	latBuckets  = (63 - latSubBits + 1) * latSubCount
)

// latency is one histogram shared by every worker of a dispatcher. Shared
// and not per worker because the engines build their workers from one
// worker.Config, and because it is written once per LatencySampleEvery
// tasks: even at the single balancer's ceiling of a few million tasks a
// second, that is a few tens of thousands of atomic adds on lines no other
// hot path writes.
type latency struct {
	counts [latBuckets]atomic.Uint64
	sum    atomic.Int64
	max    atomic.Int64
}

func latBucket(v int64) int {
	u := uint64(max(v, 0))
	if u < latSubCount {
		return int(u)
	}
	e := bits.Len64(u) - 1     // e >= latSubBits
	m := u >> (e - latSubBits) // in [latSubCount, 2·latSubCount)
	return (e-latSubBits)*latSubCount + int(m)
}

// latRange is the smallest value of bucket i and its width.
func latRange(i int) (lo, width int64) {
	if i < 2*latSubCount {
		return int64(i), 1
	}
	shift := i/latSubCount - 1
	m := int64(latSubCount + i%latSubCount)
	return m << shift, 1 << shift
}

// record counts one timed run. Safe for concurrent use.
func (h *latency) record(d time.Duration) {
	v := max(int64(d), 0)
	h.counts[latBucket(v)].Add(1)
	h.sum.Add(v)
	for {
		cur := h.max.Load()
		if v <= cur || h.max.CompareAndSwap(cur, v) {
			return
		}
	}
}

// stats reads the histogram. Runs may be recorded meanwhile: the counts
// are copied once, so the percentiles agree with Samples, and Sum and Max
// may include a run or two that the counts do not.
func (h *latency) stats() LatencyStats {
	if h == nil {
		return LatencyStats{}
	}
	var c [latBuckets]uint64
	var n uint64
	for i := range c {
		c[i] = h.counts[i].Load()
		n += c[i]
	}
	if n == 0 {
		return LatencyStats{}
	}
	hi := h.max.Load()
	qs := [...]float64{0.50, 0.90, 0.99, 0.999}
	var ps [len(qs)]time.Duration
	var seen uint64
	q, i := 0, 0
	for ; q < len(qs) && i < len(c); i++ {
		seen += c[i]
		for ; q < len(qs) && seen >= rank(qs[q], n); q++ {
			lo, w := latRange(i)
			ps[q] = time.Duration(min(lo+(w-1)/2, hi))
		}
	}
	return LatencyStats{
		Samples: int64(n), Sum: time.Duration(h.sum.Load()),
		P50: ps[0], P90: ps[1], P99: ps[2], P999: ps[3], Max: time.Duration(hi),
	}
}

// rank is the nearest rank of quantile q among n values: the smallest k
// with k ≥ q·n, at least 1.
func rank(q float64, n uint64) uint64 {
	k := uint64(q * float64(n))
	if float64(k) < q*float64(n) {
		k++
	}
	return max(k, 1)
}
