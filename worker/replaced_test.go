package worker_test

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/worker"
)

// A Goexit's replacement is counted before the item is answered, whether
// the task called Goexit or whatever Panicked did (a panic handler) did:
// the answer reads Replaced and finds it. It was counted on the way out of
// the old goroutine, after the answer, so a read right after an answer
// was one short, and an owner that reused the worker's index at once
// (pool.Add reads the old worker's Replaced) lost it for good.
func TestReplacedCountedBeforeTheAnswer(t *testing.T) {
	// Even items Goexit in the task; odd ones panic, and Panicked's own
	// work Goexits as a panic handler may.
	type replacer interface{ Replaced() int64 }
	var w replacer
	var mu sync.Mutex
	var atAnswer []int64
	answer := func() {
		mu.Lock()
		atAnswer = append(atAnswer, w.Replaced())
		mu.Unlock()
	}
	done := make(chan struct{}, 64)
	var wg sync.WaitGroup
	cfg := worker.Config[int]{
		Depth: 1,
		Run: func(item int, count func()) {
			if item%2 == 0 {
				runtime.Goexit()
			}
			panic(item)
		},
		Panicked: func(_ int, _ any, _ []byte, count, exiting func()) {
			defer func() {
				exiting()
				count()
				answer()
				done <- struct{}{}
			}()
			runtime.Goexit()
		},
		Exited: func(int) { answer(); done <- struct{}{} },
		Spawn:  func(f func()) { wg.Go(f) },
	}
	const n = 20
	check := func(t *testing.T, put func(int), stop func()) {
		for i := range n {
			put(i)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				require.FailNow(t, "no answer within 10s", "item %d", i)
			}
		}
		stop()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for i, got := range atAnswer {
			assert.Equal(t, int64(i+1), got, "Replaced read in the answer of item %d", i)
		}
		assert.Equal(t, int64(n), w.Replaced())
	}
	t.Run("worker", func(t *testing.T) {
		atAnswer = nil
		x := worker.New(cfg)
		w = x
		x.Start()
		check(t, x.Push, x.Close)
	})
	t.Run("chan", func(t *testing.T) {
		atAnswer = nil
		x := worker.NewChan(cfg, 0, make(chan worker.Done, n))
		w = x
		x.Start()
		check(t, x.Send, x.Close)
	})
}
