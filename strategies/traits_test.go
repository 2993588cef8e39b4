package strategies

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every registered strategy declares its traits, and a Dynamic one can
// forget: a consumer reading TraitsOf never gets the zero default for one
// of ours, and a new strategy that forgets either fails here.
func TestEveryStrategyDeclares(t *testing.T) {
	for _, name := range Names() {
		s, err := New(name, []int{1, 2})
		require.NoError(t, err)
		assert.Implements(t, (*Declarer)(nil), s, name)
		if _, ok := s.(Dynamic); ok {
			assert.Implements(t, (*Forgetter)(nil), s, name)
		}
		tr := TraitsOf(s)
		if _, ok := s.(Cyclic); ok {
			assert.True(t, tr.IgnoresDone, "%s is Cyclic: its Done must do nothing", name)
		}
		if _, ok := s.(Sampler); ok {
			assert.True(t, tr.IgnoresDone, "%s is a Sampler: its Done must do nothing", name)
		}
	}
}

// undeclared is a strategy that declares nothing.
type undeclared struct{ Strategy }

func TestTraitsOf(t *testing.T) {
	s, err := newSWRR([]int{1, 2})
	require.NoError(t, err)
	require.Equal(t, Traits{}, TraitsOf(undeclared{s}), "nothing declared: nothing promised")
	require.Equal(t, Traits{IgnoresDone: true, IgnoresElapsed: true}, TraitsOf(s), "IgnoresDone implies IgnoresElapsed")

	ch, err := New("consistent-hash", []int{1, 2})
	require.NoError(t, err)
	require.True(t, TraitsOf(ch).Concurrent)
	ss, err := New("consistent-hash", []int{1, 2}, WithSlowStart(PickWindow(8), 0.5, 1))
	require.NoError(t, err)
	require.Equal(t, Traits{IgnoresDone: true, IgnoresElapsed: true}, TraitsOf(ss), "a slow start counts picks: not concurrent")
	lat, err := New("latency", []int{1, 2}, WithSlowStart(PickWindow(8), 0.5, 1))
	require.NoError(t, err)
	require.Equal(t, Traits{}, TraitsOf(lat))
	_, cyclic := ss.(Cyclic)
	require.False(t, cyclic)
}

// traitRun picks n times with keys from seed, keeping up to 8 requests
// pending and completing one at random with elapsed(k) when done says so,
// and returns the picks.
func traitRun(t *testing.T, s Strategy, n int, seed uint64, done bool, elapsed func(k int) time.Duration) []int {
	t.Helper()
	g := rand.New(rand.NewPCG(seed, 9))
	out := make([]int, 0, n)
	var pending []int
	for k := range n {
		// The same draws with Done and without, so the keys are the same.
		if coin, j := g.IntN(2), g.IntN(8); len(pending) > 0 && (len(pending) >= 8 || coin == 0) {
			j %= len(pending)
			if done {
				s.Done(pending[j], elapsed(k))
			}
			pending = slices.Delete(pending, j, j+1)
		}
		i := s.Pick(g.Uint64())
		out = append(out, i)
		pending = append(pending, i)
	}
	return out
}

// TestDeclaredTraits checks each registered strategy's declared traits
// against what it does, with weights 5,1,0,3,2 and requests completing
// late and out of order:
//   - IgnoresElapsed: the picks are the same whatever elapsed Done gets (1
//     ns or up to a second at random); and a strategy that does not
//     declare it picks differently, so that a declaration is not missing.
//   - IgnoresDone: the picks are the same with Done and without; and a
//     strategy that does not declare it picks differently.
//   - Concurrent: 8 goroutines Pick and Done at once (run with -race), and
//     every pick is a member of positive weight.
func TestDeclaredTraits(t *testing.T) {
	w := []int{5, 1, 0, 3, 2}
	build := func(name string) Strategy {
		s, err := New(name, w, WithSeed(3))
		require.NoError(t, err)
		return s
	}
	const n = 5000
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			tr := TraitsOf(build(name))
			short := func(int) time.Duration { return time.Nanosecond }
			varied := func(k int) time.Duration { return time.Duration(1 + (k*7919)%1_000_000_000) }
			a := traitRun(t, build(name), n, 1, true, short)
			b := traitRun(t, build(name), n, 1, true, varied)
			assert.Equal(t, tr.IgnoresElapsed, slices.Equal(a, b), "declares IgnoresElapsed %v; picks the same whatever elapsed: %v", tr.IgnoresElapsed, slices.Equal(a, b))
			c := traitRun(t, build(name), n, 1, false, short)
			assert.Equal(t, tr.IgnoresDone, slices.Equal(a, c), "declares IgnoresDone %v; picks the same without Done: %v", tr.IgnoresDone, slices.Equal(a, c))
			for k, i := range a {
				require.Positive(t, w[i], "pick %d: member %d", k, i)
			}
			if !tr.Concurrent {
				return
			}
			s := build(name)
			var wg sync.WaitGroup
			for gr := range 8 {
				wg.Go(func() {
					for k := range 2000 {
						i := s.Pick(uint64(gr*2000 + k))
						if i < 0 || i >= len(w) || w[i] == 0 {
							assert.Fail(t, "bad pick", "member %d", i)
							return
						}
						s.Done(i, time.Millisecond)
					}
				})
			}
			wg.Wait()
		})
	}
}

