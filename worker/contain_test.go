package worker_test

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/worker"
)

// outcomes records how each item of a test worker ended.
type outcomes struct {
	mu       sync.Mutex
	ran      map[int]int
	panicked map[int]any
	stacks   map[int]string
	exited   map[int]int
}

// containWorker starts a worker of ints whose Run calls run(item) and whose
// outcomes are recorded; wg tracks every goroutine it starts.
func containWorker(depth int, run func(int)) (*worker.Worker[int], *outcomes, *sync.WaitGroup) {
	o := &outcomes{ran: map[int]int{}, panicked: map[int]any{}, stacks: map[int]string{}, exited: map[int]int{}}
	var wg sync.WaitGroup
	w := worker.New(worker.Config[int]{
		Depth: depth,
		Run: func(item int, count func()) {
			run(item)
			count()
			o.mu.Lock()
			o.ran[item]++
			o.mu.Unlock()
		},
		Panicked: func(item int, v any, stack []byte, count, _ func()) {
			o.mu.Lock()
			o.panicked[item], o.stacks[item] = v, string(stack)
			o.mu.Unlock()
			count()
		},
		Exited: func(item int) {
			o.mu.Lock()
			o.exited[item]++
			o.mu.Unlock()
		},
		Spawn: func(f func()) { wg.Go(f) },
	})
	w.Start()
	return w, o, &wg
}

// pushAll pushes items, keeping at most depth unfinished as the balancer
// does, and waits (bounded) until the worker has finished them all.
func pushAll(t *testing.T, w *worker.Worker[int], depth int, items []int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, item := range items {
		for w.Pushed()-w.Done() >= uint64(depth) {
			require.True(t, time.Now().Before(deadline), "worker made no room within 10s")
			runtime.Gosched()
		}
		w.Push(item)
	}
	for w.Done() != w.Pushed() {
		require.True(t, time.Now().Before(deadline), "worker did not finish within 10s")
		runtime.Gosched()
	}
}

// stop closes w and waits (bounded) for every goroutine it started.
func stop(t *testing.T, w *worker.Worker[int], wg *sync.WaitGroup) {
	t.Helper()
	w.Close()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("worker goroutines did not exit within 10s")
	}
	select {
	case <-w.Stopped():
	default:
		t.Fatal("Stopped not closed after the worker exited")
	}
}

func panicItem(item int) { panic(fmt.Sprintf("item %d", item)) }

// TestPanicRecovery: a panicking item goes to Panicked with its value and a
// stack naming the panicking function; it is counted; the same goroutine
// keeps serving.
func TestPanicRecovery(t *testing.T) {
	const depth = 4
	w, o, wg := containWorker(depth, func(item int) {
		if item%2 == 1 {
			panicItem(item)
		}
	})
	items := make([]int, 100)
	for i := range items {
		items[i] = i
	}
	pushAll(t, w, depth, items)
	stop(t, w, wg)
	require.Equal(t, uint64(100), w.Done(), "panicked items are counted too")
	require.Zero(t, w.Replaced())
	require.Len(t, o.panicked, 50)
	require.Len(t, o.ran, 50)
	for i := 1; i < 100; i += 2 {
		require.Equal(t, fmt.Sprintf("item %d", i), o.panicked[i])
		require.Contains(t, o.stacks[i], "worker_test.panicItem")
	}
}

// TestGoexitReplacement: an item calling runtime.Goexit goes to Exited, is
// counted, and a new goroutine takes over the loop with the items queued.
func TestGoexitReplacement(t *testing.T) {
	const depth = 8
	w, o, wg := containWorker(depth, func(item int) {
		if item%10 == 0 {
			runtime.Goexit()
		}
	})
	items := make([]int, 100)
	for i := range items {
		items[i] = i
	}
	pushAll(t, w, depth, items)
	stop(t, w, wg)
	require.Equal(t, uint64(100), w.Done())
	require.Equal(t, int64(10), w.Replaced())
	require.Len(t, o.exited, 10)
	require.Len(t, o.ran, 90)
	for item, n := range o.exited {
		require.Zero(t, item%10)
		require.Equal(t, 1, n)
	}
}

