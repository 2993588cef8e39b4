package dispatcher_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

// TestResizeChurnReusesIndices: the worker cap counts live workers, and a
// removed worker's index comes back once it has drained. Resize(1000) and
// Resize(2), five times, all succeed (the fifth used to be refused at
// worker 4096, after leaving 104 workers live), and Stats lists at most
// the 1000 indices ever live at once.
func TestResizeChurnReusesIndices(t *testing.T) {
	t.Parallel() // a soak: robust to a shared core, and the package's longest
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		for round := range 5 {
			require.NoError(t, d.Resize(1000), "round %d", round)
			_, err := dispatcher.Do(context.Background(), d, ok(1))
			require.NoError(t, err)
			require.NoError(t, d.Resize(2), "round %d", round)
		}
		s := d.Stats()
		require.LessOrEqual(t, len(s.Workers), 1000)
		live := 0
		for _, w := range s.Workers {
			if !w.Removed {
				live++
			}
		}
		require.Equal(t, 2, live)
		v, err := dispatcher.Do(context.Background(), d, ok(7))
		require.NoError(t, err)
		require.Equal(t, 7, v)
	})
}

// TestAddRemovePairsNeverExhaust: AddWorker/RemoveWorker pairs used to
// fail for good after 4094 with two workers live; now the index of the
// removed one is reused, and requests keep flowing between the pairs.
func TestAddRemovePairsNeverExhaust(t *testing.T) {
	t.Parallel() // a soak: robust to a shared core, and the package's longest
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		ctx := context.Background()
		for k := range 5000 {
			i, err := d.AddWorker(1)
			require.NoError(t, err, "pair %d", k)
			if k%500 == 0 {
				_, err := dispatcher.Do(ctx, d, ok(k))
				require.NoError(t, err)
			}
			require.NoError(t, d.RemoveWorker(i), "pair %d", k)
		}
		require.LessOrEqual(t, len(d.Stats().Workers), 4, "indices bounded by the live workers")
	})
}
