package worker_test

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/gobalancer/balancer/worker"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newWorker starts a worker of ints running run, whose goroutines wg
// tracks; a panic in run fails the test.
func newWorker(t *testing.T, depth int, run func(int)) (*worker.Worker[int], *sync.WaitGroup) {
	var wg sync.WaitGroup
	w := worker.New(worker.Config[int]{
		Depth:    depth,
		Run:      func(item int, count func()) { run(item); count() },
		Panicked: func(item int, v any, _ []byte, _, _ func()) { t.Errorf("item %d panicked: %v", item, v) },
		Exited:   func(item int) { t.Errorf("item %d called Goexit", item) },
		Spawn:    func(f func()) { wg.Go(f) },
	})
	w.Start()
	return w, &wg
}

// TestRingExactlyOnce: every item pushed is either run by the worker or
// taken back by TryTake, exactly once, while both race for the same slots
// (as when Close gives up on queued requests). The producer keeps at most
// Depth items unfinished, as the balancer does.
func TestRingExactlyOnce(t *testing.T) {
	const rounds, depth = 300, 16
	for range rounds {
		seen := make([]atomic.Int32, depth)
		release := make(chan struct{})
		w, wg := newWorker(t, depth, func(i int) {
			if i == 0 {
				<-release // a running task while the rest is queued
			}
			seen[i].Add(1)
		})
		for i := range depth {
			w.Push(i)
		}
		taken := uint64(0)
		var stolen []int
		close(release)
		for {
			item, ok := w.TryTake()
			if !ok {
				break
			}
			stolen = append(stolen, item)
			taken++
		}
		w.Close()
		wg.Wait()
		for _, i := range stolen {
			seen[i].Add(1)
		}
		require.Equal(t, uint64(depth), w.Done()+taken)
		for i := range seen {
			require.Equal(t, int32(1), seen[i].Load(), "item %d", i)
		}
	}
}

// TestRingWraps: many more items than slots, with the producer waiting for
// Done before reusing a slot, all run once and in order.
func TestRingWraps(t *testing.T) {
	const n, depth = 20000, 4
	var next atomic.Int64
	w, wg := newWorker(t, depth, func(i int) {
		if int64(i) != next.Load() {
			panic("out of order")
		}
		next.Add(1)
	})
	for i := range n {
		for w.Pushed()-w.Done() >= depth {
			runtime.Gosched()
		}
		w.Push(i)
	}
	w.Close()
	wg.Wait()
	require.Equal(t, uint64(n), w.Done())
	require.Equal(t, int64(n), next.Load())
}

// TestPutPublish: items Put are invisible to the worker until Publish.
func TestPutPublish(t *testing.T) {
	ran := make(chan int, 4)
	w, wg := newWorker(t, 4, func(i int) { ran <- i })
	w.Put(1)
	w.Put(2)
	select {
	case i := <-ran:
		t.Fatalf("item %d ran before Publish", i)
	default:
	}
	w.Publish()
	require.Equal(t, 1, <-ran)
	require.Equal(t, 2, <-ran)
	w.Close()
	wg.Wait()
	<-w.Stopped()
}
