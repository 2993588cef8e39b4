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

func testSelector(t *testing.T, strategy string, weights []int, seed *uint64) *selector {
	t.Helper()
	cfg := &Config{Strategy: strategy, Seed: seed}
	kind := lockFreeKind(strategy)
	sel, ok, err := newSelector(kind, cfg, weights, newCursor(kind, cfg))
	require.NoError(t, err)
	require.True(t, ok, "%s %v replayable", strategy, weights)
	return sel
}

// TestScheduleIsTheStrategy: the replayed schedule is the strategy's own
// sequence. round-robin and swrr are periodic from their initial state, so
// three periods match pick for pick; iwrr's first cycle may order members
// differently from the later ones (a member's place in the next cycle is
// where it ran out of credit), so it matches its first cycle and every
// whole number of cycles gives the strategy's counts.
func TestScheduleIsTheStrategy(t *testing.T) {
	for _, name := range []string{"round-robin", "swrr", "iwrr"} {
		for _, w := range weightSets {
			t.Run(fmt.Sprint(name, w), func(t *testing.T) {
				sel := testSelector(t, name, w, nil)
				s, err := strategies.New(name, w)
				require.NoError(t, err)
				period := len(sel.sched)
				got, want := make([]int, len(w)), make([]int, len(w))
				for k := range 3 * period {
					g, st := int(sel.next()), s.Pick(0)
					got[g]++
					want[st]++
					if name != "iwrr" || k < period {
						require.Equal(t, st, g, "pick %d", k)
					}
				}
				require.Equal(t, want, got)
			})
		}
	}
}

// TestRandomIsTheStrategy: seeded alike, the lock-free random pickers draw
// the strategy's sequence, pick for pick (this pins the generator and the
// alias table to the strategies package's).
func TestRandomIsTheStrategy(t *testing.T) {
	seed := uint64(7)
	for _, name := range []string{"random", "weighted-random"} {
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
// A schedule gives exact shares over whole periods whatever the
// interleaving, since each pick takes its own position; the random ones
// stay within 5 standard deviations of w_i/W. This machine has 2 cores, so
// 64 goroutines interleave rather than run at once.
func TestLockFreeParallel(t *testing.T) {
	const goroutines = 64
	for _, name := range []string{"round-robin", "iwrr", "swrr", "random", "weighted-random"} {
		w := []int{5, 0, 3, 1, 1}
		t.Run(name, func(t *testing.T) {
			sel := testSelector(t, name, w, nil)
			children := make([]*countingPicker, len(w))
			p := &lockFreePicker{sel: sel}
			for i := range children {
				children[i] = &countingPicker{}
				p.pickers = append(p.pickers, children[i])
			}
			per := 2000 * len(sel.sched) // whole periods in total for schedules
			if name == "random" || name == "weighted-random" {
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
			share := func(i int) float64 { // the strategy's share of member i
				switch {
				case w[i] == 0:
					return 0
				case name == "round-robin" || name == "random":
					return 1.0 / 4
				}
				return float64(w[i]) / 10
			}
			for i, c := range children {
				n := float64(c.n.Load())
				if sel.kind == lfSchedule {
					require.Equal(t, total*share(i), n, "member %d", i)
					continue
				}
				sd := math.Sqrt(total * share(i) * (1 - share(i)))
				require.InDelta(t, total*share(i), n, 5*sd+1, "member %d", i)
			}
		})
	}
}
