package strategies

import (
	"container/heap"
	"time"
)

func init() {
	register("least-pending", func(w []int, o ...Option) (Strategy, error) { return NewLeastPending(w, o...) })
}

// LeastPending is Pike's heap load balancer: the member with the fewest
// pending requests wins, ties go round-robin (the member picked longest ago
// wins). Pick counts the request pending on the member until Done. Weights
// only gate membership: weight 0 drains a member.
//
// Pick and Done cost O(log n) and allocate nothing. Not safe for concurrent
// use.
type LeastPending struct {
	members
	ent  []lpEntry
	h    lpHeap
	tick uint64
}

type lpEntry struct {
	pending int
	last    uint64 // tick of the member's last pick: the round-robin tie-break
	pos     int    // position in the heap, -1 when not in it
}

var _ Dynamic = (*LeastPending)(nil)

// NewLeastPending returns a least-pending strategy over members with the
// given weights.
func NewLeastPending(weights []int, _ ...Option) (*LeastPending, error) {
	m, err := newMembers(weights)
	if err != nil {
		return nil, err
	}
	s := &LeastPending{members: m, ent: make([]lpEntry, len(weights))}
	s.h.s = s
	for i := range s.ent {
		s.ent[i].pos = -1
		// Start ties in index order: member 0 first.
		s.ent[i].last = uint64(i)
		if m.weight[i] > 0 {
			s.ent[i].pos = len(s.h.idx)
			s.h.idx = append(s.h.idx, i)
		}
	}
	s.tick = uint64(len(weights))
	heap.Init(&s.h)
	return s, nil
}

// Pick returns the member with the fewest pending requests and counts one
// more pending on it.
func (s *LeastPending) Pick(uint64) int {
	i := s.h.idx[0]
	e := &s.ent[i]
	e.pending++
	s.tick++
	e.last = s.tick
	heap.Fix(&s.h, 0)
	return i
}

// Done counts one request of member i as no longer pending.
func (s *LeastPending) Done(i int, _ time.Duration) {
	if i < 0 || i >= len(s.ent) || s.ent[i].pending == 0 {
		return
	}
	e := &s.ent[i]
	e.pending--
	if e.pos >= 0 {
		heap.Fix(&s.h, e.pos)
	}
}

// Pending returns member i's pending count as the strategy sees it.
func (s *LeastPending) Pending(i int) int {
	if i < 0 || i >= len(s.ent) {
		return 0
	}
	return s.ent[i].pending
}

// Add adds a member; it starts with no pending requests, so it takes the
// next picks until it catches up with the others, as a fresh worker should.
func (s *LeastPending) Add(weight int) (int, error) {
	i, err := s.add(weight)
	if err != nil {
		return 0, err
	}
	s.tick++
	s.ent = append(s.ent, lpEntry{last: s.tick, pos: -1})
	s.sync(i)
	return i, nil
}

// Remove takes member i out of the heap; it is never picked again.
func (s *LeastPending) Remove(i int) error {
	if err := s.remove(i); err != nil {
		return err
	}
	s.sync(i)
	return nil
}

// SetWeight changes i's weight; 0 takes it out of the heap, positive puts it
// back with the pending count it has.
func (s *LeastPending) SetWeight(i, weight int) error {
	if err := s.setWeight(i, weight); err != nil {
		return err
	}
	s.sync(i)
	return nil
}

// sync puts member i in the heap or takes it out to match eligibility.
func (s *LeastPending) sync(i int) {
	e := &s.ent[i]
	switch in := e.pos >= 0; {
	case s.eligible(i) && !in:
		heap.Push(&s.h, i)
	case !s.eligible(i) && in:
		heap.Remove(&s.h, e.pos)
	}
}

// lpHeap is an indexed min-heap of member indices ordered by (pending, last),
// with each member's position kept in its entry, as in container/heap's
// priority-queue example.
type lpHeap struct {
	idx []int
	s   *LeastPending
}

func (h *lpHeap) Len() int { return len(h.idx) }
func (h *lpHeap) Less(a, b int) bool {
	ea, eb := &h.s.ent[h.idx[a]], &h.s.ent[h.idx[b]]
	if ea.pending != eb.pending {
		return ea.pending < eb.pending
	}
	return ea.last < eb.last
}
func (h *lpHeap) Swap(a, b int) {
	h.idx[a], h.idx[b] = h.idx[b], h.idx[a]
	h.s.ent[h.idx[a]].pos = a
	h.s.ent[h.idx[b]].pos = b
}
func (h *lpHeap) Push(x any) {
	i := x.(int)
	h.s.ent[i].pos = len(h.idx)
	h.idx = append(h.idx, i)
}
func (h *lpHeap) Pop() any {
	n := len(h.idx) - 1
	i := h.idx[n]
	h.idx = h.idx[:n]
	h.s.ent[i].pos = -1
	return i
}
