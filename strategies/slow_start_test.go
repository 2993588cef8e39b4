package strategies

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newSlow(t testing.TB, name string, w []int, win Window, floor, aggr float64, opts ...Option) *SlowStart {
	t.Helper()
	s, err := New(name, w, append(opts, WithSlowStart(win, floor, aggr))...)
	require.NoError(t, err)
	require.IsType(t, (*SlowStart)(nil), s)
	return s.(*SlowStart)
}

// effective returns the wrapped strategy's weights: what the picks follow.
func effective(s *SlowStart) []int {
	in := s.inner.(interface{ Weight(int) int })
	w := make([]int, s.Len())
	for i := range w {
		w[i] = in.Weight(i)
	}
	return w
}

// fakeClock is a clock the test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestSlowStartBadOptions(t *testing.T) {
	clk := &fakeClock{t: time.Unix(0, 0)}
	good := PickWindow(100)
	for _, tc := range []struct {
		what   string
		win    Window
		floor  float64
		aggr   float64
		target error
	}{
		{"zero window", Window{}, 0.1, 1, ErrSlowStartWindow},
		{"no picks", PickWindow(0), 0.1, 1, ErrSlowStartWindow},
		{"negative picks", PickWindow(-5), 0.1, 1, ErrSlowStartWindow},
		{"zero duration", TimeWindow(0, clk.now), 0.1, 1, ErrSlowStartWindow},
		{"negative duration", TimeWindow(-time.Second, clk.now), 0.1, 1, ErrSlowStartWindow},
		{"no clock", TimeWindow(time.Second, nil), 0.1, 1, ErrSlowStartWindow},
		{"floor 0", good, 0, 1, ErrSlowStartFloor},
		{"floor above 1", good, 1.5, 1, ErrSlowStartFloor},
		{"floor NaN", good, nan(), 1, ErrSlowStartFloor},
		{"aggression 0", good, 0.1, 0, ErrSlowStartAggression},
		{"aggression negative", good, 0.1, -1, ErrSlowStartAggression},
		{"aggression NaN", good, 0.1, nan(), ErrSlowStartAggression},
	} {
		_, err := New("swrr", []int{1, 1}, WithSlowStart(tc.win, tc.floor, tc.aggr))
		require.ErrorIs(t, err, tc.target, tc.what)
		require.ErrorIs(t, err, ErrBadOption, tc.what)
	}
	static := func([]int, ...Option) (Strategy, error) { return staticStrategy{}, nil }
	_, err := NewSlowStart(static, []int{1}, good, 0.1, 1)
	require.ErrorIs(t, err, ErrSlowStartNotDynamic)
	require.ErrorIs(t, err, ErrBadOption)
	_, err = New("swrr", []int{MaxWeight/SlowStartScale + 1}, WithSlowStart(good, 0.1, 1))
	require.ErrorIs(t, err, ErrTooLarge)
	_, err = New("swrr", []int{0, 0}, WithSlowStart(good, 0.1, 1))
	require.ErrorIs(t, err, ErrAllZero)
}

func nan() float64 { z := 0.0; return z / z }

type staticStrategy struct{}

func (staticStrategy) Pick(uint64) int         { return 0 }
func (staticStrategy) Done(int, time.Duration) {}

// segmentShares runs n segments of per picks and returns how many of each
// went to member i.
func segmentShares(s Strategy, i, n, per int) []int {
	out := make([]int, n)
	for k := range out {
		for range per {
			j := s.Pick(0)
			s.Done(j, time.Millisecond)
			if j == i {
				out[k]++
			}
		}
	}
	return out
}

