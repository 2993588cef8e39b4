package dispatcher

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLatencyBuckets: the buckets tile [0, MaxInt64] without gaps or
// overlaps, and each is narrow enough for the documented error.
func TestLatencyBuckets(t *testing.T) {
	next := int64(0)
	for i := range latBuckets {
		lo, w := latRange(i)
		require.Equal(t, next, lo, "bucket %d starts where %d ended", i, i-1)
		require.Equal(t, i, latBucket(lo), "bucket of %d", lo)
		require.Equal(t, i, latBucket(lo+w-1), "bucket of %d", lo+w-1)
		if lo > 0 {
			require.LessOrEqual(t, float64((w-1)/2), LatencyRelativeError*float64(lo), "bucket %d's middle", i)
		}
		if i == latBuckets-1 {
			require.Equal(t, int64(math.MaxInt64), lo+w-1, "the last bucket ends at MaxInt64")
			break
		}
		next = lo + w
	}
	require.Equal(t, 0, latBucket(-5), "a negative duration counts as 0")
}

// TestLatencyPercentiles: against the exact nearest-rank percentiles of
// log-normal run times, every reported one is within the documented
// relative error; Samples, Sum and Max are exact.
func TestLatencyPercentiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 10, 999, 1000, 12345} {
		var h latency
		vs := make([]int64, n)
		var sum int64
		for i := range vs {
			vs[i] = int64(math.Exp(rng.NormFloat64()*2 + 11)) // ~60 µs, wide spread
			sum += vs[i]
			h.record(time.Duration(vs[i]))
		}
		slices.Sort(vs)
		s := h.stats()
		require.Equal(t, int64(n), s.Samples)
		require.Equal(t, time.Duration(sum), s.Sum)
		require.Equal(t, time.Duration(vs[n-1]), s.Max)
		for _, c := range []struct {
			q   float64
			got time.Duration
		}{{0.5, s.P50}, {0.9, s.P90}, {0.99, s.P99}, {0.999, s.P999}} {
			want := float64(vs[rank(c.q, uint64(n))-1])
			assert.InDelta(t, want, float64(c.got), want*LatencyRelativeError+0.5, "n=%d q=%v", n, c.q)
		}
	}
	var empty latency
	require.Equal(t, LatencyStats{}, empty.stats())
	require.Equal(t, LatencyStats{}, (*latency)(nil).stats())
}

// TestLatencyConcurrent: records from many goroutines while another reads
// (run with -race); every record is counted.
func TestLatencyConcurrent(t *testing.T) {
	var h latency
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				s := h.stats()
				assert.LessOrEqual(t, s.P50, s.Max)
			}
		}
	})
	var writers sync.WaitGroup
	for g := range 4 {
		writers.Go(func() {
			for i := range 10000 {
				h.record(time.Duration(g*10000 + i))
			}
		})
	}
	writers.Wait()
	close(stop)
	wg.Wait()
	s := h.stats()
	require.Equal(t, int64(40000), s.Samples)
	require.Equal(t, 39999*time.Nanosecond, s.Max)
	require.Equal(t, time.Duration(39999*40000/2), s.Sum)
}
