package strategies

import (
	"math/rand/v2"
	"time"
)

func init() {
	register("round-robin", func(w []int, o ...Option) (Strategy, error) { return newRoundRobin(w, o...) })
}

// roundRobin, registered as "round-robin", picks the eligible members in
// turn, ignoring weights other than 0 (drained). With WithRandomStart it
// starts at a seeded random member, as brpc's rr does, so that many clients
// do not all hit member 0 first. Counts stay even to within one pick.
//
// Pick costs O(1) and allocates nothing. Not safe for concurrent use.
type roundRobin struct {
	members
	order []int // eligible members in index order
	next  int   // position in order of the next pick
}

var _ interface {
	Dynamic
	Forgetter
	Declarer
	Cyclic
} = (*roundRobin)(nil)

// newRoundRobin returns a round-robin strategy over members with the given
// weights.
func newRoundRobin(weights []int, opts ...Option) (*roundRobin, error) {
	if _, err := uses("round-robin", opts, "WithRandomStart"); err != nil {
		return nil, err
	}
	m, err := newMembers(weights)
	if err != nil {
		return nil, err
	}
	s := &roundRobin{members: m}
	s.rebuild(-1)
	if c := newConfig(opts); c.randomStart {
		s.next = rand.New(rand.NewPCG(c.seed, 0x9e3779b97f4a7c15)).IntN(len(s.order))
	}
	return s, nil
}

// Pick returns the next eligible member in turn.
func (s *roundRobin) Pick(uint64) int {
	i := s.order[s.next]
	s.next++
	if s.next == len(s.order) {
		s.next = 0
	}
	return i
}

// Done is a no-op: round-robin ignores completions.
func (s *roundRobin) Done(int, time.Duration) {}

// Add adds a member; it joins the turn at its index position.
func (s *roundRobin) Add(weight int) (int, error) {
	cur := s.order[s.next]
	i, err := s.add(weight)
	if err != nil {
		return 0, err
	}
	s.rebuild(cur)
	return i, nil
}

// Remove removes member i from the turn.
func (s *roundRobin) Remove(i int) error {
	cur := s.order[s.next]
	if err := s.remove(i); err != nil {
		return err
	}
	s.rebuild(cur)
	return nil
}

// SetWeight changes i's weight; only 0 versus positive matters here.
func (s *roundRobin) SetWeight(i, weight int) error {
	cur := s.order[s.next]
	if err := s.setWeight(i, weight); err != nil {
		return err
	}
	s.rebuild(cur)
	return nil
}

// Forget frees removed member i's index for a later Add (see Forgetter).
// Only the eligible members are in the turn, so it costs O(log n).
func (s *roundRobin) Forget(i int) error { return s.forget(i) }

// rebuild recomputes the turn and resumes at the first eligible member at or
// after cur, so a change neither repeats nor skips anyone.
func (s *roundRobin) rebuild(cur int) {
	s.order = s.order[:0]
	s.next = 0
	for i := range s.weight {
		if s.eligible(i) {
			if i < cur {
				s.next = len(s.order) + 1
			}
			s.order = append(s.order, i)
		}
	}
	if s.next >= len(s.order) {
		s.next = 0
	}
}

// Traits: a cycle of picks; completions do nothing.
func (s *roundRobin) Traits() Traits { return Traits{IgnoresDone: true} }

// Cycle is the number of members of positive weight: one turn.
func (s *roundRobin) Cycle() int { return len(s.order) }
