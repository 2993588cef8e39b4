package strategies

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Shares of the randomized strategies, with fixed seeds: each within 5
// standard deviations of its expectation.
func TestRandomizedShares(t *testing.T) {
	w := []int{1, 2, 3, 4, 0, 90}
	const n = 200000
	for _, tc := range []struct {
		name string
		want func(i int) float64
	}{
		{"weighted-random", func(i int) float64 { return float64(w[i]) / 100 }},
		{"p2c", func(i int) float64 { return float64(w[i]) / 100 }},
		{"random", func(i int) float64 {
			if w[i] == 0 {
				return 0
			}
			return 0.2
		}},
	} {
		for _, seed := range []uint64{1, 2} {
			s, err := New(tc.name, w, WithSeed(seed))
			require.NoError(t, err)
			counts := make([]int, len(w))
			for range n {
				i := s.Pick(0)
				counts[i]++
				s.Done(i, time.Millisecond)
			}
			for i := range w {
				p := tc.want(i)
				sd := math.Sqrt(p * (1 - p) / n)
				assert.InDelta(t, p, float64(counts[i])/n, 5*sd+1e-9, "%s seed %d member %d: %v", tc.name, seed, i, counts)
			}
		}
	}
}

// The alias table is exact: summing each column's probability mass per
// member gives w_i/W to within the 2^-64 resolution.
func TestAliasTableIsExact(t *testing.T) {
	for _, w := range [][]int{{1, 2, 3, 4}, {7, 0, 1}, {1000000, 1, 1}, Equal(5), {3}} {
		m, err := newMembers(w)
		require.NoError(t, err)
		var tab aliasTable
		tab.build(&m)
		mass := make([]float64, len(w))
		n := float64(len(tab.col))
		for _, c := range tab.col {
			p := float64(c.thr) / (1 << 64)
			if c.thr == ^uint64(0) {
				p = 1
			}
			mass[c.self] += p / n
			mass[c.alias] += (1 - p) / n
		}
		for i := range w {
			assert.InDelta(t, float64(w[i])/float64(sum(w)), mass[i], 1e-12, "%v", w)
		}
	}
}

// p2c sends less to a member that is slow to complete.
func TestP2CAvoidsTheLoadedMember(t *testing.T) {
	s, err := newP2C(Equal(4), WithSeed(3))
	require.NoError(t, err)
	counts := make([]int, 4)
	for range 20000 {
		i := s.Pick(0)
		counts[i]++
		if i != 0 { // member 0 never completes
			s.Done(i, time.Millisecond)
		}
	}
	// It is picked only when both draws land on it: 1/16 instead of 1/4.
	assert.InDelta(t, 20000/16, counts[0], 150, "%v", counts)
}
