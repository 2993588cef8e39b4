package dispatcher

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkRoom checks, on the balancer goroutine, the invariants adapt must
// keep: room counts live weighted workers with pending < limit, limits stay
// in [base, depth], and a held request's worker is full.
var seenLimits = map[int]int{}

func checkRoom(d *Dispatcher) error {
	return d.call(func() error {
		b := &d.b
		n := 0
		for i := range b.w {
			s := &b.w[i]
			if s.limit < b.lo || s.limit > b.depth {
				return fmt.Errorf("worker %d limit %d outside [%d, %d]", i, s.limit, b.lo, b.depth)
			}
			if !s.removed {
				seenLimits[s.limit]++
			}
			if b.hasRoom(i) {
				n++
			}
		}
		if n != b.room {
			return fmt.Errorf("room %d, but %d workers have room", b.room, n)
		}
		if b.held != nil && b.w[b.heldW].pending < b.w[b.heldW].limit && !b.w[b.heldW].removed {
			return fmt.Errorf("held for worker %d with pending %d < limit %d", b.heldW, b.w[b.heldW].pending, b.w[b.heldW].limit)
		}
		return nil
	})
}

func TestAdaptKeepsRoom(t *testing.T) {
	for _, strat := range []string{"round-robin", "least-pending"} {
		t.Run(strat, func(t *testing.T) {
			d, err := New(WithWorkers(3), WithStrategyName(strat), WithEngine(Rings), WithQueueBudget(2*time.Millisecond))
			require.NoError(t, err)
			ctx := context.Background()
			empty := func(context.Context) error { return nil }
			slow := func(context.Context) error {
				for s := time.Now(); time.Since(s) < 40*time.Microsecond; {
				}
				return nil
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for g := range 3 {
				wg.Go(func() {
					for k := 0; ; k++ {
						select {
						case <-stop:
							return
						default:
						}
						fn := empty
						if (k/500+g)%2 == 1 {
							fn = slow
						}
						if err := d.Go(ctx, fn); err != nil {
							return
						}
					}
				})
			}
			deadline := time.Now().Add(500 * time.Millisecond)
			rng := rand.New(rand.NewPCG(1, 2))
			var live []int
			for i := range 3 {
				live = append(live, i)
			}
			for time.Now().Before(deadline) {
				switch rng.IntN(5) {
				case 0:
					if i, err := d.AddWorker(1); err == nil {
						live = append(live, i)
					}
				case 1:
					if len(live) > 1 {
						k := rng.IntN(len(live))
						if d.RemoveWorker(live[k]) == nil {
							live = append(live[:k], live[k+1:]...)
						}
					}
				case 2:
					_ = d.SetWeight(live[rng.IntN(len(live))], rng.IntN(2))
				case 3:
					_ = d.Resize(1 + rng.IntN(5))
					live = live[:0]
					s := d.Stats()
					for _, w := range s.Workers {
						if !w.Removed {
							live = append(live, w.Index)
						}
					}
				}
				if err := checkRoom(d); !assert.NoError(t, err) {
					break
				}
				time.Sleep(200 * time.Microsecond)
			}
			close(stop)
			wg.Wait()
			t.Logf("limits seen: %d distinct, 64:%d 256:%d", len(seenLimits), seenLimits[64], seenLimits[256])
			require.NoError(t, d.Close(ctx))
		})
	}
	// The limits moved both ways, or the invariants were never under test.
	assert.GreaterOrEqual(t, len(seenLimits), 2, "limits that moved")
	assert.Positive(t, seenLimits[256], "a worker at the deep limit")
}
