package httpbalancer

import (
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/gobalancer/balancer/strategies"
	"github.com/stretchr/testify/require"
)

// fakeProxy is a proxy over n unreachable targets on a clock the test moves.
func fakeProxy(t *testing.T, strategy string, n int, opts ...Option) (*Proxy, *time.Time) {
	t.Helper()
	var us []*url.URL
	for i := range n {
		u, _ := url.Parse("http://127.0.0.1:" + string(rune('1'+i)))
		us = append(us, u)
	}
	s, err := strategies.New(strategy, strategies.Equal(n))
	require.NoError(t, err)
	p, err := New(us, s, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	now := time.Unix(1000, 0)
	p.cfg.now = func() time.Time { return now }
	return p, &now
}

func (p *Proxy) ejectIndex(i int) {
	p.eject(&attempt{b: p.byIndex[i], start: p.cfg.now()}, errors.New("refused"), false)
}

func (p *Proxy) drainedCount() int {
	n := 0
	for _, b := range p.byIndex {
		if b != nil && b.drained {
			n++
		}
	}
	return n
}

// TestEjectDrainsAndRestores: an ejected backend of a Dynamic strategy is
// drained (never picked) until its time is over, then gets its weight back;
// the last backend cannot be drained and is skipped instead, and the 502
// says why each one is out.
func TestEjectDrainsAndRestores(t *testing.T) {
	p, now := fakeProxy(t, "least-pending", 3, WithEjectFor(time.Second))
	p.ejectIndex(1)
	require.Equal(t, 1, p.drainedCount())
	for range 30 {
		a, err := p.pick(0, 0, nil)
		require.NoError(t, err)
		require.NotEqual(t, 1, a.b.i, "drained backend picked")
		p.done(a, false)
	}

	p.ejectIndex(0)
	p.ejectIndex(2) // the last positive member: refused, so it is only skipped
	require.Equal(t, 2, p.drainedCount())
	_, err := p.pick(0, 0, nil)
	require.ErrorIs(t, err, ErrNoBackend)
	require.Contains(t, err.Error(), "127.0.0.1:3 ejected for 1s more: refused")

	*now = now.Add(time.Second)
	seen := map[int]bool{}
	for range 30 {
		a, err := p.pick(0, 0, nil)
		require.NoError(t, err)
		seen[a.b.i] = true
		p.done(a, false)
	}
	require.Zero(t, p.drainedCount())
	require.Equal(t, map[int]bool{0: true, 1: true, 2: true}, seen, "weights restored")
}

// TestEjectBackoff: each ejection without a success in between doubles the
// time, up to the cap; a success of a request picked after the ejection
// resets it, one picked before does not.
func TestEjectBackoff(t *testing.T) {
	p, now := fakeProxy(t, "least-pending", 2, WithEjectFor(time.Second), WithEjectMax(5*time.Second))
	b := p.byIndex[0]
	var got []time.Duration
	for range 5 {
		p.ejectIndex(0)
		got = append(got, b.ejectedUntil.Sub(*now))
		*now = b.ejectedUntil
	}
	require.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}, got)

	early := &attempt{b: b, start: now.Add(-time.Hour)}
	p.succeeded(early)
	p.ejectIndex(0)
	require.Equal(t, 5*time.Second, b.ejectedUntil.Sub(*now), "a request from before the ejection does not reset")
	*now = b.ejectedUntil
	p.succeeded(&attempt{b: b, start: *now})
	p.ejectIndex(0)
	require.Equal(t, time.Second, b.ejectedUntil.Sub(*now), "a success after re-admission resets")
}

// TestEject5xx: consecutive 5xx eject at the threshold; an answer below 500
// in between starts the count again.
func TestEject5xx(t *testing.T) {
	p, now := fakeProxy(t, "least-pending", 2, WithEject5xx(3))
	b := p.byIndex[0]
	a := &attempt{b: b, start: *now}
	five := func() { p.eject(a, errors.New("status 503"), true) }
	five()
	five()
	p.succeeded(a)
	five()
	five()
	require.True(t, b.serving(*now))
	five()
	require.False(t, b.serving(*now))
	require.Contains(t, b.reason(*now), "3 consecutive 5xx, the last status 503")
}

func TestHistogramBuckets(t *testing.T) {
	for us := uint64(0); us < 1<<20; us = us*9/8 + 1 {
		lo, hi := bucketRange(bucketOf(us))
		require.True(t, lo <= us && us < hi, "%d in [%d, %d)", us, lo, hi)
		if us >= histExact {
			require.LessOrEqual(t, float64(hi-lo)/2, float64(us)/16, "%d: bucket [%d, %d) too wide", us, lo, hi)
		}
	}
	require.Equal(t, histBuckets-1, bucketOf(1<<50), "clamped to the last bucket")
	var h histogram
	for i := 1; i <= 1000; i++ {
		h.record(time.Duration(i) * time.Millisecond)
	}
	s := h.snapshot()
	for _, q := range []float64{0.5, 0.9, 0.99} {
		got, err := s.Quantile(q)
		require.NoError(t, err)
		want := time.Duration(q*1000) * time.Millisecond
		require.InEpsilon(t, float64(want), float64(got), 1.0/16, "q%v", q)
	}
	_, err := s.Quantile(1.5)
	require.ErrorIs(t, err, ErrQuantile)
}

// TestReadmissionKeepsKeys: ejection is weight 0, not removal, so a
// consistent-hash backend gets its own keys back when it is re-admitted,
// and only its keys moved while it was out.
func TestReadmissionKeepsKeys(t *testing.T) {
	p, now := fakeProxy(t, "consistent-hash", 4)
	owners := func() []int {
		var o []int
		for k := range uint64(200) {
			a, err := p.pick(strategies.StringKey(string(rune(k))), 0, nil)
			require.NoError(t, err)
			p.done(a, false)
			o = append(o, a.b.i)
		}
		return o
	}
	before := owners()
	p.ejectIndex(2)
	out := owners()
	for k, o := range before {
		if o != 2 {
			require.Equal(t, o, out[k], "key %d moved off a serving backend", k)
		}
		require.NotEqual(t, 2, out[k])
	}
	*now = now.Add(time.Second)
	require.Equal(t, before, owners())
}

// TestRemoveBesideEjected: removing the only serving backend while the
// other is drained by its ejection is allowed (the strategy, which refuses
// to lose its last positive member, gets the drained one's weight back
// first); requests get 502 until the ejection is over.
func TestRemoveBesideEjected(t *testing.T) {
	p, now := fakeProxy(t, "least-pending", 2)
	p.ejectIndex(1)
	require.NoError(t, p.Remove(p.byIndex[0].url))
	_, err := p.pick(0, 0, nil)
	require.ErrorIs(t, err, ErrNoBackend)
	require.Contains(t, err.Error(), "127.0.0.1:2 ejected for 1s more")
	*now = now.Add(time.Second)
	a, err := p.pick(0, 0, nil)
	require.NoError(t, err)
	require.Equal(t, 1, a.b.i)
}
