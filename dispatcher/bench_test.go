package dispatcher_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/gobalancer/balancer/dispatcher"
)

// spin burns CPU for about d without sleeping, so tasks are real work.
func spin(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

// closedLoop runs b.N requests from 64 requesters that each wait for their
// answer before the next, as in Pike's demo.
func closedLoop(b *testing.B, d *dispatcher.Dispatcher[int], task dispatcher.Task[int]) {
	const requesters = 64
	ctx := context.Background()
	var wg sync.WaitGroup
	per := b.N / requesters
	b.ReportAllocs()
	b.ResetTimer()
	for g := range requesters {
		n := per
		if g == 0 {
			n += b.N % requesters
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				if _, err := d.Do(ctx, task); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
}

func BenchmarkDispatch(b *testing.B) {
	tasks := map[string]dispatcher.Task[int]{
		"empty": func(context.Context) (int, error) { return 1, nil },
		"1us":   func(context.Context) (int, error) { spin(time.Microsecond); return 1, nil },
	}
	for _, strategy := range []string{"least-pending", "round-robin"} {
		for _, workers := range []int{runtime.GOMAXPROCS(0), 8} {
			for _, task := range []string{"empty", "1us"} {
				name := fmt.Sprintf("strategy=%s/workers=%d/task=%s", strategy, workers, task)
				b.Run(name, func(b *testing.B) {
					d, err := dispatcher.New[int](dispatcher.WithWorkers(workers), dispatcher.WithStrategyName(strategy))
					if err != nil {
						b.Fatal(err)
					}
					defer d.Close(context.Background())
					closedLoop(b, d, tasks[task])
				})
			}
		}
	}
}

// BenchmarkCompletion settles seed 004's question: is an unbuffered
// completion channel faster than a buffered one?
func BenchmarkCompletion(b *testing.B) {
	task := func(context.Context) (int, error) { spin(time.Microsecond); return 1, nil }
	for _, done := range []struct {
		name string
		buf  int
	}{{"unbuffered", 0}, {"buffered", runtime.GOMAXPROCS(0)}} {
		for _, wbuf := range []int{0, 63} {
			b.Run(fmt.Sprintf("done=%s/queue=%d", done.name, wbuf+1), func(b *testing.B) {
				d, err := dispatcher.New[int](dispatcher.WithCompletionBuffer(done.buf), dispatcher.WithWorkerBuffer(wbuf))
				if err != nil {
					b.Fatal(err)
				}
				defer d.Close(context.Background())
				closedLoop(b, d, task)
			})
		}
	}
}