// cyclicWeights are the weight vectors the Cyclic and Sampler tests use.
var cyclicWeights = [][]int{{1}, {1, 1, 1}, {3, 1}, {5, 1, 1}, {100, 100, 66, 1}, {4, 0, 2}, {2, 4, 6}, {7, 3, 9, 1, 12}, {0, 6, 0, 9}}

// TestCyclic: from construction, every Cyclic strategy's picks come in
// cycles of Cycle() picks that each give every member its share (weighted
// or even, as the strategy promises), the second and third cycles in the
// same order, and the first in the same order too unless it is iwrr's
// (see Cyclic). Random weight vectors, with random starts where taken,
// are checked besides the fixed ones.
func TestCyclic(t *testing.T) {
	g := rand.New(rand.NewPCG(4, 4))
	sets := slices.Clone(cyclicWeights)
	for range 40 {
		w := make([]int, 1+g.IntN(12))
		for i := range w {
			w[i] = g.IntN(40)
		}
		w[g.IntN(len(w))]++
		sets = append(sets, w)
	}
	for _, name := range Names() {
		for _, w := range sets {
			for _, start := range []bool{false, true} {
				opts := []Option{WithSeed(uint64(len(w)))}
				if start {
					opts = append(opts, WithRandomStart(true))
				}
				s, err := New(name, w, opts...)
				if errors.Is(err, ErrBadOption) {
					continue // no random start for this one
				}
				require.NoError(t, err)
				cy, ok := s.(Cyclic)
				if !ok {
					break
				}
				c := cy.Cycle()
				cycles := make([][]int, 3)
				for k := range cycles {
					for range c {
						cycles[k] = append(cycles[k], s.Pick(uint64(k)))
					}
				}
				live, W := 0, sum(w)
				for _, x := range w {
					if x > 0 {
						live++
					}
				}
				for i, x := range w {
					want := 0
					switch {
					case x == 0:
					case behaviour[name].share == even:
						require.Zero(t, c%live, "%s %v: cycle %d", name, w, c)
						want = c / live
					default:
						require.Zero(t, c*x%W, "%s %v: cycle %d", name, w, c)
						want = c * x / W
					}
					for k, cyc := range cycles {
						require.Equal(t, want, count(cyc, i), "%s %v start %v: member %d in cycle %d of %d picks: %v", name, w, start, i, k, c, cyc)
					}
				}
				require.Equal(t, cycles[1], cycles[2], "%s %v: cycles 2 and 3", name, w)
				if name != "iwrr" {
					require.Equal(t, cycles[0], cycles[1], "%s %v: cycles 1 and 2", name, w)
				}
			}
		}
	}
}

func count(picks []int, i int) (n int) {
	for _, p := range picks {
		if p == i {
			n++
		}
	}
	return n
}

// TestSampler: PickFrom drawing from NewRand, one at a time, gives the
// strategy's own picks, from construction and from the middle of a run;
// 8 goroutines drawing from one AtomicRand at once (run with -race) pick
// with the strategy's shares.
func TestSampler(t *testing.T) {
	for _, name := range Names() {
		for _, w := range cyclicWeights {
			for _, seed := range []uint64{1, 7} {
				s, err := New(name, w, WithSeed(seed))
				require.NoError(t, err)
				sm, ok := s.(Sampler)
				if !ok {
					break
				}
				twin, err := New(name, w, WithSeed(seed))
				require.NoError(t, err)
				for round := range 2 {
					r := sm.NewRand()
					for k := range 3000 {
						require.Equal(t, twin.Pick(0), sm.PickFrom(r), "%s %v seed %d round %d pick %d", name, w, seed, round, k)
					}
					// PickFrom left s where it was: it catches up with its
					// twin by its own picks, and moves on with it; the
					// next NewRand starts there.
					for range 3000 {
						s.Pick(0)
					}
					for range 500 {
						require.Equal(t, twin.Pick(0), s.Pick(0))
					}
				}
			}
		}
		t.Run(fmt.Sprint(name, "/concurrent"), func(t *testing.T) {
			w := []int{5, 0, 3, 1, 1}
			s, err := New(name, w)
			require.NoError(t, err)
			sm, ok := s.(Sampler)
			if !ok {
				t.Skip("not a Sampler")
			}
			r := sm.NewRand()
			counts := make([][]int, 8)
			var wg sync.WaitGroup
			for gr := range counts {
				counts[gr] = make([]int, len(w))
				wg.Go(func() {
					for range 5000 {
						counts[gr][sm.PickFrom(r)]++
					}
				})
			}
			wg.Wait()
			total := make([]int, len(w))
			for _, c := range counts {
				for i, x := range c {
					total[i] += x
				}
			}
			b := behaviour[name]
			for i, x := range w {
				want := 0.0
				switch {
				case x == 0:
				case b.share == even:
					want = 1.0 / 4
				default:
					want = float64(x) / 10
				}
				assert.InDelta(t, want*40000, float64(total[i]), 0.05*40000*want+1, "member %d: %v", i, total)
			}
		})
	}
}
