package worker_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/worker"
)

// quietChan is a channel worker (index 5) whose even items are quiet and
// whose item 0 waits for gate (after closing entered, if given); it
// records the order items ran in.
func quietChan(t *testing.T, depth int, gate chan struct{}, entered ...chan struct{}) (*worker.Chan[int], chan worker.Done, *sync.WaitGroup, *[]int) {
	t.Helper()
	done := make(chan worker.Done, depth)
	var wg sync.WaitGroup
	var ran []int
	w := worker.NewChan(worker.Config[int]{
		Depth: depth,
		Run: func(item int, count func()) {
			if item == 0 {
				for _, e := range entered {
					close(e)
				}
				<-gate
			}
			ran = append(ran, item)
			count()
		},
		Panicked: func(_ int, _ any, _ []byte, count, _ func()) { count() },
		Exited:   func(int) {},
		Quiet:    func(item int) bool { return item%2 == 0 },
		Spawn:    func(f func()) { wg.Go(f) },
	}, 5, done)
	w.Start()
	return w, done, &wg, &ran
}

// Quiet items' completions ride together while enough is queued behind
// them; every item is reported exactly once, and everything finished is
// reported before the worker waits for more.
func TestChanQuietCompletionsCarriedTogether(t *testing.T) {
	const depth = 40
	gate := make(chan struct{})
	w, done, wg, ran := quietChan(t, depth, gate)
	items := []int{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34, 36, 1}
	for _, it := range items {
		w.Send(it)
	}
	close(gate)
	total, msgs := 0, 0
	deadline := time.After(10 * time.Second)
	for total < len(items) {
		select {
		case c := <-done:
			require.Equal(t, 5, c.Worker)
			require.Positive(t, c.N)
			total += c.N
			msgs++
		case <-deadline:
			t.Fatalf("%d of %d completions reported", total, len(items))
		}
	}
	require.Equal(t, len(items), total, "each item reported once")
	require.Less(t, msgs, len(items), "quiet completions share messages")
	// The worker now waits for more with nothing held.
	select {
	case c := <-done:
		t.Fatalf("a completion beyond the items sent: %+v", c)
	case <-time.After(20 * time.Millisecond):
	}
	w.Close()
	waitAll(t, wg)
	require.Equal(t, items, *ran)
}

// A loud item (not quiet) is reported before its answer with every quiet
// completion held before it, so a reader of the counts after an answer
// finds everything that ran before it.
func TestChanLoudItemFlushesHeld(t *testing.T) {
	const depth = 40
	gate := make(chan struct{})
	w, done, wg, _ := quietChan(t, depth, gate)
	for _, it := range []int{0, 2, 4, 1, 6, 8, 10, 12, 14, 16, 18, 20} {
		w.Send(it)
	}
	close(gate)
	// Items 0, 2, 4 are quiet with at least 8 queued behind each: held;
	// item 1 is loud: its message carries all four.
	c := <-done
	require.Equal(t, worker.Done{Worker: 5, N: 4}, c)
	w.Close()
	waitAll(t, wg)
}

// The producer takes back what was queued behind held completions: the
// worker reports them before it waits, so the producer's count of
// unfinished items reaches zero.
func TestChanHeldReportedWhenQueueTakenBack(t *testing.T) {
	gate := make(chan struct{})
	block, entered := make(chan struct{}), make(chan struct{})
	w, done, wg := allQuietChan(40, func(item int) {
		switch item {
		case 0:
			<-gate
		case 4:
			close(entered)
			<-block // running while the producer takes the rest back
		}
	})
	w.Start()
	for i := range 30 {
		w.Send(i)
	}
	close(gate)
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("item 4 did not start")
	}
	require.Equal(t, 25, worker.ChanLen(w))
	taken := takeBackAll(w)
	close(block)
	total := 0
	for total < 30-taken {
		select {
		case c := <-done:
			total += c.N
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d completions reported", total, 30-taken)
		}
	}
	require.Equal(t, 5, total, "items 0-4 ran; the rest were taken back")
	w.Close()
	waitAll(t, wg)
}

