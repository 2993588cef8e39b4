package pool_test

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/gobalancer/balancer/pool"
	"github.com/gobalancer/balancer/worker"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newPool starts n workers of ints that add each item to sum (an item of -1
// calls runtime.Goexit).
func newPool(n int, sum *atomic.Int64) *pool.Pool[*worker.Worker[int]] {
	return newPoolOf(n, worker.Config[int]{
		Depth: 4,
		Run: func(item int, count func()) {
			if item == -1 {
				runtime.Goexit()
			}
			sum.Add(int64(item))
			count()
		},
		Panicked: func(_ int, _ any, _ []byte, count, _ func()) { count() },
		Exited:   func(int) {},
	})
}

// newPoolOf starts n ring workers made from cfg.
func newPoolOf(n int, cfg worker.Config[int]) *pool.Pool[*worker.Worker[int]] {
	return pool.New(n, func(_ int, spawn func(func())) *worker.Worker[int] {
		c := cfg
		c.Spawn = spawn
		return worker.New(c)
	})
}

// push hands item to w at once (Put, then Publish).
func push(w *worker.Worker[int], item int) {
	w.Put(item)
	w.Publish()
}

// waitBounded runs Wait and fails the test if it does not return in time.
func waitBounded(t *testing.T, p *pool.Pool[*worker.Worker[int]]) {
	t.Helper()
	done := make(chan struct{})
	go func() { p.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("pool.Wait did not return within 10s")
	}
}

// TestAddRemove: indices are handed out in order and never reused; a
// removed worker is closed and cannot be removed again; Stop closes the
// rest.
func TestAddRemove(t *testing.T) {
	var sum atomic.Int64
	p := newPool(3, &sum)
	require.Equal(t, 3, p.Len())
	for i := range 3 {
		require.False(t, p.Worker(i).Closed())
	}

	require.NoError(t, p.Remove(1))
	require.True(t, p.Worker(1).Closed())
	require.False(t, p.Worker(0).Closed(), "only the removed worker is closed")
	require.ErrorIs(t, p.Remove(1), pool.ErrNoWorker, "removed twice")
	require.ErrorIs(t, p.Remove(7), pool.ErrNoWorker, "no such worker")
	require.ErrorIs(t, p.Remove(-1), pool.ErrNoWorker, "no such worker")
	require.Equal(t, 3, p.Add(), "a removed index is not reused")
	require.Equal(t, 4, p.Add())
	require.Equal(t, 5, p.Len())
	require.False(t, p.Worker(3).Closed())
	require.NoError(t, p.Remove(3))

	p.Stop()
	for i := range p.Len() {
		require.True(t, p.Worker(i).Closed(), "worker %d", i)
		require.ErrorIs(t, p.Remove(i), pool.ErrNoWorker)
	}
	waitBounded(t, p)
}

// TestStopRunsQueued: items pushed before Stop all run; Wait returns once
// every worker goroutine, replacements included, has exited.
func TestStopRunsQueued(t *testing.T) {
	var sum atomic.Int64
	p := newPool(4, &sum)
	want := int64(0)
	for i := range p.Len() {
		w := p.Worker(i)
		push(w, -1) // a Goexit: the worker's goroutine is replaced
		for k := range 3 {
			push(w, k+1)
			want += int64(k + 1)
		}
	}
	require.NoError(t, p.Remove(2)) // a removed worker also runs its queue
	p.Stop()
	waitBounded(t, p)
	require.Equal(t, want, sum.Load())
	require.Equal(t, int64(4), p.Replaced())
	for i := range p.Len() {
		require.Equal(t, uint64(4), p.Worker(i).Done())
		select {
		case <-p.Worker(i).Stopped():
		default:
			t.Fatalf("worker %d not stopped after Wait", i)
		}
	}
}

// TestTryTake: an item taken back is not run and not counted by the worker.
func TestTryTake(t *testing.T) {
	var sum atomic.Int64
	gate := make(chan struct{})
	p := newPoolOf(1, worker.Config[int]{
		Depth:    4,
		Run:      func(item int, count func()) { <-gate; sum.Add(int64(item)); count() },
		Panicked: func(_ int, _ any, _ []byte, count, _ func()) { count() },
		Exited:   func(int) {},
	})
	w := p.Worker(0)
	push(w, 1)
	push(w, 10)
	push(w, 100)
	taken, takenItems := 0, 0
	deadline := time.Now().Add(10 * time.Second)
	// The worker holds item 1 (blocked on gate) or has not taken it yet;
	// TryTake gets whatever is still queued.
	for {
		item, ok := p.Worker(0).TryTake()
		if !ok {
			break
		}
		taken += item
		takenItems++
		require.True(t, time.Now().Before(deadline))
	}
	close(gate)
	p.Stop()
	waitBounded(t, p)
	require.Equal(t, int64(111), sum.Load()+int64(taken), "each item run or taken, once")
	require.Equal(t, uint64(3-takenItems), w.Done(), "the worker counts only what it ran")
	require.Positive(t, takenItems, "items queued behind a blocked item can be taken back")
	_, ok := p.Worker(0).TryTake()
	require.False(t, ok)
}

// TestForgetReusesLowestIndex: Add reuses a forgotten index, lowest first,
// and only a removed worker can be forgotten, once.
func TestForgetReusesLowestIndex(t *testing.T) {
	var sum atomic.Int64
	p := newPool(4, &sum)
	defer func() { p.Stop(); p.Wait() }()
	require.ErrorIs(t, p.Forget(1), pool.ErrNoWorker, "a live worker")
	require.ErrorIs(t, p.Forget(9), pool.ErrNoWorker, "an unknown index")
	require.NoError(t, p.Remove(2))
	require.NoError(t, p.Remove(1))
	require.NoError(t, p.Forget(2))
	require.NoError(t, p.Forget(1))
	require.ErrorIs(t, p.Forget(1), pool.ErrNoWorker, "forgotten twice")
	require.Equal(t, 1, p.Add())
	require.Equal(t, 2, p.Add())
	require.Equal(t, 4, p.Add())
}
