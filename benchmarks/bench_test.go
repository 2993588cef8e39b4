package benchmarks

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkBatch submits b.N tasks from one goroutine and waits for all of
// them: ns/op is wall time per task with GOMAXPROCS workers.
func BenchmarkBatch(b *testing.B) {
	for _, im := range Impls {
		for _, kind := range Kinds {
			b.Run(fmt.Sprintf("impl=%s/kind=%s", im.Name, kind), func(b *testing.B) {
				task := Task(kind)
				var left atomic.Int64
				left.Store(int64(b.N))
				done := make(chan struct{})
				// One shared closure: the per-task completion count costs
				// every implementation the same and allocates nothing.
				p := im.New(Workers(), func() {
					task()
					if left.Add(-1) == 0 {
						close(done)
					}
				})
				defer p.Close()
				b.ReportAllocs()
				cpu := cpuTime()
				b.ResetTimer()
				for range b.N {
					p.Go()
				}
				<-done
				b.StopTimer()
				reportCPU(b, cpu)
			})
		}
	}
}

// BenchmarkRequesters runs Pike's closed loop: 64 requesters each submit
// an exp10us task and wait for it before the next. ns/op is wall time per
// request; p99.9-cycle-us, p99-us and p50-us are percentiles of one
// requester's cycle (submit to answer) over all requesters, max-cycle-us the
// worst cycle.
func BenchmarkRequesters(b *testing.B) {
	for _, im := range Impls {
		b.Run("impl="+im.Name, func(b *testing.B) {
			p := im.New(Workers(), Task("exp10us"))
			defer p.Close()
			cycles := make([][]time.Duration, Requesters)
			for g := range cycles {
				n := b.N / Requesters
				if g < b.N%Requesters {
					n++
				}
				cycles[g] = make([]time.Duration, n)
			}
			var wg sync.WaitGroup
			b.ReportAllocs()
			cpu := cpuTime()
			b.ResetTimer()
			for g := range Requesters {
				wg.Go(func() {
					c := cycles[g]
					for k := range c {
						start := time.Now()
						p.Do()
						c[k] = time.Since(start)
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			reportCPU(b, cpu)
			all := slices.Concat(cycles...)
			slices.Sort(all)
			b.ReportMetric(Percentile(all, 0.999).Seconds()*1e6, "p99.9-cycle-us")
			b.ReportMetric(Percentile(all, 0.99).Seconds()*1e6, "p99-us")
			b.ReportMetric(Percentile(all, 0.5).Seconds()*1e6, "p50-us")
			// The worst cycle exposes starvation that percentiles hide: a
			// requester that waits through everyone else's turn once per run
			// is one cycle in b.N/64.
			b.ReportMetric(Percentile(all, 1).Seconds()*1e6, "max-cycle-us")
		})
	}
}

// reportCPU reports the process's CPU time per op since start as
// cpu-ns/op (every thread: workers, submitters, runtime), if measured.
func reportCPU(b *testing.B, start time.Duration) {
	if start > 0 {
		b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkClosedLoop is BenchmarkRequesters with empty tasks and no
// clock in the loop: ns/op is the cost of one run-and-wait request (Do)
// when 64 requesters keep the dispatcher busy, the figure the core issue's
// "empty-task dispatch" goal is about.
func BenchmarkClosedLoop(b *testing.B) {
	for _, im := range Impls {
		b.Run("impl="+im.Name+"/kind=empty", func(b *testing.B) {
			p := im.New(Workers(), Task("empty"))
			defer p.Close()
			b.ReportAllocs()
			cpu := cpuTime()
			b.ResetTimer()
			doFrom(p, Requesters, b.N)
			b.StopTimer()
			reportCPU(b, cpu)
		})
	}
}

// doFrom runs n Do calls on p from requesters closed-loop goroutines,
// sharing them out as evenly as they go, and returns when all are done.
func doFrom(p Pool, requesters, n int) {
	var wg sync.WaitGroup
	for g := range requesters {
		k := n / requesters
		if g < n%requesters {
			k++
		}
		wg.Go(func() {
			for range k {
				p.Do()
			}
		})
	}
	wg.Wait()
}

// Percentile returns the q-quantile (nearest rank) of sorted durations.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
