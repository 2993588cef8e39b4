package benchmarks

import (
	"container/heap"
	"sync"
)

// impl=pike is the load balancer of Rob Pike's talk "Concurrency is not
// parallelism" (2012), kept as close to the slides as the Pool interface
// allows, so the dispatcher's two engines can be read against the design
// they start from. It departs from the slides for the Pool interface (Go
// has no answer channel, Do callers borrow one), to stop (the talk's
// balancer runs forever) and to rule out the talk's deadlock.
//
// Deadlock: the talk's dispatch blocks on w.requests <- req while the
// worker's buffer is full, and if that worker is itself blocked sending on
// done, which only the balancer receives, neither moves again. A worker
// blocked on done holds a finished request the balancer still counts, so
// this needs the least-loaded worker, hence every worker, to count at
// least pikeBuffer+1 requests: workers × (pikeBuffer+1) requests besides
// the one being dispatched. Neither way in lets that many exist:
//
//   - Do: each caller has at most one unanswered request, and each worker
//     at most one answered but not yet counted off, so with at most
//     pikeBuffer concurrent callers (the closed-loop families run
//     Requesters) there are fewer than pikeBuffer + workers others.
//   - Go: nothing bounds fire-and-forget callers, so Go takes a token from
//     sem (workers × pikeBuffer) that the worker gives back only once the
//     balancer has counted the completion: fewer than workers × pikeBuffer
//     others. Go calls right after Do calls have returned (the tests) add
//     at most one uncounted request per worker, still short.
//
// Go and Do at the same time on one pool is not covered; the benchmarks
// never do it.

// pikeBuffer is the capacity of each worker's request channel: the
// Requesters of the closed-loop families, as the deadlock note requires.
const pikeBuffer = Requesters

// result is what a worker sends back; the benchmark tasks return nothing.
type result struct{}

// pikeRequest is the talk's Request. c is nil for Go: nobody waits.
type pikeRequest struct {
	fn func() result
	c  chan result
}

type pikeWorker struct {
	requests chan pikeRequest
	pending  int // requests sent to it that the balancer has not counted off
	index    int // position in the heap, for heap.Fix after completed
}

// work is the talk's worker, with range instead of a bare receive so that
// closing requests stops it, and the token of a Go given back after done.
func (w *pikeWorker) work(done chan<- *pikeWorker, sem <-chan struct{}) {
	for req := range w.requests {
		r := req.fn()
		if req.c != nil {
			req.c <- r
		}
		done <- w
		if req.c == nil {
			<-sem
		}
	}
}

// pikeHeap is the talk's Pool: a heap of workers, least pending on top.
type pikeHeap []*pikeWorker

func (h pikeHeap) Len() int           { return len(h) }
func (h pikeHeap) Less(i, j int) bool { return h[i].pending < h[j].pending }

func (h pikeHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}

func (h *pikeHeap) Push(x any) {
	w := x.(*pikeWorker)
	w.index = len(*h)
	*h = append(*h, w)
}

func (h *pikeHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	w.index = -1
	*h = old[:len(old)-1]
	return w
}

type pikeBalancer struct {
	pool    pikeHeap
	done    chan *pikeWorker // unbuffered, as in the talk
	pending int              // sum over the workers, so Close knows when all are done
}

// balance is the talk's select loop. Closing work is how Close asks it to
// stop: it takes no more requests, waits for the completions of those it
// dispatched, then closes the workers' channels.
func (b *pikeBalancer) balance(work <-chan pikeRequest) {
	for work != nil || b.pending > 0 {
		select {
		case req, ok := <-work:
			if !ok {
				work = nil
				continue
			}
			b.dispatch(req)
		case w := <-b.done:
			b.completed(w)
		}
	}
	for _, w := range b.pool {
		close(w.requests)
	}
}

// dispatch sends to the least-loaded worker without taking it off the
// heap: heap.Fix after the change does what the talk's Pop and Push did.
func (b *pikeBalancer) dispatch(req pikeRequest) {
	w := b.pool[0]
	w.requests <- req
	w.pending++
	b.pending++
	heap.Fix(&b.pool, 0)
}

func (b *pikeBalancer) completed(w *pikeWorker) {
	w.pending--
	b.pending--
	heap.Fix(&b.pool, w.index)
}

type pikePool struct {
	work chan pikeRequest // unbuffered, shared by all requesters
	sem  chan struct{}    // Go's tokens; see the deadlock note
	fn   func() result
	bal  *pikeBalancer // read by the tests once Close has returned
	wg   sync.WaitGroup
}

func newPike(n int, task func()) Pool {
	p := &pikePool{
		work: make(chan pikeRequest),
		sem:  make(chan struct{}, n*pikeBuffer),
		fn:   func() result { task(); return result{} },
		bal:  &pikeBalancer{done: make(chan *pikeWorker)},
	}
	for range n {
		w := &pikeWorker{requests: make(chan pikeRequest, pikeBuffer)}
		heap.Push(&p.bal.pool, w)
		p.wg.Go(func() { w.work(p.bal.done, p.sem) })
	}
	p.wg.Go(func() { p.bal.balance(p.work) })
	return p
}

// submit is how every request enters: Go's take a token first.
func (p *pikePool) submit(req pikeRequest) {
	if req.c == nil {
		p.sem <- struct{}{}
	}
	p.work <- req
}

func (p *pikePool) Go() { p.submit(pikeRequest{fn: p.fn}) }

// resultChans stands in for the talk's requester, which makes its channel
// once and reuses it: Do callers here have no identity to keep one in.
var resultChans = sync.Pool{New: func() any { return make(chan result) }}

func (p *pikePool) Do() {
	c := resultChans.Get().(chan result)
	p.submit(pikeRequest{p.fn, c})
	<-c
	resultChans.Put(c)
}

// Close waits for every submitted request and for every goroutine to exit.
func (p *pikePool) Close() {
	close(p.work)
	p.wg.Wait()
}
