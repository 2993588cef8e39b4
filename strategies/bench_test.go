package strategies

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// loadAware reports whether s's Done does anything (the load-aware
// strategies count pending on Pick), so that its benchmark measures a Pick
// plus its Done.
func loadAware(s Strategy) bool { return !TraitsOf(s).IgnoresDone }

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
				done := loadAware(s)
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

// BenchmarkPickColdKeys is BenchmarkPick for the hashing strategies at
// 10 000 members with keys drawn at random from 2^20 of them (8 MB of
// keys), so neither the keys nor the ring's lines they reach stay in
// cache from one pick to the next, as for an RPC client's many users.
//
//	go test -run '^$' -bench 'BenchmarkPickColdKeys' -benchtime 3000000x -count 5 ./strategies/
func BenchmarkPickColdKeys(b *testing.B) {
	for _, name := range []string{"consistent-hash", "bounded-hash"} {
		b.Run(name+"/n=10000", func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 10000))
			w := make([]int, 10000)
			for i := range w {
				w[i] = 1 + r.IntN(100)
			}
			s, err := New(name, w)
			if err != nil {
				b.Fatal(err)
			}
			keys := make([]uint64, 1<<20)
			for i := range keys {
				keys[i] = r.Uint64()
			}
			done := loadAware(s)
			b.ReportAllocs()
			b.ResetTimer()
			for k := range b.N {
				i := s.Pick(keys[(uint64(k)*0x9e3779b1)&uint64(len(keys)-1)])
				if done {
					s.Done(i, time.Microsecond)
				}
			}
		})
	}
}

// BenchmarkMembership measures one round of membership calls at n members
// of weight 1..100: Add, SetWeight of the newcomer to 200 times the largest
// weight and back (for the rings each of these two rebuilds the ring: the
// average weight moves more than 2×), then Remove. ns/op is the round of 4
// calls, so no call costs more than it. The strategy is rebuilt, untimed,
// every 64 rounds, since removed indices are never reused.
//
//	go test -run '^$' -bench 'BenchmarkMembership/.*/n=100$' -benchtime 200ms ./strategies/
func BenchmarkMembership(b *testing.B) {
	for _, name := range Names() {
		for _, n := range []int{100} {
			b.Run(fmt.Sprintf("strategy=%s/n=%d", name, n), func(b *testing.B) {
				r := rand.New(rand.NewPCG(2, uint64(n)))
				w := make([]int, n)
				for i := range w {
					w[i] = 1 + r.IntN(100)
				}
				var d Dynamic
				b.ReportAllocs()
				b.ResetTimer()
				for k := range b.N {
					if k%64 == 0 {
						b.StopTimer()
						s, err := New(name, w)
						if err != nil {
							b.Fatal(err)
						}
						d = s.(Dynamic)
						for j := range 3 * n {
							d.Done(d.Pick(uint64(j)), 0)
						}
						b.StartTimer()
					}
					x := 1 + k%100
					i, err := d.Add(x)
					if err == nil {
						err = d.SetWeight(i, 200*100)
					}
					if err == nil {
						err = d.SetWeight(i, x)
					}
					if err == nil {
						err = d.Remove(i)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkChurn measures one membership change cycle, Add of a member,
// Remove of the oldest and Forget of it, at 100 members of weight 1..100,
// after prior such cycles (untimed). The members present are the same
// in number and weights whatever prior is, and Forget lets Add reuse
// indices, so the cost must not depend on prior: compare prior=0 with
// prior=20000. (Without Forget every cycle would grow the member arrays,
// and each change of an O(n) strategy would cost what was ever added.)
//
//	go test -run '^$' -bench 'BenchmarkChurn' -benchtime 1x ./strategies/
func BenchmarkChurn(b *testing.B) {
	for _, name := range Names() {
		for _, prior := range []int{0, 20000} {
			b.Run(fmt.Sprintf("strategy=%s/prior=%d", name, prior), func(b *testing.B) {
				r := rand.New(rand.NewPCG(2, 100))
				w := make([]int, 100)
				for i := range w {
					w[i] = 1 + r.IntN(100)
				}
				c := newChurner(b, name, w)
				for range prior {
					if err := c.cycle(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if err := c.cycle(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkMemoryLatency is the floor under BenchmarkPickColdKeys: one
// dependent load at a random line of a buffer of each size (a pointer
// chase through a random cycle of its cache lines), so ns/op is the
// machine's load latency at that working set. A cold pick at 10 000
// members reads a 12.8 MB ring.
//
//	go test -run '^$' -bench 'BenchmarkMemoryLatency' -benchtime 2000000x -count 5 ./strategies/
func BenchmarkMemoryLatency(b *testing.B) {
	for _, size := range []int{256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20} {
		b.Run(fmt.Sprintf("size=%dKiB", size>>10), func(b *testing.B) {
			const line = 8 // uint64s per 64-byte line
			lines := size / 64
			perm := rand.New(rand.NewPCG(3, uint64(size))).Perm(lines)
			next := make([]uint64, lines*line)
			for i := range lines {
				next[perm[i]*line] = uint64(perm[(i+1)%lines] * line)
			}
			j := uint64(perm[0] * line)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				j = next[j]
			}
			chased = j
		})
	}
}

var chased uint64