// The new member's picks per segment of the window grow, start near
// floor·w/W and end near w/W; after the window it has its share exactly.
func TestSlowStartRampShares(t *testing.T) {
	const window, segs = 6400, 16
	for _, tc := range []struct {
		name  string
		aggr  float64
		slack int // picks a segment may fall below the previous one
	}{
		// iwrr spends a cycle (here about 1300 scaled picks, three
		// segments) in bursts, and weighted-random is random: they get
		// slack where swrr gets none.
		{"swrr", 1, 0}, {"swrr", 2, 0}, {"iwrr", 1, 8}, {"least-requests", 1, 1}, {"weighted-random", 1, 40},
	} {
		s := newSlow(t, tc.name, []int{2, 3, 5}, PickWindow(window), 0.1, tc.aggr, WithSeed(7))
		i, err := s.Add(10) // w/W = 1/2
		require.NoError(t, err)
		require.True(t, s.Ramping(i))
		require.Equal(t, 10, s.Weight(i), "callers see the configured weight")
		sh := segmentShares(s, i, segs, window/segs)
		t.Logf("%s a=%v: %v of %d", tc.name, tc.aggr, sh, window/segs)
		for k := 1; k < segs; k++ {
			require.GreaterOrEqual(t, sh[k]+tc.slack, sh[k-1], "%s: segment %d: %v", tc.name, k, sh)
		}
		per := float64(window / segs)
		first := 0.1 * 10 / (10 + 0.1*10)
		assert.InDelta(t, first, float64(sh[0])/per, 0.08, "%s: first segment near floor·w/W′", tc.name)
		assert.InDelta(t, 0.5, float64(sh[segs-1])/per, 0.06, "%s: last segment near w/W", tc.name)
		require.True(t, s.Ramping(i), "the last step is due at the window's end, taken by the next pick")
		s.Done(s.Pick(0), 0)
		require.False(t, s.Ramping(i))
		require.Equal(t, []int{2 * SlowStartScale, 3 * SlowStartScale, 5 * SlowStartScale, 10 * SlowStartScale}, effective(s), "the ramp ends exactly at the weight")
		after := segmentShares(s, i, 1, 2000)[0]
		assert.InDelta(t, 1000, after, map[bool]float64{true: 2, false: 80}[tc.name != "weighted-random"], tc.name)
	}
}

// Every step is a change of the wrapped swrr, so counted from each one,
// against the effective weights, the lag stays below 2: during ramps that
// overlap, are cut by Remove, re-targeted by SetWeight or restarted by a
// re-admission, and after they end.
func TestSlowStartLagSWRR(t *testing.T) {
	g := rand.New(rand.NewPCG(5, 9))
	worst := 0.0
	for run := range 40 {
		w := make([]int, 2+g.IntN(6))
		for i := range w {
			w[i] = 1 + g.IntN(20)
		}
		window := 200 + g.IntN(3000)
		s := newSlow(t, "swrr", w, PickWindow(window), 0.05+0.9*g.Float64(), 0.5+2*g.Float64())
		cur := effective(s)
		var seg []int
		flush := func() {
			if len(seg) > 0 {
				lag := MaxLag(cur, seg)
				require.Less(t, lag, 2.0, "run %d: effective %v", run, cur)
				worst = max(worst, lag)
			}
			seg = seg[:0]
			cur = effective(s)
		}
		for range 30 {
			switch op, i := g.IntN(4), g.IntN(s.Len()); op {
			case 0:
				_, err := s.Add(1 + g.IntN(20))
				require.NoError(t, err)
			case 1:
				_ = s.Remove(i) // refused for the last member or a removed one
			case 2:
				_ = s.SetWeight(i, g.IntN(3)*(1+g.IntN(20))) // drains a third of the time
			}
			flush()
			for range g.IntN(window / 4) {
				j := s.Pick(0)
				if !equalInts(effective(s), cur) {
					flush() // the step came first: this pick is the new segment's
				}
				seg = append(seg, j)
				require.NoError(t, s.check())
			}
		}
		for range 2 * window {
			j := s.Pick(0)
			if !equalInts(effective(s), cur) {
				flush()
			}
			seg = append(seg, j)
		}
		flush()
	}
	t.Logf("worst lag from a change or step: %.3f", worst)
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
