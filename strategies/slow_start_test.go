package strategies

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/gobalancer/balancer/internal/lag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newSlow(t testing.TB, name string, w []int, win Window, floor, aggr float64, opts ...Option) *slowStart {
	t.Helper()
	s, err := New(name, w, append(opts, WithSlowStart(win, floor, aggr))...)
	require.NoError(t, err)
	require.IsType(t, (*slowStart)(nil), s)
	return s.(*slowStart)
}

// effective returns the wrapped strategy's weights: what the picks follow.
func effective(s *slowStart) []int {
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
		{"zero window", Window{}, 0.1, 1, errSlowStartWindow},
		{"no picks", PickWindow(0), 0.1, 1, errSlowStartWindow},
		{"negative picks", PickWindow(-5), 0.1, 1, errSlowStartWindow},
		{"zero duration", TimeWindow(0, clk.now), 0.1, 1, errSlowStartWindow},
		{"negative duration", TimeWindow(-time.Second, clk.now), 0.1, 1, errSlowStartWindow},
		{"no clock", TimeWindow(time.Second, nil), 0.1, 1, errSlowStartWindow},
		{"floor 0", good, 0, 1, errSlowStartFloor},
		{"floor above 1", good, 1.5, 1, errSlowStartFloor},
		{"floor NaN", good, math.NaN(), 1, errSlowStartFloor},
		{"aggression 0", good, 0.1, 0, errSlowStartAggression},
		{"aggression negative", good, 0.1, -1, errSlowStartAggression},
		{"aggression NaN", good, 0.1, math.NaN(), errSlowStartAggression},
	} {
		_, err := New("swrr", []int{1, 1}, WithSlowStart(tc.win, tc.floor, tc.aggr))
		require.ErrorIs(t, err, tc.target, tc.what)
		require.ErrorIs(t, err, ErrBadOption, tc.what)
	}
	static := func([]int, ...Option) (Strategy, error) { return staticStrategy{}, nil }
	s, err := NewSlowStart(static, []int{1}, good, 0.1, 1)
	require.ErrorIs(t, err, errSlowStartNotDynamic)
	require.ErrorIs(t, err, ErrBadOption)
	require.Nil(t, s, "an untyped nil")
	s, err = NewSlowStart(func(w []int, o ...Option) (Strategy, error) { return newSWRR(w, o...) }, []int{1}, good, 0.1, 1)
	require.NoError(t, err)
	require.IsType(t, &slowStart{}, s)
	_, err = New("swrr", []int{MaxWeight/slowStartScale + 1}, WithSlowStart(good, 0.1, 1))
	require.ErrorIs(t, err, ErrTooLarge)
	_, err = New("swrr", []int{0, 0}, WithSlowStart(good, 0.1, 1))
	require.ErrorIs(t, err, ErrAllZero)
}

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
		require.Equal(t, []int{2 * slowStartScale, 3 * slowStartScale, 5 * slowStartScale, 10 * slowStartScale}, effective(s), "the ramp ends exactly at the weight")
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
				lag := lag.Max(cur, seg)
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
				if !slices.Equal(effective(s), cur) {
					flush() // the step came first: this pick is the new segment's
				}
				seg = append(seg, j)
				require.NoError(t, s.check())
			}
		}
		for range 2 * window {
			j := s.Pick(0)
			if !slices.Equal(effective(s), cur) {
				flush()
			}
			seg = append(seg, j)
		}
		flush()
	}
	t.Logf("worst lag from a change or step: %.3f", worst)
}

// A TimeWindow follows the injected clock only: the ramp stands still while
// it does, steps with it, survives it going back, and ends at the window.
func TestSlowStartTimeWindow(t *testing.T) {
	clk := &fakeClock{t: time.Unix(100, 0)}
	s := newSlow(t, "swrr", []int{1, 1}, TimeWindow(16*time.Second, clk.now), 0.25, 1)
	i, err := s.Add(1)
	require.NoError(t, err)
	at := func() int { s.Pick(0); return effective(s)[i] }
	require.Equal(t, 16, at(), "floor 0.25 of 64")
	clk.t = clk.t.Add(8 * time.Second)
	require.Equal(t, 32, at(), "half the window, linear")
	clk.t = clk.t.Add(-time.Hour)
	require.Equal(t, 32, at(), "a clock that goes back neither ends nor undoes the ramp")
	clk.t = time.Unix(100, 0).Add(16*time.Second - 1)
	require.Equal(t, 60, at(), "step 15 of 16")
	require.True(t, s.Ramping(i))
	clk.t = clk.t.Add(1)
	require.Equal(t, 64, at())
	require.False(t, s.Ramping(i))
}