// The same, but the producer closes the worker (a removed worker) before
// the running item ends: the worker finds its channel closed instead of
// empty and must still report what it holds before it exits, or the
// producer counts those items unfinished for ever.
func TestChanHeldReportedWhenClosedAfterTakeBack(t *testing.T) {
	block, entered := make(chan struct{}), make(chan struct{})
	w, done, wg := allQuietChan(40, func(item int) {
		if item == 0 {
			close(entered)
			<-block
		}
	})
	for i := range 8 {
		w.Put(i)
	}
	w.Publish() // one run: item 0 runs, 7 wait behind it
	w.Start()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("item 0 did not start")
	}
	require.Equal(t, 7, takeBackAll(w))
	w.Close()
	close(block)
	select {
	case <-w.Stopped():
	case <-time.After(10 * time.Second):
		t.Fatal("the worker did not stop")
	}
	select {
	case c := <-done:
		require.Equal(t, worker.Done{Worker: 5, N: 1}, c, "item 0, reported before the worker exited")
	default:
		t.Fatal("the worker exited holding item 0's completion")
	}
	waitAll(t, wg)
}

// allQuietChan is a channel worker (index 5) whose items are all quiet
// and run run, not started.
func allQuietChan(depth int, run func(item int)) (*worker.Chan[int], chan worker.Done, *sync.WaitGroup) {
	done := make(chan worker.Done, depth)
	wg := new(sync.WaitGroup)
	w := worker.NewChan(worker.Config[int]{
		Depth:    depth,
		Run:      func(item int, count func()) { run(item); count() },
		Panicked: func(_ int, _ any, _ []byte, count, _ func()) { count() },
		Exited:   func(int) {},
		Quiet:    func(int) bool { return true },
		Spawn:    func(f func()) { wg.Go(f) },
	}, 5, done)
	return w, done, wg
}

// takeBackAll takes back every item not started and returns how many.
func takeBackAll(w *worker.Chan[int]) int {
	n := 0
	for {
		if _, ok := w.TryTake(); !ok {
			return n
		}
		n++
	}
}

// Items Put together travel as one message and run in order.
func TestChanRunOneMessage(t *testing.T) {
	gate := make(chan struct{})
	w, done, wg, ran := quietChan(t, 8, gate)
	for _, it := range []int{1, 3, 5, 7, 9} { // loud: a report each
		w.Put(it)
	}
	require.Equal(t, 0, worker.ChanLen(w), "nothing sent before Publish")
	w.Publish()
	total := 0
	for total < 5 {
		select {
		case c := <-done:
			total += c.N
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of 5 reported", total)
		}
	}
	w.Close()
	waitAll(t, wg)
	require.Equal(t, []int{1, 3, 5, 7, 9}, *ran)
}

// TryTake claims the items of a run the worker has received but not yet
// started; the worker skips them and reports only what it ran.
func TestChanTryTakeInsideReceivedRun(t *testing.T) {
	gate, entered := make(chan struct{}), make(chan struct{})
	w, done, wg, ran := quietChan(t, 8, gate, entered)
	for _, it := range []int{0, 1, 3, 5, 7} {
		w.Put(it)
	}
	w.Publish()
	// The worker has the run and waits in item 0.
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("item 0 did not start")
	}
	require.Zero(t, worker.ChanLen(w))
	var taken []int
	for {
		it, ok := w.TryTake()
		if !ok {
			break
		}
		taken = append(taken, it)
	}
	require.Equal(t, []int{1, 3, 5, 7}, taken)
	close(gate)
	select {
	case c := <-done:
		require.Equal(t, worker.Done{Worker: 5, N: 1}, c)
	case <-time.After(10 * time.Second):
		t.Fatal("item 0 not reported")
	}
	w.Close()
	waitAll(t, wg)
	require.Equal(t, []int{0}, *ran)
	require.Empty(t, done)
}
