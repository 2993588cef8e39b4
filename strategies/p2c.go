package strategies

import "time"

func init() {
	register("p2c", func(w []int, o ...Option) (Strategy, error) { return newP2C(w, o...) })
}

// p2c is the power of two choices (Mitzenmacher 2001; Envoy's and gRPC's
// least-request with choice count 2): draw two members in proportion to
// their weights and take the one with the lower pending/weight, compared as
// pending_a·w_b < pending_b·w_a. A tie keeps the first draw, so with nothing
// pending the shares are the weights. Pick counts pending until Done.
//
// Pick costs O(1) (two alias-table draws) and allocates nothing; a
// membership change costs O(n). Not safe for concurrent use.
type p2c struct {
	members
	tab     aliasTable
	rng     rng
	pending []int
}

var _ interface {
	Dynamic
	Forgetter
	Declarer
} = (*p2c)(nil)

// newP2C returns a power-of-two-choices strategy over members with the given
// weights.
func newP2C(weights []int, opts ...Option) (*p2c, error) {
	if _, err := uses("p2c", opts); err != nil {
		return nil, err
	}
	m, err := newMembers(weights)
	if err != nil {
		return nil, err
	}
	s := &p2c{members: m, rng: newRNG(newConfig(opts).seed), pending: make([]int, len(weights))}
	s.tab.build(&s.members)
	return s, nil
}

// Pick returns the less loaded of two weighted draws and counts one more
// pending on it.
func (s *p2c) Pick(uint64) int {
	a := s.tab.sample(s.rng.uint64())
	b := s.tab.sample(s.rng.uint64())
	if s.pending[b]*s.weight[a] < s.pending[a]*s.weight[b] {
		a = b
	}
	s.pending[a]++
	return a
}

// Done counts one request of member i as no longer pending.
func (s *p2c) Done(i int, _ time.Duration) {
	if s.has(i) && s.pending[i] > 0 {
		s.pending[i]--
	}
}

// Pending returns member i's pending count as the strategy sees it.
func (s *p2c) Pending(i int) int {
	if !s.has(i) {
		return 0
	}
	return s.pending[i]
}

// Add adds a member with nothing pending.
func (s *p2c) Add(weight int) (int, error) {
	i, err := s.add(weight)
	if err != nil {
		return 0, err
	}
	s.pending = put(s.pending, i, 0)
	s.tab.build(&s.members)
	return i, nil
}

// Remove removes member i.
func (s *p2c) Remove(i int) error {
	if err := s.remove(i); err != nil {
		return err
	}
	s.tab.build(&s.members)
	return nil
}

// SetWeight changes i's weight, keeping its pending count.
func (s *p2c) SetWeight(i, weight int) error {
	if err := s.setWeight(i, weight); err != nil {
		return err
	}
	s.tab.build(&s.members)
	return nil
}

// Forget frees removed member i's index for a later Add (see Forgetter).
// Only the eligible members are in the alias table, so it costs O(log n).
func (s *p2c) Forget(i int) error {
	if err := s.forget(i); err != nil {
		return err
	}
	s.pending = fit(s.pending, s.Len())
	return nil
}

// Traits: completions count, their times do not.
func (s *p2c) Traits() Traits { return Traits{IgnoresElapsed: true} }
