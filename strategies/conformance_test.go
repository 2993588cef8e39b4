package strategies

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// share says what distribution a strategy promises when every request
// completes before the next pick.
type share int

const (
	weighted share = iota // shares follow the weights
	even                  // positive members share evenly
	some                  // every positive member gets picks
)

// behaviour lists every registered strategy; a new one must be added here.
var behaviour = map[string]struct {
	share share
	tol   float64 // relative tolerance on each member's share
}{
	"least-pending":   {even, 0.01},
	"round-robin":     {even, 0.01},
	"random":          {even, 0.06},
	"weighted-random": {weighted, 0.06},
	"swrr":            {weighted, 0.01},
	"nginx-swrr":      {weighted, 0.01},
	"iwrr":            {weighted, 0.01},
	"least-requests":  {weighted, 0.01},
	"p2c":             {weighted, 0.06},
	"latency":         {some, 0},
	"consistent-hash": {weighted, 0.35},
	"bounded-hash":    {weighted, 0.35},
}

type checker interface{ check() error }

func TestEveryNameHasABehaviour(t *testing.T) {
	for _, name := range Names() {
		_, ok := behaviour[name]
		assert.True(t, ok, "add %q to behaviour", name)
	}
	assert.Len(t, Names(), len(behaviour))
}

func TestUnknownName(t *testing.T) {
	_, err := New("nope", []int{1})
	require.ErrorIs(t, err, ErrUnknown)
	assert.Contains(t, err.Error(), "swrr")
}

func TestConformance(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			t.Run("errors", func(t *testing.T) { testErrors(t, name) })
			t.Run("single", func(t *testing.T) { testSingle(t, name) })
			t.Run("distribution", func(t *testing.T) { testDistribution(t, name) })
			t.Run("membership", func(t *testing.T) { testMembership(t, name) })
			t.Run("repeatable", func(t *testing.T) { testRepeatable(t, name) })
		})
	}
}

func testErrors(t *testing.T, name string) {
	for _, tc := range []struct {
		weights []int
		want    error
	}{
		{nil, ErrNoMembers},
		{[]int{}, ErrNoMembers},
		{[]int{1, -1}, ErrNegativeWeight},
		{[]int{0, 0}, ErrAllZero},
		{[]int{MaxWeight + 1}, ErrTooLarge},
	} {
		_, err := New(name, tc.weights)
		require.ErrorIs(t, err, tc.want, "weights %v", tc.weights)
	}
}

func testSingle(t *testing.T, name string) {
	s, err := New(name, []int{3})
	require.NoError(t, err)
	for k := range 1000 {
		require.Equal(t, 0, s.Pick(uint64(k)))
		if k%2 == 0 {
			s.Done(0, time.Millisecond)
		}
	}
}

// run picks n times with random keys, completing each request at once, and
// returns the counts per member.
func run(t *testing.T, s Strategy, members, n int, seed uint64) []int {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 3))
	counts := make([]int, members)
	for range n {
		i := s.Pick(r.Uint64())
		require.True(t, i >= 0 && i < members, "pick %d out of range", i)
		counts[i]++
		s.Done(i, time.Millisecond)
	}
	return counts
}

func testDistribution(t *testing.T, name string) {
	b := behaviour[name]
	weights := []int{1, 2, 3, 0, 4}
	s, err := New(name, weights)
	require.NoError(t, err)
	const n = 40000
	counts := run(t, s, len(weights), n, 1)
	require.Zero(t, counts[3], "zero-weight member picked")
	for i, w := range weights {
		if w == 0 {
			continue
		}
		var want float64
		switch b.share {
		case weighted:
			want = float64(w) / 10
		case even:
			want = 0.25
		case some:
			assert.Positive(t, counts[i], "member %d starved", i)
			continue
		}
		got := float64(counts[i]) / n
		assert.InDelta(t, want, got, b.tol*want, "member %d (weight %d): counts %v", i, w, counts)
	}
	if c, ok := s.(checker); ok {
		require.NoError(t, c.check())
	}
}

func testMembership(t *testing.T, name string) {
	s, err := New(name, []int{1, 1, 1})
	require.NoError(t, err)
	d := s.(Dynamic)
	picks := func(n int) []int {
		c := run(t, s, 8, n, uint64(n))
		if ck, ok := s.(checker); ok {
			require.NoError(t, ck.check())
		}
		return c
	}
	picks(300)

	i, err := d.Add(2)
	require.NoError(t, err)
	require.Equal(t, 3, i, "indices are never reused")
	c := picks(3000)
	assert.Positive(t, c[3], "added member never picked")
	// No burst towards the newcomer: it gets at most a fair share plus slack
	// (least-pending and least-requests give a fresh member its catch-up
	// picks, which are bounded by the others' pending counts: none here).
	// (latency, greedy when nothing is pending, is exempt.)
	if behaviour[name].share != some {
		assert.Less(t, c[3], 3000*3/5, "burst towards the added member: %v", c)
	}

	require.NoError(t, d.Remove(0))
	d.Done(0, time.Millisecond) // completions of a removed member are ignored
	c = picks(2000)
	assert.Zero(t, c[0], "removed member picked")
	assert.Positive(t, c[1])

	require.NoError(t, d.SetWeight(1, 0))
	c = picks(2000)
	assert.Zero(t, c[1], "drained member picked")
	require.NoError(t, d.SetWeight(1, 3))
	c = picks(2000)
	assert.Positive(t, c[1], "re-weighted member never picked")

	require.ErrorIs(t, d.Remove(0), ErrNoMember)
	require.ErrorIs(t, d.Remove(99), ErrNoMember)
	require.ErrorIs(t, d.SetWeight(-1, 1), ErrNoMember)
	require.ErrorIs(t, d.SetWeight(2, -1), ErrNegativeWeight)
	_, err = d.Add(-1)
	require.ErrorIs(t, err, ErrNegativeWeight)

	require.NoError(t, d.Remove(2))
	require.NoError(t, d.SetWeight(3, 0))
	require.ErrorIs(t, d.Remove(1), ErrLastMember)
	require.ErrorIs(t, d.SetWeight(1, 0), ErrLastMember)
	c = picks(500)
	assert.Equal(t, 500, c[1], "only member 1 is left: %v", c)

	// A zero-weight newcomer is a member that is never picked.
	z, err := d.Add(0)
	require.NoError(t, err)
	c = picks(500)
	assert.Zero(t, c[z])
}

func testRepeatable(t *testing.T, name string) {
	seq := func() []int {
		s, err := New(name, []int{5, 1, 0, 3, 2}, WithSeed(42))
		require.NoError(t, err)
		out := make([]int, 500)
		for k := range out {
			out[k] = s.Pick(uint64(k) * 0x9e3779b97f4a7c15)
			if k%3 != 0 {
				s.Done(out[k], time.Duration(out[k]+1)*time.Millisecond)
			}
		}
		return out
	}
	require.Equal(t, seq(), seq())
}

func TestErrorsAreSentinels(t *testing.T) {
	_, err := newBoundedHash([]int{1}, WithLoadFactor(1))
	require.ErrorIs(t, err, ErrBadOption)
	_, err = newLatency([]int{1}, WithDecay(0))
	require.ErrorIs(t, err, ErrBadOption)
	_, err = newConsistentHash([]int{1}, WithVirtualNodes(0))
	require.ErrorIs(t, err, ErrBadOption)
	require.False(t, errors.Is(err, ErrUnknown))
}