// Remove, SetWeight and re-admission during a ramp.
func TestSlowStartChanges(t *testing.T) {
	s := newSlow(t, "swrr", []int{4, 4}, PickWindow(160), 0.1, 1)
	require.Equal(t, []int{256, 256}, effective(s), "members at construction do not ramp")
	i, err := s.Add(4)
	require.NoError(t, err)
	require.Equal(t, 26, effective(s)[i], "0.1 of 256, rounded")
	for range 80 {
		s.Pick(0)
	}
	require.NoError(t, s.SetWeight(i, 8))
	require.Equal(t, 8, s.Weight(i))
	require.Equal(t, 224, effective(s)[i], "the ramp goes on at 7/16 of the new weight (step 8 is due, for the next pick)")
	require.NoError(t, s.SetWeight(0, 2), "a member that does not ramp changes at once")
	require.Equal(t, 128, effective(s)[0])
	for range 81 {
		s.Pick(0)
	}
	require.Equal(t, 512, effective(s)[i])

	// Drained and re-admitted: a fresh ramp from the floor.
	require.NoError(t, s.SetWeight(1, 0))
	require.False(t, s.Ramping(1))
	require.NoError(t, s.SetWeight(1, 4))
	require.True(t, s.Ramping(1))
	require.Equal(t, 26, effective(s)[1])
	require.NoError(t, s.SetWeight(1, 0), "drained during its ramp")
	require.False(t, s.Ramping(1))
	require.Equal(t, 0, effective(s)[1])

	j, err := s.Add(1)
	require.NoError(t, err)
	require.NoError(t, s.Remove(j))
	require.False(t, s.Ramping(j), "removed during its ramp")
	require.Equal(t, 0, s.Weight(j))
	require.ErrorIs(t, s.SetWeight(j, 1), ErrNoMember)
	require.ErrorIs(t, s.Remove(j), ErrNoMember)
	require.ErrorIs(t, s.SetWeight(0, MaxWeight/slowStartScale+1), ErrTooLarge)
	_, err = s.Add(-1)
	require.ErrorIs(t, err, ErrNegativeWeight)
	k, err := s.Add(0)
	require.NoError(t, err)
	require.False(t, s.Ramping(k), "nothing to ramp at weight 0")
	for range 400 {
		require.NotEqual(t, j, s.Pick(0))
	}
	require.NoError(t, s.check())
}

// countingDynamic counts the SetWeight calls a wrapped strategy receives.
type countingDynamic struct {
	*leastRequests
	sets int
}

func (c *countingDynamic) SetWeight(i, w int) error { c.sets++; return c.leastRequests.SetWeight(i, w) }

// A ramp costs at most slowStartSteps changes of the wrapped strategy after
// the one that starts it, whatever the window; picks with no ramp change nothing.
// newSlowStart takes any constructor, here a custom one.
func TestSlowStartStepsBounded(t *testing.T) {
	var c *countingDynamic
	build := func(w []int, o ...Option) (Strategy, error) {
		s, err := newLeastRequests(w, o...)
		c = &countingDynamic{leastRequests: s}
		return c, err
	}
	for _, window := range []int{1, 7, 16, 1000, 1 << 16} {
		s, err := newSlowStart(build, []int{1, 2}, PickWindow(window), 0.01, 0.7)
		require.NoError(t, err)
		require.NoError(t, s.SetWeight(0, 0))
		c.sets = 0
		require.NoError(t, s.SetWeight(0, 5))
		for n := 0; s.Ramping(0); n++ {
			s.Done(s.Pick(0), 0)
			require.LessOrEqual(t, n, window, "the ramp outlives its window")
		}
		require.LessOrEqual(t, c.sets, 1+slowStartSteps, "window %d: the re-admission and the steps", window)
		require.Equal(t, 5*slowStartScale, effective(s)[0])
		before := c.sets
		for range 1000 {
			s.Done(s.Pick(0), 0)
		}
		require.Equal(t, before, c.sets, "no ramp, no change")
	}
}

