package dispatcher_test

import (
	"container/heap"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

// TestNoDeadlockMatrix runs closed-loop requesters (each waits for its
// answer before the next request, as in Pike's demo) on each engine over
// every combination of worker count, worker buffer, completion channel
// (channel engine only) and requester count; every cell must finish within
// its bound. The intake is a rendezvous (Pike's unbuffered request
// channel), the hardest case for the gate, and an unbuffered completion
// channel is the one on which the textbook design deadlocks.
func TestNoDeadlockMatrix(t *testing.T) {
	t.Parallel() // a soak: robust to a shared core, and the package's longest
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		for _, workers := range []int{1, 2, 8} {
			// -1: no WithWorkerBuffer, so the rings engine's queues may
			// deepen to 256 for these empty tasks.
			for _, buf := range []int{0, 1, 64, -1} {
				full, bufName := workers*(buf+1), fmt.Sprint(buf)
				if buf < 0 {
					full, bufName = workers*256, "default"
				}
				for _, comp := range completionAxis(eng, workers) {
					// At most 4000 requesters: the race detector allows 8128
					// goroutines.
					for _, requesters := range distinct(1, full, min(4*full, 4000), 1000) {
						name := fmt.Sprintf("workers=%d/buffer=%s/", workers, bufName)
						if comp.name != "" {
							name += "completion=" + comp.name + "/"
						}
						name += fmt.Sprintf("requesters=%d", requesters)
						opts := append([]dispatcher.Option{
							dispatcher.WithEngine(eng),
							dispatcher.WithWorkers(workers),
							dispatcher.WithIntakeBuffer(0),
						}, comp.opts...)
						if buf >= 0 {
							opts = append(opts, dispatcher.WithWorkerBuffer(buf))
						}
						t.Run(name, func(t *testing.T) { matrixCell(t, requesters, opts) })
					}
				}
			}
		}
	})
}

// matrixCell runs one cell of TestNoDeadlockMatrix.
func matrixCell(t *testing.T, requesters int, opts []dispatcher.Option) {
	const cellBound = 20 * time.Second
	d := newDispatcher(t, opts...)
	// Enough requests per requester that queues fill and drain many times
	// (400 fill the deepest explicit buffer, 64, six times over with one
	// requester), bounded so the matrix stays fast.
	per := max(3, 400/requesters)
	var answered atomic.Int64
	within(t, cellBound, "requesters", func() {
		requestLoop(t, d, requesters, per, &answered)
	})
	total := int64(requesters * per)
	require.Equal(t, total, answered.Load())
	closeWithin(t, d, cellBound)
	s := d.Stats()
	assert.Equal(t, total, s.Completed)
	assert.Equal(t, total, s.Dispatched)
	assert.Zero(t, s.Pending)
}

// TestTextbookDispatchDeadlocks documents why the balancer has a gate:
// the textbook dispatch (Pike's, below) blocks on w.requests <- req while
// that worker blocks sending on the unbuffered completion channel. With 2
// workers, buffer 1 and 4 closed-loop requesters it stops for good; the
// same cell of TestNoDeadlockMatrix finishes. It runs in a synctest bubble,
// so the deadlock is seen as an event, not guessed from a stall: Wait
// returns once every goroutine of the bubble is durably blocked, which,
// with requests still unanswered and nothing outside the bubble to wake
// them, is a deadlock by definition.
func TestTextbookDispatchDeadlocks(t *testing.T) {
	const perRequester = 100_000 // far more than it takes to deadlock
	synctest.Test(t, func(t *testing.T) {
		tb := startTextbook(2, 1, 4, perRequester)
		synctest.Wait()
		answered := tb.progress.Load()
		close(tb.kill) // release every goroutine of the reference
		tb.wg.Wait()
		require.Less(t, answered, int64(4*perRequester), "the textbook dispatch answered every request; expected a deadlock")
		t.Logf("textbook dispatch deadlocked after %d answers", answered)
	})
}

// textbook is Pike's balancer as published, with one addition: every
// blocking operation also selects on kill, so the test can release it.
type textbook struct {
	requests chan tbRequest
	done     chan *tbWorker
	pool     tbPool
	kill     chan struct{}
	wg       sync.WaitGroup
	progress atomic.Int64
}

type tbRequest struct {
	fn func() int
	c  chan int
}

type tbWorker struct {
	requests chan tbRequest
	pending  int
	index    int
}

type tbPool []*tbWorker

func (p tbPool) Len() int           { return len(p) }
func (p tbPool) Less(i, j int) bool { return p[i].pending < p[j].pending }
func (p tbPool) Swap(i, j int) {
	p[i], p[j] = p[j], p[i]
	p[i].index, p[j].index = i, j
}
func (p *tbPool) Push(x any) {
	w := x.(*tbWorker)
	w.index = len(*p)
	*p = append(*p, w)
}
func (p *tbPool) Pop() any {
	old := *p
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*p = old[:len(old)-1]
	return w
}

func startTextbook(workers, buffer, requesters, per int) *textbook {
	tb := &textbook{requests: make(chan tbRequest), done: make(chan *tbWorker), kill: make(chan struct{})}
	for range workers {
		w := &tbWorker{requests: make(chan tbRequest, buffer)}
		heap.Push(&tb.pool, w)
		tb.wg.Go(func() { tb.work(w) })
	}
	tb.wg.Go(tb.balance)
	for range requesters {
		tb.wg.Go(func() { tb.request(per) })
	}
	return tb
}

// request sends per requests, each waiting for its answer.
func (tb *textbook) request(per int) {
	c := make(chan int, 1)
	for range per {
		select {
		case tb.requests <- tbRequest{fn: func() int { return 1 }, c: c}:
		case <-tb.kill:
			return
		}
		select {
		case <-c:
			tb.progress.Add(1)
		case <-tb.kill:
			return
		}
	}
}

func (tb *textbook) work(w *tbWorker) {
	for {
		var req tbRequest
		select {
		case req = <-w.requests:
		case <-tb.kill:
			return
		}
		req.c <- req.fn()
		select {
		case tb.done <- w: // unbuffered: blocks until the balancer receives
		case <-tb.kill:
			return
		}
	}
}

func (tb *textbook) balance() {
	for {
		select {
		case req := <-tb.requests:
			w := heap.Pop(&tb.pool).(*tbWorker)
			select {
			case w.requests <- req: // the textbook's blocking send
			case <-tb.kill:
				return
			}
			w.pending++
			heap.Push(&tb.pool, w)
		case w := <-tb.done:
			w.pending--
			heap.Fix(&tb.pool, w.index)
		case <-tb.kill:
			return
		}
	}
}

// distinct returns its arguments without repeats, in order.
func distinct(ns ...int) []int {
	var out []int
	for _, n := range ns {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
