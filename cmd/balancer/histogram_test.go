package main

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The histogram's percentiles are within relErr of the exact nearest-rank
// ones, over values from nanoseconds to years; its max is exact.
func TestHistogramErrorBound(t *testing.T) {
	require.LessOrEqual(t, relErr, 0.004, "the bound docs/demo.md states")
	r := rand.New(rand.NewPCG(1, 2))
	for name, gen := range map[string]func() int64{
		"exact range": func() int64 { return r.Int64N(256) },
		"exp 1ms":     func() int64 { return int64(r.ExpFloat64() * 1e6) },
		"log-uniform": func() int64 { return int64(math.Exp(r.Float64() * 43)) }, // 1 ns to 2^62 ns
	} {
		t.Run(name, func(t *testing.T) {
			var h histogram
			vals := make([]int64, 20000)
			for i := range vals {
				vals[i] = gen()
				h.Record(vals[i])
			}
			slices.Sort(vals)
			exact := func(q float64) int64 { return vals[int(q*float64(len(vals))+0.999999)-1] }
			got := h.Latency()
			for _, p := range []struct {
				q   float64
				got int64
			}{{0.50, got.P50}, {0.90, got.P90}, {0.99, got.P99}} {
				want := exact(p.q)
				assert.LessOrEqual(t, math.Abs(float64(p.got-want)), relErr*float64(want), "q %v: got %d, exact %d", p.q, p.got, want)
			}
			assert.Equal(t, vals[len(vals)-1], got.Max)
		})
	}
}

func TestHistogramEdges(t *testing.T) {
	var h histogram
	assert.Equal(t, Latency{}, h.Latency(), "empty")
	h.Record(math.MaxInt64)
	h.Record(-5) // clamped: a latency is never negative
	l := h.Latency()
	assert.Equal(t, int64(math.MaxInt64), l.Max)
	assert.Equal(t, int64(0), l.P50)
	assert.InEpsilon(t, float64(math.MaxInt64), float64(l.P99), relErr, "the top bucket does not overflow")
	assert.LessOrEqual(t, l.P99, l.Max)
	for v := int64(1); v > 0 && v < math.MaxInt64/3; v = v*3 + 1 {
		lo, w := bucketRange(bucketOf(v))
		assert.True(t, lo <= v && v < lo+w, "%d in [%d, %d)", v, lo, lo+w)
		assert.LessOrEqual(t, float64(w), float64(v)/subCount+1)
	}
}

// Requesters record at once: nothing is lost.
func TestHistogramConcurrent(t *testing.T) {
	var h histogram
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 5000 {
				h.Record(int64(g*5000 + i))
			}
		})
	}
	wg.Wait()
	var n uint64
	for i := range h.counts {
		n += h.counts[i].Load()
	}
	assert.Equal(t, uint64(20000), n)
	assert.Equal(t, int64(19999), h.Latency().Max)
}

// The plot's data is bounded whatever the number of picks or samples,
// evenly spaced, and ends on the last pick.
func TestPlotDataBounded(t *testing.T) {
	var c cumulative
	for i := range 1_000_003 {
		c.add(i % 3)
	}
	rows := c.final()
	assert.LessOrEqual(t, len(rows), 2*maxPoints+1)
	assert.GreaterOrEqual(t, len(rows), maxPoints)
	for k, r := range rows[:len(rows)-1] {
		assert.Equal(t, (k+1)*c.step, r.t)
	}
	last := rows[len(rows)-1]
	assert.Equal(t, 1_000_003, last.t)
	assert.Equal(t, []int{333_335, 333_334, 333_334}, last.count)

	var m monitor
	for i := range 100_000 {
		m.keep(sample{at: 0, pending: []int{i}})
	}
	assert.LessOrEqual(t, len(m.samples), 2*maxPoints)
	assert.GreaterOrEqual(t, len(m.samples), maxPoints)
	for k, s := range m.samples {
		assert.Equal(t, k*m.stride, s.pending[0])
	}
}
