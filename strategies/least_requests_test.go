package strategies

import (
	"math/rand/v2"
	"testing"

	"github.com/gobalancer/balancer/internal/lag"
	"github.com/stretchr/testify/require"
)

// With every pick completed before the next, least-requests picks exactly
// what swrr picks, through random membership changes (index reuse
// included), on swrr's packed keys
// and on its wide path: its tie order is swrr's, so swrr's lag bounds hold
// for it.
func TestLeastRequestsTiesAreSWRR(t *testing.T) {
	g := rand.New(rand.NewPCG(5, 5))
	forget := rand.New(rand.NewPCG(6, 6)) // half the removed members are forgotten: Adds reuse their indices
	for round := range 30 {
		n, wmin, wmax := 1+g.IntN(20), 0, 50
		if round == 0 {
			n, wmin, wmax = 256, MaxWeight/2, MaxWeight // W above 2^27: swrr's wide path
		}
		w := make([]int, n)
		for i := range w {
			w[i] = wmin + g.IntN(wmax-wmin+1)
		}
		w[0]++
		lr, err := newLeastRequests(w)
		require.NoError(t, err)
		sw, err := newSWRR(w)
		require.NoError(t, err)
		require.Equal(t, round == 0, lr.tie.wide, "round %d", round)
		for k := range 2000 {
			i := lr.Pick(0)
			require.Equal(t, sw.Pick(0), i, "round %d pick %d", round, k)
			lr.Done(i, 0)
			if k%97 != 0 {
				continue
			}
			j, nw := g.IntN(lr.Len()), g.IntN(wmax+1)
			switch g.IntN(3) {
			case 0:
				a, errA := lr.Add(nw)
				b, errB := sw.Add(nw)
				require.Equal(t, b, a)
				require.Equal(t, errB == nil, errA == nil)
			case 1:
				removed := sw.Remove(j) == nil
				require.Equal(t, removed, lr.Remove(j) == nil)
				if removed && forget.IntN(2) == 0 {
					require.NoError(t, sw.Forget(j))
					require.NoError(t, lr.Forget(j))
				}
			default:
				require.Equal(t, sw.SetWeight(j, nw) == nil, lr.SetWeight(j, nw) == nil)
			}
		}
		require.NoError(t, lr.check())
	}
}

// Against a model, with requests completed late and in any order: a pick is
// a member with nothing pending whenever there is one, else one with the
// lowest pending/weight. The run alternates between completing slower and
// faster than it picks, so that busy members are held out of swrr's order
// and rejoin it, every member is sometimes busy, and membership changes and
// moves of swrr's key base come in between.
func TestLeastRequestsFewestPendingWins(t *testing.T) {
	for _, tc := range []struct {
		name          string
		n, wmin, wmax int
		picks         int
	}{{"packed", 30, 0, 9, 4000}, {"wide", 160, MaxWeight - 1000, MaxWeight, 2000}} {
		t.Run(tc.name, func(t *testing.T) {
			g := rand.New(rand.NewPCG(9, uint64(tc.n)))
			weight := make([]int, tc.n) // 0 for removed members
			for i := range weight {
				weight[i] = tc.wmin + g.IntN(tc.wmax-tc.wmin+1)
			}
			weight[0]++
			s, err := newLeastRequests(weight)
			require.NoError(t, err)
			require.Equal(t, tc.wmin > 0, s.tie.wide)
			var out []int
			held, allBusy := 0, 0
			for k := range tc.picks {
				i := s.Pick(0)
				require.Positive(t, weight[i], "pick %d: member %d", k, i)
				pi := s.Pending(i) - 1 // before this pick
				if pi > 0 {
					allBusy++
				}
				for j, wj := range weight {
					pj := s.Pending(j)
					if j == i || wj == 0 {
						continue
					}
					// pi/wi ≤ pj/wj, without division.
					require.LessOrEqual(t, pi*wj, pj*weight[i], "pick %d: member %d (%d pending) over %d (%d)", k, i, pi, j, pj)
				}
				out = append(out, i)
				for len(out) > 0 && g.IntN(4) < 1+2*(k/(2*tc.n)%2) {
					j := g.IntN(len(out))
					s.Done(out[j], 0)
					out = append(out[:j], out[j+1:]...)
				}
				if k%211 == 0 {
					i, nw := g.IntN(len(weight)), tc.wmin+g.IntN(tc.wmax-tc.wmin+1)
					switch g.IntN(3) {
					case 0:
						_, err := s.Add(nw)
						require.NoError(t, err)
						weight = append(weight, nw)
					case 1:
						if s.Remove(i) == nil {
							weight[i] = 0
						}
					default:
						if weight[i] > 0 && s.SetWeight(i, nw) == nil {
							weight[i] = nw
						}
					}
				}
				if k%50 == 0 && !s.tie.wide {
					s.tie.rebaseAt = s.tie.t // the next tie pick moves the base
				}
				for j := range weight {
					if s.tie.eligible(j) && !s.tie.on[j] {
						held++
					}
				}
				// check is O(n): sparsely on the wide run, so the test stays
				// fast under -race.
				if tc.n < 100 || k%50 == 0 {
					require.NoError(t, s.check(), "pick %d", k)
				}
			}
			require.Positive(t, held, "nobody was held out of the tie order")
			require.Positive(t, allBusy, "never a pick among busy members only")
		})
	}
}

// A member busy while the others took 1000 picks resumes its share when it
// is idle again, in a fresh window, instead of taking the turns it missed in
// a burst (its old window is some 2000 slots behind the clock). Its return
// is a change of the idle members, and the lag from it stays below 2 as
// from any change: the others, alone meanwhile, are at the start of their
// windows, so the newcomer may take two picks in a row (lag 1).
func TestLeastRequestsBusyMemberDoesNotBurst(t *testing.T) {
	w := []int{5, 1, 2, 2}
	s, err := newLeastRequests(w)
	require.NoError(t, err)
	stuck := s.Pick(0)
	for range 1000 {
		i := s.Pick(0)
		require.NotEqual(t, stuck, i, "busy member picked while others are idle")
		s.Done(i, 0)
	}
	s.Done(stuck, 0)
	p := make([]int, 4*sum(w))
	for k := range p {
		p[k] = s.Pick(0)
		s.Done(p[k], 0)
	}
	require.Less(t, lag.Max(w, p), 2.0, "picks after the busy member's return: %v", p)
	require.NoError(t, s.check())
}
