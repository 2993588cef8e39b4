package grpcbalancer

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gobalancer/balancer/strategies"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/balancer"
)

var weightSets = [][]int{{1, 1, 1}, {3, 1}, {5, 1, 1}, {100, 100, 66, 1}, {4, 0, 2}, {2, 4, 6}, {7, 3, 9, 1, 12}}

// lockFreeNames returns the registered strategies that declare a
// lock-free form of the given kind (lfNone: any).
func lockFreeNames(t testing.TB, kind int) []string {
	var names []string
	for _, name := range strategies.Names() {
		k := newCursor(&Config{Strategy: name}).kind
		if k != lfNone && (kind == lfNone || k == kind) {
			names = append(names, name)
		}
	}
	require.NotEmpty(t, names)
	return names
}

func testSelector(t *testing.T, strategy string, weights []int, seed *uint64) *selector {
	t.Helper()
	cfg := &Config{Strategy: strategy, Seed: seed}
	cur := newCursor(cfg)
	require.NotEqual(t, lfNone, cur.kind, strategy)
	sel, ok, err := newSelector(cfg, weights, cur)
	require.NoError(t, err)
	require.True(t, ok, "%s %v replayable", strategy, weights)
	return sel
}

// TestScheduleIsTheStrategy: the replayed schedule is the strategy's own
// sequence: one recorded cycle matches the strategy's first cycle pick for
// pick, and three cycles give the strategy's counts (a strategies.Cyclic
// may order its first cycle differently from the later ones, as iwrr
// does; the others match all three pick for pick, which
// TestScheduleMatchesWholly checks for swrr).
func TestScheduleIsTheStrategy(t *testing.T) {
	for _, name := range lockFreeNames(t, lfSchedule) {
		for _, w := range weightSets {
			t.Run(fmt.Sprint(name, w), func(t *testing.T) {
				sel := testSelector(t, name, w, nil)
				s, err := strategies.New(name, w)
				require.NoError(t, err)
				period := len(sel.sched)
				require.Equal(t, s.(strategies.Cyclic).Cycle(), period)
				got, want := make([]int, len(w)), make([]int, len(w))
				for k := range 3 * period {
					g, st := int(sel.next()), s.Pick(0)
					got[g]++
					want[st]++
					if k < period {
						require.Equal(t, st, g, "pick %d", k)
					}
				}
				require.Equal(t, want, got)
			})
		}
	}
}

// TestScheduleMatchesWholly: swrr's replay is its sequence, pick for pick,
// over three cycles.
func TestScheduleMatchesWholly(t *testing.T) {
	for _, w := range weightSets {
		sel := testSelector(t, "swrr", w, nil)
		s, err := strategies.New("swrr", w)
		require.NoError(t, err)
		for k := range 3 * len(sel.sched) {
			require.Equal(t, s.Pick(0), int(sel.next()), "%v pick %d", w, k)
		}
	}
}

// TestRandomIsTheStrategy: seeded alike, the lock-free random pickers draw
// the strategy's sequence, pick for pick.
func TestRandomIsTheStrategy(t *testing.T) {
	seed := uint64(7)
	for _, name := range lockFreeNames(t, lfSample) {
		for _, w := range weightSets {
			for _, sd := range []*uint64{nil, &seed} {
				opts := []strategies.Option{}
				if sd != nil {
					opts = append(opts, strategies.WithSeed(*sd))
				}
				sel := testSelector(t, name, w, sd)
				s, err := strategies.New(name, w, opts...)
				require.NoError(t, err)
				for k := range 10000 {
					require.Equal(t, s.Pick(0), int(sel.next()), "%s %v pick %d", name, w, k)
				}
			}
		}
	}
}

// countingPicker stands for a READY child and counts its picks.
type countingPicker struct{ n atomic.Int64 }

func (c *countingPicker) Pick(balancer.PickInfo) (balancer.PickResult, error) {
	c.n.Add(1)
	return balancer.PickResult{}, nil
}

// TestLockFreeParallel: 64 goroutines share one picker (run with -race).
// A schedule gives exact shares over whole cycles whatever the
// interleaving, since each pick takes its own position; the random ones
// stay within 5 standard deviations of the strategy's own shares (those
// of 400 000 of its picks). This machine has 2 cores, so 64 goroutines
// interleave rather than run at once.
func TestLockFreeParallel(t *testing.T) {
	const goroutines = 64
	for _, name := range lockFreeNames(t, lfNone) {
		w := []int{5, 0, 3, 1, 1}
		t.Run(name, func(t *testing.T) {
			sel := testSelector(t, name, w, nil)
			children := make([]*countingPicker, len(w))
			p := &lockFreePicker{sel: sel}
			for i := range children {
				children[i] = &countingPicker{}
				p.pickers = append(p.pickers, children[i])
			}
			per := 2000 * len(sel.sched) // whole cycles in total for schedules
			if sel.smp != nil {
				per = 4000
			}
			var wg sync.WaitGroup
			info := balancer.PickInfo{Ctx: context.Background()}
			for range goroutines {
				wg.Go(func() {
					for range per {
						_, err := p.Pick(info)
						assert.NoError(t, err)
					}
				})
			}
			wg.Wait()
			total := float64(goroutines * per)
			share := make([]float64, len(w)) // the strategy's share of each member
			if sel.smp == nil {
				for _, i := range sel.sched {
					share[i] += 1 / float64(len(sel.sched))
				}
			} else {
				s, err := strategies.New(name, w, strategies.WithSeed(99))
				require.NoError(t, err)
				for range 400000 {
					share[s.Pick(0)] += 1.0 / 400000
				}
			}
			for i, c := range children {
				n := float64(c.n.Load())
				if sel.smp == nil {
					require.InDelta(t, total*share[i], n, 1e-6*total, "member %d", i)
					continue
				}
				sd := math.Sqrt(total * share[i] * (1 - share[i]))
				require.InDelta(t, total*share[i], n, 5*sd+1, "member %d", i)
			}
			require.Zero(t, children[1].n.Load(), "weight 0 is never picked")
		})
	}
}
