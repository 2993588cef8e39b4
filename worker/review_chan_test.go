package worker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/worker"
)

// TestReviewChanTryTakeAfterClose: the producer abandons a removed worker's
// queue (Close, then TryTake): TryTake returns queued items one by one and
// then false, never blocks, never panics on the closed channel; every item
// is run or taken back, never both.
func TestReviewChanTryTakeAfterClose(t *testing.T) {
	release := make(chan struct{})
	h := newChan(t, 4, 8, func(item int) {
		if item == 0 {
			<-release
		}
	})
	for i := range 4 {
		h.w.Send(i)
	}
	// Let the worker take item 0 and block in it.
	require.Eventually(t, func() bool { return len(h.done) == 0 && chanLen(h.w) == 3 }, 5*time.Second, time.Millisecond)
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

// chanLen is how many items wait in w's channel.
func chanLen(w *worker.Chan[int]) int { return worker.ChanLen(w) }
