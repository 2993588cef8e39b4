package benchmarks

import (
	"container/heap"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPikeAnswersEachRequestOnce gives every request its own function and
// answer channel, so that a request run twice, or answered twice, or
// dropped while another runs in its place, shows up; TestImplementations
// only counts the runs of one shared task.
func TestPikeAnswersEachRequestOnce(t *testing.T) {
	const workers, perCaller, gos = 3, 20, 2000
	p := newPike(workers, func() {}).(*pikePool)
	ran := make([]atomic.Int32, Requesters*perCaller+gos)
	count := func(i int) func() result { return func() result { ran[i].Add(1); return result{} } }

	// Capacity 1: a second answer lands in the buffer, where the check
	// after Close sees it, instead of blocking a worker forever.
	answers := make([]chan result, Requesters*perCaller)
	var wg sync.WaitGroup
	for g := range Requesters {
		wg.Go(func() {
			for k := range perCaller {
				i := g*perCaller + k
				answers[i] = make(chan result, 1)
				p.submit(pikeRequest{count(i), answers[i]})
				<-answers[i]
				assert.EqualValues(t, 1, ran[i].Load(), "request %d answered after %d runs", i, ran[i].Load())
			}
		})
	}
	wg.Wait()
	for i := range gos {
		p.submit(pikeRequest{fn: count(len(answers) + i)})
	}
	p.Close()

	for i := range ran {
		require.EqualValues(t, 1, ran[i].Load(), "request %d", i)
	}
	for i, c := range answers {
		require.Empty(t, c, "request %d answered twice", i)
	}
	require.Empty(t, p.sem, "tokens of Go not given back")
	require.Zero(t, p.bal.pending)
	for i, w := range p.bal.pool {
		assert.Zero(t, w.pending, "worker %d", i)
		assert.Equal(t, i, w.index, "worker %d", i)
	}
}

// TestPikeHeapFix checks the index bookkeeping that completed relies on:
// after any heap.Fix, each worker knows its place and the top has the
// fewest pending.
func TestPikeHeapFix(t *testing.T) {
	var h pikeHeap
	for range 5 {
		heap.Push(&h, &pikeWorker{})
	}
	check := func() {
		t.Helper()
		for i, w := range h {
			require.Equal(t, i, w.index)
			require.LessOrEqual(t, h[0].pending, w.pending)
		}
	}
	for _, step := range []struct{ worker, delta int }{
		{0, 3}, {0, 1}, {2, 5}, {1, 2}, {3, 4}, {4, 4}, {0, 2}, {4, -4}, {1, -2},
	} {
		w := h[step.worker]
		w.pending += step.delta
		heap.Fix(&h, w.index)
		check()
	}
	w := heap.Pop(&h).(*pikeWorker)
	require.Equal(t, -1, w.index)
	check()
}
