package main

import (
	"math"
	"math/bits"
	"sync/atomic"
)

// histogram counts latencies in log-linear buckets, as HdrHistogram does,
// so that a run of any length holds a fixed 58 KB instead of one sample
// per request. Written here rather than taken from a library: the demo
// needs this page of code, and the main module gains no dependency for it.
//
// Values below 2^subBits are counted exactly. Above, each power of two
// [2^e, 2^(e+1)) is cut into 2^subBits buckets of equal width 2^(e-subBits),
// so a bucket's width is at most 1/2^subBits of any value in it. A
// percentile is reported as the middle of its bucket (clamped to the
// exact minimum and maximum), hence within half a width of the true
// nearest-rank value: a relative error of at most 1/2^(subBits+1), i.e.
// 1/256 < 0.4% with subBits = 7. The maximum is exact.
//
// Record is safe for concurrent use: the requesters record in parallel,
// and an atomic add per request costs nothing next to a dispatch.
type histogram struct {
	counts [nBuckets]atomic.Uint64
	max    atomic.Int64 // exact
	minInv atomic.Int64 // exact minimum v as MaxInt64 - v, so that the zero value means "none yet"
}

const (
	subBits  = 7
	subCount = 1 << subBits
	// The largest int64 has exponent 62: buckets up to (62-subBits+1)·subCount.
	nBuckets = (63 - subBits + 1) * subCount
)

// relErr is the documented bound on a percentile's relative error.
const relErr = 1.0 / (2 * subCount)

func bucketOf(v int64) int {
	u := uint64(max(v, 0))
	if u < subCount {
		return int(u)
	}
	e := bits.Len64(u) - 1  // e >= subBits
	m := u >> (e - subBits) // in [subCount, 2·subCount)
	return (e-subBits)*subCount + int(m)
}

// bucketRange is the smallest value of bucket i and its width.
func bucketRange(i int) (lo, width int64) {
	if i < 2*subCount {
		return int64(i), 1
	}
	shift := i/subCount - 1
	m := int64(subCount + i%subCount)
	return m << shift, 1 << shift
}

func (h *histogram) Record(v int64) {
	v = max(v, 0)
	h.counts[bucketOf(v)].Add(1)
	storeMax(&h.max, v)
	storeMax(&h.minInv, math.MaxInt64-v)
}

func storeMax(a *atomic.Int64, v int64) {
	for {
		cur := a.Load()
		if v <= cur || a.CompareAndSwap(cur, v) {
			return
		}
	}
}

// Latency reads the nearest-rank percentiles: for q, the bucket holding
// the smallest value with at least q of the data at or below it. Call it
// after every Record has returned.
func (h *histogram) Latency() Latency {
	var n uint64
	for i := range h.counts {
		n += h.counts[i].Load()
	}
	if n == 0 {
		return Latency{}
	}
	lo, hi := math.MaxInt64-h.minInv.Load(), h.max.Load()
	at := func(q float64) int64 {
		rank := max(uint64(q*float64(n)+0.999999), 1)
		var seen uint64
		for i := range h.counts {
			seen += h.counts[i].Load()
			if seen >= rank {
				b, w := bucketRange(i)
				return min(max(b+(w-1)/2, lo), hi)
			}
		}
		return hi
	}
	return Latency{P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: hi}
}
