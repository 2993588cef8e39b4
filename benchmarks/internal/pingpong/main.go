// Command pingpong measures what one cache line costs to travel between
// the machine's two cores and back: two goroutines, each locked to its own
// thread, take turns incrementing one padded counter, and it prints the
// median round trip in nanoseconds over a few runs.
//
// rounds.sh prints it before each round. The shared machine the figures in
// docs/performance.md come from switches between two speeds for minutes at
// a time: about 120 ns a round trip in its fast phase and 450-500 ns in its
// slow one, where every benchmark whose goroutines hand requests from core
// to core (ours, per request) slows down and pond's barely moves. Ratios
// are compared within one phase only.
package main

import (
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"time"
)

// line is the shared counter, alone on its cache line.
type line struct {
	_ [64]byte
	v atomic.Int64
	_ [56]byte
}

// roundTrip returns the mean time of n round trips between two threads.
func roundTrip(n int64) time.Duration {
	var x line
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for i := int64(1); i < 2*n; i += 2 {
			for x.v.Load() != i {
			}
			x.v.Store(i + 1)
		}
		close(done)
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := time.Now()
	for i := int64(0); i < 2*n; i += 2 {
		for x.v.Load() != i {
		}
		x.v.Store(i + 1)
	}
	<-done
	return time.Since(start) / time.Duration(n)
}

func main() {
	if runtime.GOMAXPROCS(0) < 2 {
		fmt.Println("pingpong: needs two Ps")
		return
	}
	var runs []time.Duration
	for range 3 {
		runs = append(runs, roundTrip(100_000))
	}
	slices.Sort(runs)
	fmt.Println(runs[1].Nanoseconds())
}
