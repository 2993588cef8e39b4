package strategies

import (
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/gobalancer/balancer/internal/lag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nginxBurstBound is what the tests hold nginx-swrr's lag from a change to
// (see change_lag_test.go for the measure). It is no promise, only a
// tripwire well above what the rule gives and far below what a burst of a
// naive rule gives (keeping the current weights unscaled: lag 25 and more on
// the first case of TestNginxSWRRNoBurstAfterChange).
const nginxBurstBound = 3.0

// nginxFrom is nginx's loop (see nginxReference) from given current
// weights, which it updates.
func nginxFrom(weights, current []int, picks int) []int {
	out := make([]int, picks)
	for k := range out {
		best, total := -1, 0
		for i, w := range weights {
			if w == 0 {
				continue
			}
			current[i] += w
			total += w
			if best == -1 || current[i] > current[best] {
				best = i
			}
		}
		current[best] -= total
		out[k] = best
	}
	return out
}

// Adding a member of weight W doubles W, so the debts in picks carry over
// with no rounding: the old current weights double, the newcomer's is 0,
// and from there the picks are nginx's.
func TestNginxSWRRAddKeepsDebtInPicks(t *testing.T) {
	w := []int{5, 1, 1}
	for k := range 2 * sum(w) {
		cur := make([]int, len(w))
		before := nginxFrom(w, cur, k)
		for i := range cur {
			cur[i] *= 2
		}
		w2 := append(append([]int(nil), w...), sum(w))
		want := append(before, nginxFrom(w2, append(cur, 0), 3*sum(w2))...)

		s, err := newNginxSWRR(w)
		require.NoError(t, err)
		got := picksOf(s, k)
		_, err = s.Add(sum(w))
		require.NoError(t, err)
		got = append(got, picksOf(s, 3*sum(w2))...)
		require.Equal(t, want, got, "Add after %d picks", k)
	}
}

// Every change keeps each member's debt, cw/W, less an even share of what
// the leavers were owed, to within one unit of the new W, and the current
// weights sum to 0: checked exactly, in rationals, over random changes.
func TestNginxSWRRRescaleRule(t *testing.T) {
	g := rand.New(rand.NewPCG(3, 14))
	r := newChangeRun(t, "nginx-swrr", []int{40, 1, 7, 7, 100})
	s := r.s.(*nginxSWRR)
	for change := 0; change < 400; {
		r.picks(g.IntN(300))
		oldW := int64(s.total)
		owed := map[int32]*big.Rat{}
		for k, x := range s.cw {
			owed[s.id[k]] = big.NewRat(min(max(x, -nginxCarry*oldW), nginxCarry*oldW), oldW)
		}
		if !r.change(g.IntN(3), g.IntN(len(r.weight)), g.IntN(120)) {
			continue
		}
		change++
		require.NoError(t, s.check())
		carried := new(big.Rat) // what the members that stay are owed, newcomers nothing
		for _, id := range s.id {
			if o, ok := owed[id]; ok {
				carried.Add(carried, o)
			}
		}
		share := new(big.Rat).Quo(carried, big.NewRat(-int64(len(s.cw)), 1))
		for k, x := range s.cw {
			want := new(big.Rat)
			if o, ok := owed[s.id[k]]; ok {
				want.Set(o)
			}
			want.Add(want, share)
			want.Mul(want, big.NewRat(int64(s.total), 1)) // in units of 1/W′
			diff := new(big.Rat).Sub(big.NewRat(x, 1), want)
			require.Equal(t, -1, diff.Abs(diff).Cmp(big.NewRat(1, 1)),
				"change %d, member %d: current weight %d, wanted %s", change, s.id[k], x, want.FloatString(3))
		}
	}
}

// Debts beyond nginxCarry picks, which only changes can pile up, are cut
// to it at the next change, and the current weights still sum to 0.
func TestNginxSWRRCarryIsBounded(t *testing.T) {
	s, err := newNginxSWRR([]int{3, 1, 1, 5})
	require.NoError(t, err)
	W := int64(s.total)
	copy(s.cw, []int64{9 * W, -4 * W, 1, -5*W - 1})
	require.NoError(t, s.SetWeight(1, 2))
	// Cut to ±2W: 20 −20 1 −20, sum C = −19; (cw − C/4)·11/10 is 27.225
	// −16.775 6.325 −16.775; the floors lose one unit, which goes to the
	// largest remainder, member 2's.
	assert.Equal(t, []int64{27, -17, 7, -17}, s.cw)
	require.NoError(t, s.check())
}

// No burst after a change: the lag of the picks after it, against the new
// weights, stays below nginxBurstBound, whatever the number of picks before.
func TestNginxSWRRNoBurstAfterChange(t *testing.T) {
	for _, tc := range []struct {
		w     []int
		op    int // 1 Remove, 2 SetWeight
		i, to int
	}{
		{[]int{100, 1, 1}, 1, 0, 0},   // the heavy member leaves
		{[]int{1, 99}, 2, 0, 100},     // swrr's issue's raises
		{[]int{1, 9}, 2, 0, 7},        //
		{[]int{60, 2, 3}, 2, 1, 200},  //
		{[]int{1, 1, 1, 97}, 2, 3, 0}, // the heavy member drained
		{[]int{50, 50, 1}, 2, 0, 1},   // a heavy member lowered
	} {
		worst := 0.0
		for k := range 2 * sum(tc.w) {
			r := newChangeRun(t, "nginx-swrr", tc.w)
			r.picks(k)
			require.True(t, r.change(tc.op, tc.i, tc.to))
			after := r.picks(3 * sum(r.weight))
			lag := lag.Max(r.weight, after)
			require.Less(t, lag, nginxBurstBound, "%v, %d picks, change %d(%d, %d)", tc.w, k, tc.op, tc.i, tc.to)
			worst = max(worst, lag)
			if k == 0 && tc.op == 1 {
				continue // nothing picked, so nothing owed: no test of the rule
			}
			if tc.w[0] == 100 && tc.op == 1 {
				// The two light members are up to 100 apart in current weight
				// when the heavy one leaves: scaled to W′ = 2 that is at most
				// one pick, and they alternate at once.
				assert.LessOrEqual(t, max(longestRun(after, 1), longestRun(after, 2)), 2, "after %d picks: %v", k, after)
			}
		}
		t.Logf("%v, change %d(%d, %d) after any number of picks: worst lag from it %.3f", tc.w, tc.op, tc.i, tc.to, worst)
	}
}

// longestRun is the most picks in a row of member m.
func longestRun(picks []int, m int) int {
	run, best := 0, 0
	for _, i := range picks {
		if i != m {
			run = 0
			continue
		}
		run++
		best = max(best, run)
	}
	return best
}

// Random changes over 2 to 30 members, with 1 to 2W′ picks after each, as
// TestLagAfterRandomChanges does for swrr: every change's lag stays below
// the tripwire.
func TestNginxSWRRLagAfterRandomChanges(t *testing.T) {
	g := rand.New(rand.NewPCG(21, 3))
	worst := 0.0
	for range 4 {
		w := make([]int, 2+g.IntN(29))
		for i := range w {
			w[i] = 1 + g.IntN(100)
		}
		r := newChangeRun(t, "nginx-swrr", w)
		for change := 0; change < 1000; {
			if !r.change(g.IntN(3), g.IntN(len(r.weight)), g.IntN(101)) {
				continue
			}
			change++
			lag := r.lagAfter(1 + g.IntN(2*sum(r.weight)))
			require.Less(t, lag, nginxBurstBound, "change %d, weights %v", change, r.weight)
			worst = max(worst, lag)
		}
	}
	t.Logf("nginx-swrr: worst lag from a change %.3f", worst)
}

// A change on every pick resets nobody: with one member flapping between
// two weights at each pick, the others still get their shares.
func TestNginxSWRRFlappingStarvesNobody(t *testing.T) {
	w := []int{10, 3, 1, 1}
	s, err := newNginxSWRR(w)
	require.NoError(t, err)
	counts := make([]int, len(w))
	const n = 20000
	for k := range n {
		require.NoError(t, s.SetWeight(0, 10+10*(k%2)))
		counts[s.Pick(0)]++
	}
	// Each pick's share is w/W for the weights of the moment, 10/15 or 20/25
	// for member 0.
	for i, want := range []float64{(10.0/15 + 20.0/25) / 2, (3.0/15 + 3.0/25) / 2, (1.0/15 + 1.0/25) / 2, (1.0/15 + 1.0/25) / 2} {
		assert.InDelta(t, want, float64(counts[i])/n, 0.1*want, "member %d: %v", i, counts)
	}
	require.NoError(t, s.check())
}
