package dispatcher_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gobalancer/balancer/dispatcher"
)

// scaleStrategies are the strategies of the scale curves: the heap
// (O(log n) per pick), the cheapest (O(1)) and the smooth weighted one.
var scaleStrategies = []string{"least-pending", "round-robin", "swrr"}

// BenchmarkScaleWorkers is the cost per task against the number of
// workers: one submitter hands b.N empty tasks to Go (a batch), on each
// engine. docs/performance.md plots it.
func BenchmarkScaleWorkers(b *testing.B) {
	for _, e := range engines {
		for _, strategy := range scaleStrategies {
			for _, workers := range []int{1, 2, 8, 64, 512, 4096} {
				b.Run(fmt.Sprintf("engine=%v/strategy=%s/workers=%d", e, strategy, workers), func(b *testing.B) {
					d, err := dispatcher.New(dispatcher.WithEngine(e), dispatcher.WithWorkers(workers),
						dispatcher.WithStrategyName(strategy))
					if err != nil {
						b.Fatal(err)
					}
					defer d.Close(context.Background())
					batch(b, d)
				})
			}
		}
	}
}

// BenchmarkScaleRequesters is the cost per task against the number of
// closed-loop requesters (each waits for its answer before the next), over
// GOMAXPROCS workers, on each engine.
func BenchmarkScaleRequesters(b *testing.B) {
	for _, e := range engines {
		for _, strategy := range scaleStrategies {
			for _, requesters := range []int{1, 64, 1000, 10000} {
				b.Run(fmt.Sprintf("engine=%v/strategy=%s/requesters=%d", e, strategy, requesters), func(b *testing.B) {
					d, err := dispatcher.New(dispatcher.WithEngine(e), dispatcher.WithStrategyName(strategy))
					if err != nil {
						b.Fatal(err)
					}
					defer d.Close(context.Background())
					closedLoopOf(b, d, requesters, tasks["empty"])
				})
			}
		}
	}
}

// batch submits b.N empty tasks with Go and waits for the last.
func batch(b *testing.B, d *dispatcher.Dispatcher) {
	var left atomic.Int64
	left.Store(int64(b.N))
	done := make(chan struct{})
	task := func(context.Context) error {
		if left.Add(-1) == 0 {
			close(done)
		}
		return nil
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := d.Go(ctx, task); err != nil {
			b.Fatal(err)
		}
	}
	<-done
	b.StopTimer()
}

// closedLoopOf is closedLoop with a given number of requesters (at most
// b.N of them, so every requester has at least one request).
func closedLoopOf(b *testing.B, d *dispatcher.Dispatcher, requesters int, task func(context.Context) (int, error)) {
	requesters = max(1, min(requesters, b.N))
	ctx := context.Background()
	var wg sync.WaitGroup
	per := b.N / requesters
	b.ReportAllocs()
	b.ResetTimer()
	for g := range requesters {
		n := per
		if g < b.N%requesters {
			n++
		}
		k := d.Key(uint64(g))
		wg.Go(func() {
			for range n {
				if _, err := dispatcher.Do(ctx, k, task); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
}
