package dispatcher

// deadlineQueue is ByDeadline: a heap of the requests whose context has a
// deadline, earliest first (ties in arrival order), and a FIFO of those
// without, served only when the heap is empty.
type deadlineQueue struct {
	h    deadlineHeap
	none fifo
	seq  uint64
}

func (q *deadlineQueue) push(r *request) {
	dl, ok := r.ctx.Deadline()
	if !ok {
		q.none.push(r)
		return
	}
	q.seq++
	q.h.push(due{at: dl.UnixNano(), seq: q.seq, r: r})
}

func (q *deadlineQueue) pop() *request {
	if len(q.h) > 0 {
		return q.h.pop().r
	}
	return q.none.pop()
}

func (q *deadlineQueue) len() int { return len(q.h) + q.none.len() }

func (q *deadlineQueue) takeAll() []*request {
	var all []*request
	for _, e := range q.h {
		all = append(all, e.r)
	}
	clear(q.h)
	q.h = q.h[:0]
	return append(all, q.none.takeAll()...)
}

// due is a request with a deadline: when (Unix ns) and its arrival, which
// orders equal deadlines. Kept in the heap, not in the request, which
// every request would pay for.
type due struct {
	at  int64
	seq uint64
	r   *request
}

// deadlineHeap is a binary min-heap by (at, seq), written out rather than
// through container/heap, whose interface would box each entry (an
// allocation per request).
type deadlineHeap []due

func (h deadlineHeap) less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}

func (h *deadlineHeap) push(e due) {
	*h = append(*h, e)
	s := *h
	for j := len(s) - 1; j > 0; {
		p := (j - 1) / 2
		if !s.less(j, p) {
			break
		}
		s[j], s[p] = s[p], s[j]
		j = p
	}
}

func (h *deadlineHeap) pop() due {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s[n] = due{}
	s = s[:n]
	for j := 0; ; {
		l, m := 2*j+1, j
		if l < n && s.less(l, m) {
			m = l
		}
		if l+1 < n && s.less(l+1, m) {
			m = l + 1
		}
		if m == j {
			break
		}
		s[j], s[m] = s[m], s[j]
		j = m
	}
	*h = s
	return top
}
