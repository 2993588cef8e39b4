package strategies

import (
	"flag"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gobalancer/balancer/internal/lag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Lag from a change: a change (Add, Remove, SetWeight) at pick T sets new
// weights w′ (W′ = Σw′, removed members 0). Counting only the picks after
// it, member i's lag at prefix t is picks_i(t) − t·w′_i/W′, where
// picks_i(t) is how many of the first t picks after the change went to i;
// the lag from the change is the largest |…| over members and prefixes t up
// to the next change. That is lag.Max(w′, picks after the change). "No
// burst" promises it below 2, for swrr and for least-requests: a member owed
// a pick before the change may take it (up to one ahead), plus less than
// one of rounding. least-requests' tie order is swrr's over its idle
// members, and here every pick is completed at once, so its picks are
// swrr's (TestLeastRequestsTiesAreSWRR) and so are its lags: worst 1.986 in
// 20 000 random sequences per strategy (TestLagAfterRandomSequences with
// -lagsequences 20000), 1.934 in TestLagAfterRandomChanges. Before, the
// issue's raises went to 2.6 and 24.4 (49 picks in a row) under swrr and
// 25.4 under least-requests, the worst of 1500 random changes to 18.2 and
// 83.1, and least-requests' midpoint order without windows, once those
// were fixed, still to 3.4.

// smoothAfterChange are the strategies checked.
var smoothAfterChange = []string{"swrr", "least-requests"}

// lagBound is the bound on the lag from a change both promise.
const lagBound = 2.0

var lagSequences = flag.Int("lagsequences", 150, "random change sequences TestLagAfterRandomSequences runs per strategy")

// changeRun drives a strategy through changes, completing every pick at
// once (only the tie order of least-requests is measured), and keeps the
// weights the lag is measured against.
type changeRun struct {
	t         testing.TB
	name      string
	s         Dynamic
	weight    []int  // current weights, 0 for removed members
	forget    bool   // remove forgets the member too
	forgotten []bool // the indices the next Adds may reuse
	reused    int    // Adds that returned a forgotten index
}

func newChangeRun(t testing.TB, name string, w []int) *changeRun {
	s, err := New(name, w)
	require.NoError(t, err)
	return &changeRun{t: t, name: name, s: s.(Dynamic), weight: append([]int(nil), w...), forgotten: make([]bool, len(w))}
}

func (r *changeRun) picks(n int) []int {
	out := make([]int, n)
	for k := range out {
		i := r.s.Pick(0)
		if i < 0 || i >= len(r.weight) || r.weight[i] == 0 {
			require.Failf(r.t, "bad pick", "%s: picked %d, weights %v", r.name, i, r.weight)
		}
		r.s.Done(i, time.Millisecond)
		out[k] = i
	}
	return out
}

// lagAfter returns the lag of the next n picks against the current weights.
func (r *changeRun) lagAfter(n int) float64 {
	p := r.picks(n)
	if c, ok := r.s.(checker); ok {
		require.NoError(r.t, c.check())
	}
	return lag.Max(r.weight, p)
}

func (r *changeRun) add(w int) {
	i, err := r.s.Add(w)
	require.NoError(r.t, err)
	if i < len(r.weight) {
		require.True(r.t, r.forgotten[i], "%s: Add returned %d, which was not forgotten", r.name, i)
		r.forgotten[i] = false
		r.weight[i] = w
		r.reused++
		return
	}
	require.Equal(r.t, len(r.weight), i)
	r.weight = append(r.weight, w)
	r.forgotten = append(r.forgotten, false)
}

// remove removes member i and, when the run forgets, forgets it at once,
// so that the next Add reuses the lowest such index.
func (r *changeRun) remove(i int) bool {
	if r.s.Remove(i) != nil {
		return false
	}
	r.weight[i] = 0
	if r.forget {
		require.NoError(r.t, r.s.(Forgetter).Forget(i))
		r.forgotten[i] = true
	}
	return true
}

func (r *changeRun) setWeight(i, w int) bool {
	if r.weight[i] == 0 && w == 0 {
		return false // a removed member stays removed; zero to zero is no change
	}
	if r.s.SetWeight(i, w) != nil {
		return false
	}
	r.weight[i] = w
	return true
}

// The raises, pinned: swrr's {1,9} after 8 picks (0 0 0 0 1 0 1 …,
// lag 2.6) and {1,99} after 95 (member 0 took 49 picks in a row, lag
// 24.4); least-requests' after 1 pick (2.4 and 25.4: the old turn of a
// raised member held it back) and {60,2,3} raising member 1 after 12 (12.7).
// Every number of picks before the raise, up to two cycles, is tried.
func TestRaiseDoesNotBurst(t *testing.T) {
	for _, tc := range []struct {
		w      []int
		i, to  int
		pinned map[string]int // picks before the raise of the runs
	}{
		{[]int{1, 9}, 0, 7, map[string]int{"swrr": 8, "least-requests": 1}},
		{[]int{1, 99}, 0, 100, map[string]int{"swrr": 95, "least-requests": 1}},
		{[]int{60, 2, 3}, 1, 200, map[string]int{"least-requests": 12}},
	} {
		for _, name := range smoothAfterChange {
			for k := range 2 * sum(tc.w) {
				r := newChangeRun(t, name, tc.w)
				r.picks(k)
				require.True(t, r.setWeight(tc.i, tc.to))
				after := r.picks(3 * sum(r.weight))
				lag := lag.Max(r.weight, after)
				require.Less(t, lag, lagBound, "%s %v, %d picks, SetWeight(%d, %d)", name, tc.w, k, tc.i, tc.to)
				if p, ok := tc.pinned[name]; ok && k == p {
					t.Logf("%s %v, %d picks, SetWeight(%d, %d): lag %.3f, %v…", name, tc.w, k, tc.i, tc.to, lag, after[:8])
				}
			}
		}
	}
	r := newChangeRun(t, "swrr", []int{1, 99})
	r.picks(95)
	require.True(t, r.setWeight(0, 100))
	assert.LessOrEqual(t, longestGap(r.picks(3*199), 1), 2, "member 1 waits while 0 bursts")
}

// 1500 random changes over 2 to 30 members of weight 0..100, with 1 to 2W′
// picks after each: every change's lag stays below 2.
func TestLagAfterRandomChanges(t *testing.T) {
	for _, name := range smoothAfterChange {
		t.Run(name, func(t *testing.T) {
			g := rand.New(rand.NewPCG(21, 3))
			w := make([]int, 2+g.IntN(29))
			for i := range w {
				w[i] = 1 + g.IntN(100)
			}
			r := newChangeRun(t, name, w)
			worst := 0.0
			for change := 0; change < 1500; {
				if !r.change(g.IntN(3), g.IntN(len(r.weight)), g.IntN(101)) {
					continue
				}
				change++
				lag := r.lagAfter(1 + g.IntN(2*sum(r.weight)))
				require.Less(t, lag, lagBound, "change %d, weights %v", change, r.weight)
				worst = max(worst, lag)
			}
			t.Logf("%s: worst lag from a change %.3f", name, worst)
		})
	}
}

// TestLagAfterRandomChanges with every removed member forgotten at once,
// so that Adds reuse indices: a newcomer at a reused index takes its share
// as one at a new index does, and every change's lag stays below 2.
func TestLagAfterRandomChangesReusingIndices(t *testing.T) {
	for _, name := range smoothAfterChange {
		t.Run(name, func(t *testing.T) {
			g := rand.New(rand.NewPCG(22, 3))
			w := make([]int, 2+g.IntN(29))
			for i := range w {
				w[i] = 1 + g.IntN(100)
			}
			r := newChangeRun(t, name, w)
			r.forget = true
			worst := 0.0
			for change := 0; change < 1500; {
				if !r.change(g.IntN(3), g.IntN(len(r.weight)), g.IntN(101)) {
					continue
				}
				change++
				lag := r.lagAfter(1 + g.IntN(2*sum(r.weight)))
				require.Less(t, lag, lagBound, "change %d, weights %v", change, r.weight)
				worst = max(worst, lag)
			}
			t.Logf("%s: worst lag from a change %.3f, %d Adds at a reused index", name, worst, r.reused)
			require.Positive(t, r.reused)
		})
	}
}

// change applies one change: 0 adds a member of weight w (at least 1),
// 1 removes i, 2 sets i's weight to w; it reports whether it was done.
func (r *changeRun) change(op, i, w int) bool {
	live := 0
	for _, x := range r.weight {
		if x > 0 {
			live++
		}
	}
	switch {
	case op == 0 || live < 2 && op == 1:
		if len(r.weight) >= 64 {
			return false
		}
		r.add(max(w, 1))
		return true
	case op == 1:
		return r.weight[i] > 0 && r.remove(i)
	default:
		return r.weight[i] > 0 && r.setWeight(i, w)
	}
}

// FuzzLagAfterChange: the first byte picks the strategy, the next ones up
// to eight initial weights (a 0 byte ends them), the next how many picks
// come before the first change, then each group of four bytes is a change
// (op, member, weight) and the number of picks that follow it, in units of
// W′/8 (up to 4W′). Every change's lag stays below the bound.
func FuzzLagAfterChange(f *testing.F) {
	for k := range smoothAfterChange {
		b := byte(k)
		f.Add([]byte{b, 1, 9, 0, 8, 2, 0, 7, 24})     // the {1,9} raise
		f.Add([]byte{b, 1, 99, 0, 95, 2, 0, 100, 24}) // the {1,99} raise
		f.Add([]byte{b, 5, 3, 2, 0, 10, 0, 0, 4, 8, 1, 0, 0, 8, 2, 1, 1, 6})
		// Light members removed one by one beside a heavy one.
		f.Add([]byte{b, 1, 1, 1, 1, 1, 90, 0, 7, 1, 0, 0, 2, 1, 1, 0, 2, 1, 2, 0, 3, 1, 3, 0, 9})
		// Light members added one by one to a heavy one.
		f.Add([]byte{b, 100, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 3, 2, 0, 1, 20})
		// A heavy member lowered, raised back, and light members re-weighted.
		f.Add([]byte{b, 60, 2, 3, 0, 30, 2, 0, 1, 4, 2, 0, 200, 8, 2, 1, 9, 8, 2, 2, 1, 8})
	}
	f.Fuzz(fuzzLagBody)
}

func fuzzLagBody(t *testing.T, data []byte) { lagSequence(t, data) }

// lagSequence runs one input of FuzzLagAfterChange, failing t if a change's
// lag reaches the bound, and returns the strategy and the worst lag seen (0
// for an input too short to make a change).
func lagSequence(t *testing.T, data []byte) (name string, worst float64) {
	if len(data) < 2 {
		return "", 0
	}
	name = smoothAfterChange[int(data[0])%len(smoothAfterChange)]
	data = data[1:]
	var w []int
	for len(data) > 0 && data[0] != 0 && len(w) < 8 {
		w = append(w, int(data[0]))
		data = data[1:]
	}
	if len(data) > 0 {
		data = data[1:]
	}
	if len(w) == 0 || len(data) == 0 {
		return name, 0
	}
	r := newChangeRun(t, name, w)
	r.picks(int(data[0]) % (2 * sum(w)))
	for data = data[1:]; len(data) >= 4; data = data[4:] {
		if !r.change(int(data[0])%3, int(data[1])%len(r.weight), int(data[2])) {
			continue
		}
		n := 1 + int(data[3]%32)*sum(r.weight)/8
		lag := r.lagAfter(n)
		require.Less(t, lag, lagBound, "%s: weights %v", name, r.weight)
		worst = max(worst, lag)
	}
	return name, worst
}

// Random inputs of FuzzLagAfterChange, -lagsequences of them per strategy
// (150 by default, about a second each under -race): 2 to 8 members of
// weight 1..100 and 12 changes each (weights 0..255), with up to 4W′ picks
// after each. Every change's lag stays below the bound.
//
//	go test -count=1 -run TestLagAfterRandomSequences -v ./strategies/ -args -lagsequences 20000
func TestLagAfterRandomSequences(t *testing.T) {
	for k, name := range smoothAfterChange {
		t.Run(name, func(t *testing.T) {
			g := rand.New(rand.NewPCG(34, 55))
			worst := 0.0
			data := make([]byte, 0, 11+4*12)
			for range *lagSequences {
				data = append(data[:0], byte(k))
				for range 2 + g.IntN(7) {
					data = append(data, byte(1+g.IntN(100)))
				}
				data = append(data, 0, byte(g.IntN(256)))
				for range 12 {
					data = append(data, byte(g.IntN(3)), byte(g.IntN(256)), byte(g.IntN(256)), byte(g.IntN(256)))
				}
				got, lag := lagSequence(t, data)
				require.Equal(t, name, got)
				worst = max(worst, lag)
			}
			t.Logf("%s: worst lag from a change in %d sequences %.3f", name, *lagSequences, worst)
			require.Positive(t, worst, "no change was measured")
		})
	}
}