// No allocation per pick, with or without a ramp, on either window.
func TestSlowStartAllocs(t *testing.T) {
	clk := &fakeClock{t: time.Unix(0, 0)}
	for _, win := range []Window{PickWindow(10000), TimeWindow(100*time.Millisecond, clk.now)} {
		for _, name := range []string{"swrr", "least-requests", "weighted-random", "consistent-hash"} {
			s := newSlow(t, name, Equal(64), win, 0.1, 1)
			pick := func() {
				clk.t = clk.t.Add(10 * time.Microsecond)
				s.Done(s.Pick(uint64(clk.t.UnixNano())), time.Millisecond)
			}
			for range 1000 {
				pick() // sizes whatever the wrapped strategy grows lazily
			}
			require.Zero(t, testing.AllocsPerRun(1000, pick), "%s, no ramp", name)
			for i := range 8 {
				_, err := s.Add(1 + i)
				require.NoError(t, err)
			}
			require.Zero(t, testing.AllocsPerRun(20000, pick), "%s, during ramps", name)
			require.False(t, s.Ramping(64), "%s: the ramps took their steps inside the measure", name)
		}
	}
	// The average above hides a step's own cost; swrr's steps allocate
	// nothing either: here every pick takes one.
	s := newSlow(t, "swrr", Equal(64), PickWindow(16), 0.01, 1)
	require.Zero(t, testing.AllocsPerRun(100, func() {
		_, _ = s.SetWeight(3, 0), s.SetWeight(3, 1)
		for range 17 {
			s.Pick(0)
		}
	}))
}

// The wrapper adds no randomness: under a seed, the same changes give the
// same picks.
func TestSlowStartDeterministic(t *testing.T) {
	run := func(seed uint64) []int {
		s := newSlow(t, "p2c", []int{3, 1, 2}, PickWindow(500), 0.1, 1.5, WithSeed(seed))
		var out []int
		for k := range 3000 {
			if k == 100 {
				_, _ = s.Add(4)
			}
			if k == 700 {
				_ = s.SetWeight(1, 0)
			}
			if k == 900 {
				_ = s.SetWeight(1, 1)
			}
			i := s.Pick(0)
			out = append(out, i)
			if k%3 == 0 {
				s.DoneN(i, 1, time.Millisecond)
			}
		}
		return out
	}
	require.Equal(t, run(11), run(11))
	require.NotEqual(t, run(11), run(12))
}

// BenchmarkSlowStartPick measures a swrr pick at 1000 members of weight
// 1..100 bare and wrapped: idle (no ramp), during a ramp whose next step is
// far (PickWindow; TimeWindow on time.Now), and re-ramping one member over
// and over with a window of 16 000 picks, which bills its 17 changes.
//
//	go test -run '^$' -bench 'BenchmarkSlowStartPick' -benchtime 200ms -count 5 ./strategies/
func BenchmarkSlowStartPick(b *testing.B) {
	g := rand.New(rand.NewPCG(1, 1000))
	w := make([]int, 1000)
	for i := range w {
		w[i] = 1 + g.IntN(100)
	}
	for _, tc := range []struct {
		name              string
		win               Window
		wrap, ramp, again bool
	}{
		{"bare", Window{}, false, false, false}, {"idle", PickWindow(min(1<<40, math.MaxInt)), true, false, false},
		{"ramp-picks", PickWindow(min(1<<40, math.MaxInt)), true, true, false},
		{"ramp-time", TimeWindow(time.Hour, time.Now), true, true, false},
		{"re-ramping", PickWindow(16000), true, true, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var s Dynamic
			s, _ = newSWRR(w)
			if tc.wrap {
				s = newSlow(b, "swrr", w, tc.win, 0.1, 1)
			}
			if tc.ramp {
				require.NoError(b, s.SetWeight(0, 0))
				require.NoError(b, s.SetWeight(0, w[0]))
			}
			b.ReportAllocs()
			for b.Loop() {
				s.Pick(0)
				if tc.again && !s.(*slowStart).Ramping(0) {
					_ = s.SetWeight(0, 0)
					_ = s.SetWeight(0, w[0])
				}
			}
		})
	}
}
