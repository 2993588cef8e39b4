package dispatcher_test

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

// TestStatsAfterStopIsACopy: Stats "returns a snapshot". Before the
// dispatcher stops every call gets its own Workers slice; after it stops
// every call returns the same final Stats by value, so all callers share
// one Workers backing array: a caller that sorts or edits its snapshot
// changes what every later Stats reports (and two callers doing so race).
func TestStatsAfterStopIsACopy(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d, err := dispatcher.New(dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		require.NoError(t, err)
		for i := range 10 {
			_, err := dispatcher.Do(context.Background(), d, ok(i))
			require.NoError(t, err)
		}
		closeWithin(t, d, 10*time.Second)
		s1 := d.Stats()
		want := s1.Workers[0].Completed
		s1.Workers[0].Completed = 12345 // the caller's own snapshot
		s1.Workers[0].Index = 99
		s2 := d.Stats()
		require.Equal(t, want, s2.Workers[0].Completed, "editing one Stats result after stop changed the next one")
		require.Equal(t, 0, s2.Workers[0].Index)
	})
}

// TestStatsAfterStopConcurrentSort: two goroutines each sort their
// own snapshot after stop. Run with -race: they write one shared array.
func TestStatsAfterStopConcurrentSort(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d, err := dispatcher.New(dispatcher.WithEngine(eng), dispatcher.WithWorkers(8))
		require.NoError(t, err)
		for i := range 50 {
			_, err := dispatcher.Do(context.Background(), d, ok(i))
			require.NoError(t, err)
		}
		closeWithin(t, d, 10*time.Second)
		var wg sync.WaitGroup
		for g := range 2 {
			wg.Go(func() {
				s := d.Stats()
				sort.Slice(s.Workers, func(i, j int) bool {
					if g == 0 {
						return s.Workers[i].Index > s.Workers[j].Index
					}
					return s.Workers[i].Index < s.Workers[j].Index
				})
			})
		}
		wg.Wait()
		s := d.Stats()
		for i, w := range s.Workers {
			require.Equal(t, i, w.Index, "Workers[%d] of the final Stats after two callers sorted their snapshots", i)
		}
	})
}
