package httpbalancer

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"time"
)

// ErrQuantile: a quantile outside [0, 1].
var ErrQuantile = errors.New("httpbalancer: quantile outside [0, 1]")

// BackendStats is one backend's state and counters at the time of Stats.
type BackendStats struct {
	URL string
	// Weight is the weight the backend was given (-1: unknown, the weight
	// a strategy that cannot tell it was built with).
	Weight int
	// Serving: the backend takes new requests. Otherwise Reason says why:
	// removed (its requests in flight are finishing), unhealthy (active
	// checks), ejected (passive, with the time left and the failure).
	Serving bool
	Reason  string
	// Requests counts the attempts sent to the backend (a retried request
	// counts on both backends), Errors those that got no answer or a 5xx,
	// InFlight those not done yet (the response body is still open).
	Requests, Errors uint64
	InFlight         int
	// Ejections counts passive ejections; Checks and FailedChecks the
	// active health checks.
	Ejections, Checks, FailedChecks uint64
	// Latency holds every done attempt's time from pick to the end of
	// its response body (or its failure).
	Latency Histogram
}

// Stats returns a snapshot of every backend, in the order they were added,
// removed ones included until their requests in flight are done. It is
// taken under the proxy's lock, so the counters agree with each other:
// Requests = InFlight + Latency.Count.
func (p *Proxy) Stats() []BackendStats {
	now := p.cfg.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []BackendStats
	for _, b := range p.order {
		out = append(out, BackendStats{
			URL: b.url.String(), Weight: b.weight,
			Serving: b.serving(now), Reason: b.reason(now),
			Requests: b.requests, Errors: b.errors, InFlight: b.inflight,
			Ejections: b.totalEjects, Checks: b.checks, FailedChecks: b.failed,
			Latency: b.latency.snapshot(),
		})
	}
	return out
}

// The histogram is log-linear over microseconds, as HdrHistogram with one
// significant binary digit of 3 bits: exact buckets below 16 µs, then 8
// buckets per power of two up to 2^37 µs (38 h; longer times count in the
// last bucket). That is 280 counters, 2.2 KB per backend, whatever the
// traffic; a quantile is the middle of its bucket, within 1 µs of the true
// value below 16 µs and within 1/16 (6.25 %) above.
const (
	histSub     = 8  // buckets per power of two
	histExact   = 16 // values below are exact (2 * histSub)
	histMaxExp  = 36
	histBuckets = histExact + (histMaxExp-4)*histSub + histSub
)

type histogram struct {
	counts [histBuckets]uint64
	n      uint64
	sum    time.Duration
	max    time.Duration
}

func bucketOf(us uint64) int {
	if us < histExact {
		return int(us)
	}
	e := bits.Len64(us) - 1 // 2^e <= us < 2^(e+1), e >= 4
	if e > histMaxExp {
		return histBuckets - 1
	}
	sub := int(us>>(e-3)) & (histSub - 1)
	return histExact + (e-4)*histSub + sub
}

// bucketRange returns the microseconds [lo, hi) bucket i holds.
func bucketRange(i int) (lo, hi uint64) {
	if i < histExact {
		return uint64(i), uint64(i) + 1
	}
	e := (i-histExact)/histSub + 4
	sub := uint64((i - histExact) % histSub)
	w := uint64(1) << (e - 3)
	lo = (histSub + sub) * w
	return lo, lo + w
}

func (h *histogram) record(d time.Duration) {
	h.counts[bucketOf(uint64(max(d, 0)/time.Microsecond))]++
	h.n++
	h.sum += d
	h.max = max(h.max, d)
}

func (h *histogram) snapshot() Histogram {
	s := Histogram{Count: h.n, Sum: h.sum, Max: h.max}
	for i, c := range h.counts {
		if c != 0 {
			lo, hi := bucketRange(i)
			s.Buckets = append(s.Buckets, Bucket{Low: time.Duration(lo) * time.Microsecond,
				High: time.Duration(hi) * time.Microsecond, Count: c})
		}
	}
	return s
}

// Histogram is a latency distribution: the non-empty buckets in increasing
// order, with the count, sum and maximum of the times recorded.
type Histogram struct {
	Count   uint64
	Sum     time.Duration
	Max     time.Duration
	Buckets []Bucket
}

// Bucket counts the times in [Low, High).
type Bucket struct {
	Low, High time.Duration
	Count     uint64
}

// Quantile returns the time below which a fraction q of the recorded ones
// fall, as the middle of its bucket (see the error bound above), or 0 when
// nothing was recorded.
func (h Histogram) Quantile(q float64) (time.Duration, error) {
	if math.IsNaN(q) || q < 0 || q > 1 {
		return 0, fmt.Errorf("%w: %v", ErrQuantile, q)
	}
	if h.Count == 0 {
		return 0, nil
	}
	rank := max(uint64(math.Ceil(q*float64(h.Count))), 1)
	var seen uint64
	for _, b := range h.Buckets {
		seen += b.Count
		if seen >= rank {
			if b.High-b.Low <= time.Microsecond {
				return b.Low, nil
			}
			return min((b.Low+b.High)/2, h.Max), nil
		}
	}
	return h.Max, nil
}
