package strategies

import (
	"cmp"
	"slices"
	"time"
)

func init() {
	register("least-pending", func(w []int, o ...Option) (Strategy, error) { return newLeastPending(w, o...) })
}

// leastPending, registered as "least-pending", is Pike's heap load balancer:
// the member with the fewest pending requests wins, ties go round-robin (the
// member picked longest ago wins). Pick counts the request pending on the
// member until Done. Weights only gate membership: weight 0 drains a member.
//
// The heap is a 4-ary indexed heap keyed by one word, pending count above
// the tick of the member's last pick, so a comparison is one instruction
// and a pick sinks its member with three comparisons a level (bottom-up).
// Ticks are distinct, so the order is total; when they run out of their 40
// bits they are renumbered by rank, which keeps the order. Pending counts
// above 2^24−1 compare as equal (ties then go round-robin).
//
// Pick and Done cost O(log n) and allocate nothing. Not safe for concurrent
// use.
type leastPending struct {
	members
	ent  []lpEntry
	h    heap[uint64, branches]
	tick uint64
}

type lpEntry struct {
	pending int
	last    uint64 // tick of the member's last pick: the round-robin tie-break
}

const (
	lpTickBits   = 40
	lpMaxTick    = 1<<lpTickBits - 1
	lpMaxPending = 1<<(64-lpTickBits) - 1
)

func (e *lpEntry) key() uint64 {
	return uint64(min(e.pending, lpMaxPending))<<lpTickBits | e.last
}

var _ interface {
	Dynamic
	Forgetter
	Declarer
} = (*leastPending)(nil)

// newLeastPending returns a least-pending strategy over members with the
// given weights.
func newLeastPending(weights []int, opts ...Option) (*leastPending, error) {
	if _, err := uses("least-pending", opts); err != nil {
		return nil, err
	}
	m, err := newMembers(weights)
	if err != nil {
		return nil, err
	}
	s := &leastPending{members: m, ent: make([]lpEntry, len(weights))}
	s.h.e = make([]hent[uint64], 0, len(weights))
	for i := range s.ent {
		// Start ties in index order: member 0 first.
		s.ent[i].last = uint64(i)
		if m.weight[i] > 0 {
			s.h.e = append(s.h.e, hent[uint64]{key: s.ent[i].key(), idx: int32(i)})
		}
	}
	s.h.grow(len(weights) - 1)
	s.h.init()
	s.tick = uint64(len(weights))
	return s, nil
}

// Pick returns the member with the fewest pending requests and counts one
// more pending on it.
func (s *leastPending) Pick(uint64) int {
	if s.tick >= lpMaxTick {
		s.renumber()
	}
	i := int(s.h.e[0].idx)
	e := &s.ent[i]
	e.pending++
	s.tick++
	e.last = s.tick
	s.h.e[0].key = e.key()
	s.h.down(0)
	return i
}

// Done counts one request of member i as no longer pending.
func (s *leastPending) Done(i int, _ time.Duration) {
	if i < 0 || i >= len(s.ent) || s.ent[i].pending == 0 {
		return
	}
	e := &s.ent[i]
	e.pending--
	if s.h.has(i) {
		s.h.set(i, e.key())
	}
}

// DoneN is n calls of Done(i, elapsed) with one heap fix.
func (s *leastPending) DoneN(i, n int, _ time.Duration) {
	if i < 0 || i >= len(s.ent) || s.ent[i].pending == 0 || n <= 0 {
		return
	}
	e := &s.ent[i]
	e.pending -= min(n, e.pending)
	if s.h.has(i) {
		s.h.set(i, e.key())
	}
}

// Pending returns member i's pending count as the strategy sees it.
func (s *leastPending) Pending(i int) int {
	if i < 0 || i >= len(s.ent) {
		return 0
	}
	return s.ent[i].pending
}

// Add adds a member; it starts with no pending requests (at a forgotten
// index too), so it takes the next picks until it catches up with the
// others, as a fresh worker should.
func (s *leastPending) Add(weight int) (int, error) {
	i, err := s.add(weight)
	if err != nil {
		return 0, err
	}
	if s.tick >= lpMaxTick {
		s.renumber()
	}
	s.tick++
	s.ent = put(s.ent, i, lpEntry{last: s.tick})
	s.sync(i)
	return i, nil
}

// Remove takes member i out of the heap; it is never picked again.
func (s *leastPending) Remove(i int) error {
	if err := s.remove(i); err != nil {
		return err
	}
	s.sync(i)
	return nil
}

// Forget frees removed member i's index for a later Add (see Forgetter);
// a removed member is in no heap, so it costs O(log n).
func (s *leastPending) Forget(i int) error {
	if err := s.forget(i); err != nil {
		return err
	}
	s.ent, s.h.pos = fit(s.ent, s.Len()), fit(s.h.pos, s.Len())
	return nil
}

// SetWeight changes i's weight; 0 takes it out of the heap, positive puts it
// back with the pending count it has.
func (s *leastPending) SetWeight(i, weight int) error {
	if err := s.setWeight(i, weight); err != nil {
		return err
	}
	s.sync(i)
	return nil
}

// sync puts member i in the heap or takes it out to match eligibility.
func (s *leastPending) sync(i int) {
	switch in := s.h.has(i); {
	case s.eligible(i) && !in:
		s.h.push(i, s.ent[i].key())
	case !s.eligible(i) && in:
		s.h.remove(i)
	}
}

// renumber replaces every tick by its rank among all members' ticks, once
// in 2^40 picks: the order, and so the heap, stays as it was.
func (s *leastPending) renumber() {
	idx := make([]int, len(s.ent))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(s.ent[a].last, s.ent[b].last) })
	for r, i := range idx {
		s.ent[i].last = uint64(r)
	}
	for j := range s.h.e {
		s.h.e[j].key = s.ent[s.h.e[j].idx].key()
	}
	s.tick = uint64(len(s.ent))
}

// check verifies the heap; tests call it.
func (s *leastPending) check() error { return s.h.check() }

// Traits: completions count, their times do not.
func (s *leastPending) Traits() Traits { return Traits{IgnoresElapsed: true} }
