package strategies

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// loadAware strategies count pending on Pick, so their benchmark measures a
// Pick plus its Done.
var loadAware = map[string]bool{
	"least-pending": true, "least-requests": true, "p2c": true, "latency": true, "bounded-hash": true,
}

// BenchmarkPick measures one pick (plus its Done for load-aware strategies)
// over n members with random weights 1..100.
//
//	go test -run '^$' -bench 'BenchmarkPick' -benchtime 100ms -count 10 ./strategies/
func BenchmarkPick(b *testing.B) {
	for _, name := range Names() {
		for _, n := range []int{10, 100, 1000, 10000} {
			b.Run(fmt.Sprintf("%s/n=%d", name, n), func(b *testing.B) {
				r := rand.New(rand.NewPCG(1, uint64(n)))
				w := make([]int, n)
				for i := range w {
					w[i] = 1 + r.IntN(100)
				}
				s, err := New(name, w)
				if err != nil {
					b.Fatal(err)
				}
				done := loadAware[name]
				key := uint64(0)
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					key += 0x9e3779b97f4a7c15
					i := s.Pick(key)
					if done {
						s.Done(i, time.Microsecond)
					}
				}
			})
		}
	}
}
