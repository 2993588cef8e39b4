package strategies

import (
	"fmt"
	"math"
	"time"
)

func init() {
	register("latency", func(w []int, o ...Option) (Strategy, error) { return newLatency(w, o...) })
}

// latency follows brpc's locality-aware balancer ("la"): it prefers the
// member whose recent completion latency, an EWMA fed by Done, times its
// pending requests plus one, divided by its weight, is lowest, so faster
// members get more and a member slowing down sheds load as its queue grows.
//
// A member with no sample yet is probed: it wins while it has nothing
// pending, then waits for that probe to complete. One pick in every
// latencyExplore goes round-robin, so a member judged slow is still sampled
// now and then and can win its share back when it recovers.
//
// Pick and Done cost O(log n) (a 4-ary indexed heap keyed by the score's
// float bits) and allocate nothing. Not safe for concurrent use.
type latency struct {
	members
	ent   []latEnt
	h     heap[pair, borrows]
	decay float64
	tick  uint64
	order []int // eligible members, for the exploring picks
	next  int
}

type latEnt struct {
	ewma    float64 // nanoseconds
	known   bool
	pending int
	last    uint64 // tick of the last pick: the tie-break
}

// latencyExplore is the period of the round-robin exploring pick.
const latencyExplore = 64

var _ interface {
	Dynamic
	Forgetter
	Declarer
} = (*latency)(nil)

// newLatency returns a latency-aware strategy over members with the given
// weights. WithDecay sets the EWMA's weight of a new sample.
func newLatency(weights []int, opts ...Option) (*latency, error) {
	c, err := uses("latency", opts, "WithDecay")
	if err != nil {
		return nil, err
	}
	if !(c.decay > 0 && c.decay <= 1) {
		return nil, fmt.Errorf("%w: decay %v not in (0, 1]", ErrBadOption, c.decay)
	}
	m, err := newMembers(weights)
	if err != nil {
		return nil, err
	}
	s := &latency{members: m, ent: make([]latEnt, len(weights)), decay: c.decay}
	for i := range weights {
		s.ent[i].last = uint64(i)
		s.sync(i)
	}
	s.tick = uint64(len(weights))
	s.reorder()
	return s, nil
}

// score orders members: lower is better. Non-negative floats order like
// their bits, so the heap compares integers.
func (s *latency) score(i int) uint64 {
	e := &s.ent[i]
	if !e.known {
		if e.pending == 0 {
			return 0
		}
		return math.Float64bits(math.Inf(1))
	}
	return math.Float64bits(e.ewma * float64(e.pending+1) / float64(s.weight[i]))
}

// Pick returns the member with the lowest latency score, or every
// latencyExplore picks the next member in turn, and counts one more pending
// on it.
func (s *latency) Pick(uint64) int {
	s.tick++
	i := int(s.h.top().idx)
	if s.tick%latencyExplore == 0 {
		if s.next >= len(s.order) {
			s.next = 0
		}
		i = s.order[s.next]
		s.next++
	}
	e := &s.ent[i]
	e.pending++
	e.last = s.tick
	s.h.set(i, pair{s.score(i), e.last})
	return i
}

// Done counts one request of member i as no longer pending and feeds elapsed
// into its latency average.
func (s *latency) Done(i int, elapsed time.Duration) {
	if !s.has(i) {
		return
	}
	e := &s.ent[i]
	if e.pending > 0 {
		e.pending--
	}
	x := float64(max(elapsed, 1))
	if e.known {
		e.ewma += s.decay * (x - e.ewma)
	} else {
		e.ewma, e.known = x, true
	}
	if s.h.has(i) {
		s.h.set(i, pair{s.score(i), e.last})
	}
}

// Pending returns member i's pending count as the strategy sees it.
func (s *latency) Pending(i int) int {
	if !s.has(i) {
		return 0
	}
	return s.ent[i].pending
}

// Add adds a member; it has no sample yet, so it is probed first.
func (s *latency) Add(weight int) (int, error) {
	i, err := s.add(weight)
	if err != nil {
		return 0, err
	}
	s.ent = put(s.ent, i, latEnt{last: s.tick})
	s.sync(i)
	s.reorder()
	return i, nil
}

// Remove removes member i.
func (s *latency) Remove(i int) error {
	if err := s.remove(i); err != nil {
		return err
	}
	s.sync(i)
	s.reorder()
	return nil
}

// SetWeight changes i's weight, keeping its latency average and pending
// count; 0 drains it.
func (s *latency) SetWeight(i, weight int) error {
	if err := s.setWeight(i, weight); err != nil {
		return err
	}
	s.sync(i)
	s.reorder()
	return nil
}

// Forget frees removed member i's index for a later Add (see Forgetter);
// a removed member is in no heap, so it costs O(log n). A member added at
// that index has no latency sample: it is probed first.
func (s *latency) Forget(i int) error {
	if err := s.forget(i); err != nil {
		return err
	}
	s.ent, s.h.pos = fit(s.ent, s.Len()), fit(s.h.pos, s.Len())
	return nil
}

func (s *latency) sync(i int) {
	switch {
	case !s.eligible(i):
		s.h.remove(i)
	case s.h.has(i):
		s.h.set(i, pair{s.score(i), s.ent[i].last})
	default:
		s.h.push(i, pair{s.score(i), s.ent[i].last})
	}
}

func (s *latency) reorder() {
	s.order = s.order[:0]
	for i := range s.weight {
		if s.eligible(i) {
			s.order = append(s.order, i)
		}
	}
}

// check verifies the heap; tests call it.
func (s *latency) check() error { return s.h.check() }

// Traits: completions and their times both count (the latency average).
func (s *latency) Traits() Traits { return Traits{} }
