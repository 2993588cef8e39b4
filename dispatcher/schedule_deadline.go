package dispatcher

import "container/heap"

// deadlineQueue is ByDeadline: a heap of the requests whose context has a
// deadline, earliest first (ties in arrival order), and a FIFO of those
// without, served only when the heap is empty.
type deadlineQueue[R any] struct {
	h    deadlineHeap[R]
	none fifo[R]
	seq  uint64
}

func (q *deadlineQueue[R]) push(r *request[R]) {
	dl, ok := r.ctx.Deadline()
	if !ok {
		q.none.push(r)
		return
	}
	q.seq++
	r.due, r.seq = dl.UnixNano(), q.seq
	heap.Push(&q.h, r)
}

func (q *deadlineQueue[R]) pop() *request[R] {
	if len(q.h) > 0 {
		return heap.Pop(&q.h).(*request[R])
	}
	return q.none.pop()
}

func (q *deadlineQueue[R]) len() int { return len(q.h) + q.none.len() }

func (q *deadlineQueue[R]) takeAll() []*request[R] {
	all := append([]*request[R](nil), q.h...)
	clear(q.h)
	q.h = q.h[:0]
	return append(all, q.none.takeAll()...)
}

// deadlineHeap orders requests by (due, seq) for container/heap.
type deadlineHeap[R any] []*request[R]

func (h deadlineHeap[R]) Len() int { return len(h) }
func (h deadlineHeap[R]) Less(i, j int) bool {
	if h[i].due != h[j].due {
		return h[i].due < h[j].due
	}
	return h[i].seq < h[j].seq
}
func (h deadlineHeap[R]) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *deadlineHeap[R]) Push(x any)   { *h = append(*h, x.(*request[R])) }
func (h *deadlineHeap[R]) Pop() any {
	old := *h
	r := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return r
}
