package dispatcher_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gobalancer/balancer/dispatcher"
	"github.com/gobalancer/balancer/strategies"
)

// spin burns CPU for about d without sleeping, so tasks are real work.
func spin(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

// closedLoop runs b.N requests from 64 requesters that each wait for their
// answer before the next, as in Pike's demo. Requester g uses routing key
// g, so affinity strategies spread the requesters instead of sending every
// request to the worker of key 0.
func closedLoop(b *testing.B, d *dispatcher.Dispatcher, task func(context.Context) (int, error)) {
	closedLoopOf(b, d, 64, task)
}

var tasks = map[string]func(context.Context) (int, error){
	"empty": func(context.Context) (int, error) { return 1, nil },
	"1us":   func(context.Context) (int, error) { spin(time.Microsecond); return 1, nil },
}

// BenchmarkDispatch: every registered strategy under 64 closed-loop
// requesters, with GOMAXPROCS and 8 workers, empty and 1 µs tasks.
func BenchmarkDispatch(b *testing.B) {
	for _, strategy := range strategies.Names() {
		for _, workers := range []int{runtime.GOMAXPROCS(0), 8} {
			for _, task := range []string{"empty", "1us"} {
				name := fmt.Sprintf("strategy=%s/workers=%d/task=%s", strategy, workers, task)
				b.Run(name, func(b *testing.B) {
					d, err := dispatcher.New(dispatcher.WithWorkers(workers), dispatcher.WithStrategyName(strategy))
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

// BenchmarkCompletion: what the channel engine's completion channel costs,
// unbuffered (Pike's: a worker waits for the balancer after each task)
// against buffered with one slot per worker and with a slot per pending
// request (workers × 64, the default), for empty tasks under 64
// closed-loop requesters. Rings has no completion channel, so it
// has no cell here; BenchmarkDispatch measures it.
func BenchmarkCompletion(b *testing.B) {
	for _, workers := range []int{1, 2, 8} {
		for _, done := range []struct {
			name string
			n    int
		}{{"unbuffered", 0}, {fmt.Sprintf("buffered-%d", workers), workers}, {fmt.Sprintf("buffered-%d", 64*workers), 64 * workers}} {
			b.Run(fmt.Sprintf("engine=channels/done=%s/workers=%d", done.name, workers), func(b *testing.B) {
				d, err := dispatcher.New(dispatcher.WithEngine(dispatcher.Channels), dispatcher.WithWorkers(workers), dispatcher.WithCompletionBuffer(done.n))
				if err != nil {
					b.Fatal(err)
				}
				defer d.Close(context.Background())
				closedLoop(b, d, tasks["empty"])
			})
		}
	}
}

// BenchmarkDepth: how deep worker queues should be (WithWorkerBuffer is
// depth − 1), for 1 µs tasks under 64 closed-loop requesters.
func BenchmarkDepth(b *testing.B) {
	for _, depth := range []int{1, 4, 16, 64, 256} {
		b.Run(fmt.Sprintf("depth=%d/task=1us", depth), func(b *testing.B) {
			d, err := dispatcher.New(dispatcher.WithWorkerBuffer(depth - 1))
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close(context.Background())
			closedLoop(b, d, tasks["1us"])
		})
	}
}

// BenchmarkCeiling is the throughput ceiling of the balancer goroutine:
// one submitter hands b.N empty tasks to Go as fast as it can, and ns/op is
// the wall time per dispatched task (req/s its inverse). The submitter,
// the balancer and the workers share GOMAXPROCS cores, so on a small
// machine more workers mean less CPU for the balancer.
func BenchmarkCeiling(b *testing.B) {
	for _, workers := range []int{1, 2, 4, 8, 16, 32, 64} {
		for _, strategy := range []string{strategies.Default, "round-robin"} {
			b.Run(fmt.Sprintf("strategy=%s/workers=%d", strategy, workers), func(b *testing.B) {
				d, err := dispatcher.New(dispatcher.WithWorkers(workers), dispatcher.WithStrategyName(strategy))
				if err != nil {
					b.Fatal(err)
				}
				defer d.Close(context.Background())
				start := time.Now()
				batch(b, d)
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
			})
		}
	}
}

// BenchmarkSubmit: Submit then Wait from 64 closed-loop requesters, with
// and without handing the Future back (Release), both engines.
//
//	go test -run '^$' -bench 'BenchmarkSubmit' -benchtime 200ms -count 10 ./dispatcher/
func BenchmarkSubmit(b *testing.B) {
	for _, eng := range []dispatcher.Engine{dispatcher.Rings, dispatcher.Channels} {
		for _, release := range []bool{false, true} {
			b.Run(fmt.Sprintf("engine=%v/release=%v", eng, release), func(b *testing.B) {
				d, err := dispatcher.New(dispatcher.WithEngine(eng))
				if err != nil {
					b.Fatal(err)
				}
				defer d.Close(context.Background())
				ctx := context.Background()
				task := tasks["empty"]
				b.ReportAllocs()
				b.SetParallelism(32) // 64 requesters on 2 Ps
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						f, err := dispatcher.Submit(ctx, d, task)
						if err != nil {
							b.Error(err)
							return
						}
						if _, err := f.Wait(ctx); err != nil {
							b.Error(err)
							return
						}
						if release {
							f.Release()
						}
					}
				})
			})
		}
	}
}

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

// BenchmarkSchedule: what each schedule costs per task, on both engines:
// empty tasks from 64 closed-loop requesters (Do) and in a batch (Go).
// Allocations are reported per task: none on Do and Go under every
// schedule.
//
//	go test -run '^$' -bench Schedule -count 10 ./dispatcher
func BenchmarkSchedule(b *testing.B) {
	for _, eng := range engines {
		for _, s := range schedules {
			b.Run("engine="+eng.String()+"/schedule="+s.String(), func(b *testing.B) {
				newD := func(b *testing.B) *dispatcher.Dispatcher {
					d, err := dispatcher.New(dispatcher.WithEngine(eng), dispatcher.WithSchedule(s))
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(func() { _ = d.Close(context.Background()) })
					return d
				}
				b.Run("op=Do", func(b *testing.B) { closedLoop(b, newD(b), tasks["empty"]) })
				b.Run("op=Go", func(b *testing.B) {
					d := newD(b)
					ctx := context.Background()
					task := tasks["empty"]
					goTask := func(ctx context.Context) error { _, err := task(ctx); return err }
					b.ReportAllocs()
					b.ResetTimer()
					for range b.N {
						if err := d.Go(ctx, goTask); err != nil {
							b.Fatal(err)
						}
					}
					if _, err := dispatcher.Do(ctx, d, task); err != nil { // FIFO per worker: after the batch
						b.Fatal(err)
					}
				})
			})
		}
	}
}
