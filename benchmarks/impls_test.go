package benchmarks

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestImplementations runs every implementation through both entry points
// on a few tasks of each kind and checks that each task ran exactly once.
func TestImplementations(t *testing.T) {
	for _, im := range Impls {
		t.Run(im.Name, func(t *testing.T) {
			t.Parallel()
			for _, kind := range Kinds {
				task := Task(kind)
				var ran atomic.Int64
				p := im.New(2, func() { task(); ran.Add(1) })
				const n = 50
				var wg sync.WaitGroup
				for range n {
					wg.Go(p.Do)
				}
				wg.Wait()
				if got := ran.Load(); got != n {
					t.Fatalf("%s: Do ran %d of %d tasks", kind, got, n)
				}
				for range n {
					p.Go()
				}
				p.Close()
				if got := ran.Load(); got != 2*n {
					t.Fatalf("%s: Go then Close ran %d of %d tasks", kind, got, 2*n)
				}
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	d := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 5}, {0.99, 10}, {0.1, 1}, {1, 10}} {
		if got := Percentile(d, c.q); got != c.want {
			t.Errorf("Percentile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
}
