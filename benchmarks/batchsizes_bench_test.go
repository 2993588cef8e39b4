package benchmarks

import (
	"fmt"
	"sync/atomic"
	"testing"
)

// batchSizes are the batch lengths of BenchmarkBatchSizes: a short fan-out,
// the 20 000 tasks where a fresh dispatcher's warm-up showed, and a long
// run that amortises any warm-up.
var batchSizes = []int{1000, 20000, 1000000}

// BenchmarkBatchSizes runs b.N empty tasks as batches of size tasks, each
// submitted with Go from one goroutine and waited for before the next.
// pool=warm keeps one pool for every batch (a long-lived dispatcher that
// fan-outs come and go on: its workers park between batches); pool=fresh
// makes a pool per batch (a short program), untimed, so what a batch pays
// for starting cold shows against pool=warm. ns/op is wall time per task.
func BenchmarkBatchSizes(b *testing.B) {
	for _, im := range Impls {
		for _, fresh := range []bool{false, true} {
			for _, size := range batchSizes {
				name := fmt.Sprintf("impl=%s/pool=warm/size=%d", im.Name, size)
				if fresh {
					name = fmt.Sprintf("impl=%s/pool=fresh/size=%d", im.Name, size)
				}
				b.Run(name, func(b *testing.B) { batchSizes1(b, im, fresh, size) })
			}
		}
	}
}

func batchSizes1(b *testing.B, im Impl, fresh bool, size int) {
	task := Task("empty")
	var left atomic.Int64
	done := make(chan struct{}, 1)
	fn := func() {
		task()
		if left.Add(-1) == 0 {
			done <- struct{}{}
		}
	}
	var p Pool
	if !fresh {
		p = im.New(Workers(), fn)
		defer p.Close()
	}
	b.ReportAllocs()
	cpu := cpuTime()
	b.ResetTimer()
	for n := b.N; n > 0; n -= size {
		k := min(size, n)
		if fresh {
			b.StopTimer()
			p = im.New(Workers(), fn)
			b.StartTimer()
		}
		left.Store(int64(k))
		for range k {
			p.Go()
		}
		<-done
		if fresh {
			b.StopTimer()
			p.Close()
			b.StartTimer()
		}
	}
	b.StopTimer()
	reportCPU(b, cpu)
}
