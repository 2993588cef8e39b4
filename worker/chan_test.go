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

// chanHarness is a channel worker of ints with index 3 whose every item runs
// run; each answer (ran, panicked, exited) is recorded in got.
type chanHarness struct {
	w    *worker.Chan[int]
	done chan worker.Done
	wg   sync.WaitGroup
	mu   sync.Mutex
	got  map[int]string
}

func newChan(t *testing.T, depth, completion int, run func(int)) *chanHarness {
	t.Helper()
	h := &chanHarness{done: make(chan worker.Done, completion), got: map[int]string{}}
	record := func(item int, how string) {
		h.mu.Lock()
		defer h.mu.Unlock()
		assert.Empty(t, h.got[item], "item %d answered twice", item)
		h.got[item] = how
	}
	h.w = worker.NewChan(worker.Config[int]{
		Depth:    depth,
		Run:      func(item int, count func()) { run(item); count(); record(item, "ran") },
		Panicked: func(item int, _ any, _ []byte, count, _ func()) { count(); record(item, "panicked") },
		Exited:   func(item int) { record(item, "exited") },
		Spawn:    func(f func()) { h.wg.Go(f) },
	}, 3, h.done)
	h.w.Start()
	return h
}

// stop closes the worker and waits for every goroutine it started.
func (h *chanHarness) stop(t *testing.T) {
	t.Helper()
	h.w.Close()
	waited := make(chan struct{})
	go func() { h.wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("channel worker did not stop within 10s")
	}
}

// TestChanOneCompletionPerItem: the worker sends its index once per item,
// whatever the item did (returned, panicked, called Goexit), with an
// unbuffered completion channel too; a Goexit replaces the goroutine.
func TestChanOneCompletionPerItem(t *testing.T) {
	for _, completion := range []int{0, 4} {
		h := newChan(t, 2, completion, func(i int) {
			switch i % 3 {
			case 1:
				panic(i)
			case 2:
				runtime.Goexit()
			}
		})
		const items = 30
		pending := 0
		for i := range items {
			// The producer's rule: fewer than Depth unreported items.
			for pending >= 2 {
				require.Equal(t, worker.Done{Worker: 3, N: 1}, <-h.done)
				pending--
			}
			h.w.Send(i)
			pending++
		}
		for ; pending > 0; pending-- {
			require.Equal(t, worker.Done{Worker: 3, N: 1}, <-h.done)
		}
		h.stop(t)
		require.Len(t, h.got, items)
		for i := range items {
			want := []string{"ran", "panicked", "exited"}[i%3]
			require.Equal(t, want, h.got[i], "item %d", i)
		}
		require.Equal(t, int64(items/3), h.w.Replaced())
		select {
		case <-h.w.Stopped():
		default:
			t.Fatal("Stopped not closed after Close")
		}
	}
}

// TestChanTryTake: queued items can be taken back; a closed, empty channel
// has nothing to take (it used to report a zero item as taken).
func TestChanTryTake(t *testing.T) {
	gate, started := make(chan struct{}), make(chan struct{})
	var once sync.Once
	h := newChan(t, 3, 3, func(int) {
		once.Do(func() { close(started) })
		<-gate
	})
	h.w.Send(1)
	h.w.Send(2)
	h.w.Send(3)
	// Item 1 has started: what a TryTake claims from here is queued.
	<-started
	var taken []int
	deadline := time.Now().Add(10 * time.Second)
	for len(taken) < 2 && time.Now().Before(deadline) {
		if v, ok := h.w.TryTake(); ok {
			taken = append(taken, v)
		} else {
			runtime.Gosched()
		}
	}
	require.Len(t, taken, 2, "two of the three items are queued behind the running one")
	h.w.Close()
	_, ok := h.w.TryTake()
	require.False(t, ok, "a closed, empty channel holds nothing")
	close(gate)
	require.Equal(t, worker.Done{Worker: 3, N: 1}, <-h.done)
	waitAll(t, &h.wg)
	require.Len(t, h.got, 1)
}

// TestChanTryTakeAfterClose: the producer abandons a removed worker's
// queue (Close, then TryTake): TryTake returns queued items one by one and
// then false, never blocks, never panics on the closed channel; every item
// is run or taken back, never both.
func TestChanTryTakeAfterClose(t *testing.T) {
	release, started := make(chan struct{}), make(chan struct{})
	h := newChan(t, 4, 8, func(item int) {
		if item == 0 {
			close(started)
			<-release
		}
	})
	for i := range 4 {
		h.w.Send(i)
	}
	// Let the worker start item 0 and block in it.
	<-started
	require.Equal(t, 3, worker.ChanLen(h.w))
	h.w.Close()
	taken := map[int]bool{}
	for {
		item, ok := h.w.TryTake()
		if !ok {
			break
		}
		taken[item] = true
	}
	require.Equal(t, map[int]bool{1: true, 2: true, 3: true}, taken)
	_, ok := h.w.TryTake()
	require.False(t, ok, "TryTake on a closed, empty channel")
	close(release)
	waited := make(chan struct{})
	go func() { h.wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("closed channel worker did not exit")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	require.Equal(t, map[int]string{0: "ran"}, h.got, "only the running item was answered by the worker")
	require.Equal(t, 1, len(h.done), "one completion message: for the item it ran")
}

// TestChanBusyBeforeCompletion: a worker with nothing queued publishes its
// busy time before its completion message, so a reader that got the
// message finds the time.
func TestChanBusyBeforeCompletion(t *testing.T) {
	h := newChan(t, 1, 1, func(int) { time.Sleep(2 * time.Millisecond) })
	h.w.Send(0)
	<-h.done
	require.GreaterOrEqual(t, h.w.Busy(), 2*time.Millisecond)
	h.stop(t)
}

func waitAll(t *testing.T, wg *sync.WaitGroup) {
	t.Helper()
	waited := make(chan struct{})
	go func() { wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("goroutines did not stop within 10s")
	}
}