// TestCountsEveryItem: Done counts every item exactly once, however items
// end, and Busy covers the time they ran (published in runs of items).
func TestCountsEveryItem(t *testing.T) {
	const depth, n = 16, 1000
	w, o, wg := containWorker(depth, func(item int) {
		switch item % 7 {
		case 3:
			panic(item)
		case 5:
			runtime.Goexit()
		case 6:
			time.Sleep(20 * time.Microsecond)
		}
	})
	items := make([]int, n)
	for i := range items {
		items[i] = i
	}
	pushAll(t, w, depth, items)
	stop(t, w, wg)
	require.Equal(t, uint64(n), w.Done())
	require.Equal(t, n, len(o.ran)+len(o.panicked)+len(o.exited))
	for _, k := range o.ran {
		require.Equal(t, 1, k)
	}
	require.GreaterOrEqual(t, w.Busy(), time.Duration(n/7)*20*time.Microsecond)
}

// TestCloseDrainsQueue: items pushed before Close all run, then the worker
// exits and Stopped closes.
func TestCloseDrainsQueue(t *testing.T) {
	const depth = 32
	gate := make(chan struct{})
	var ran atomic.Int32
	w, _, wg := containWorker(depth, func(item int) {
		if item == 0 {
			<-gate
		}
		ran.Add(1)
	})
	for i := range depth {
		w.Push(i)
	}
	w.Close()
	select {
	case <-w.Stopped():
		t.Fatal("stopped with items queued")
	case <-time.After(10 * time.Millisecond):
	}
	close(gate)
	stop(t, w, wg)
	require.Equal(t, int32(depth), ran.Load())
	require.Equal(t, uint64(depth), w.Done())
}

// TestDepthAtLeastOne: a depth below 1 still makes a working worker.
func TestDepthAtLeastOne(t *testing.T) {
	w, o, wg := containWorker(0, func(int) {})
	pushAll(t, w, 1, []int{1, 2, 3})
	stop(t, w, wg)
	assert.Len(t, o.ran, 3)
}

// TestGoexitRacesTryTake: while the producer takes queued items back, the
// worker runs items that call runtime.Goexit, so the loop moves to a new
// goroutine between a claim and the next; every item ends exactly once
// (ran, exited, or taken back), Done counts exactly those the worker
// finished, and each Goexit is one replacement.
func TestGoexitRacesTryTake(t *testing.T) {
	const rounds, depth = 200, 16
	for round := range rounds {
		started, release := make(chan struct{}), make(chan struct{})
		w, o, wg := containWorker(depth, func(item int) {
			if item == 0 {
				close(started)
				<-release
			}
			if item%2 == 0 {
				runtime.Goexit()
			}
		})
		for i := range depth {
			w.Push(i)
		}
		var taken []int
		if round%2 == 1 {
			// Item 0 claimed and running: its Goexit races the takes.
			<-started
		}
		close(release)
		for {
			item, ok := w.TryTake()
			if !ok {
				break
			}
			taken = append(taken, item)
		}
		stop(t, w, wg)
		ends := map[int]int{}
		for item, n := range o.ran {
			ends[item] += n
		}
		for item, n := range o.exited {
			ends[item] += n
			require.Zero(t, item%2, "item %d exited", item)
		}
		for _, item := range taken {
			ends[item]++
		}
		for i := range depth {
			require.Equal(t, 1, ends[i], "round %d: item %d ended %d times", round, i, ends[i])
		}
		require.Equal(t, uint64(depth-len(taken)), w.Done())
		require.Equal(t, int64(len(o.exited)), w.Replaced())
		if round%2 == 1 {
			require.Equal(t, 1, o.exited[0])
		}
	}
}
