package strategies

import "time"

func init() {
	register("random", func(w []int, o ...Option) (Strategy, error) { return NewRandom(w, o...) })
}

// Random picks an eligible member uniformly, ignoring weights other than 0
// (drained), like brpc's "random". The draw is unbiased (Lemire's
// multiply-shift with rejection) and repeatable under WithSeed.
//
// Pick costs O(1) and allocates nothing; a membership change costs O(n). Not
// safe for concurrent use.
type Random struct {
	members
	order []int // eligible members
	rng   rng
}

var _ interface {
	Dynamic
	Forgetter
	Declarer
	Sampler
} = (*Random)(nil)

// NewRandom returns a uniform random strategy over members with the given
// weights.
func NewRandom(weights []int, opts ...Option) (*Random, error) {
	if _, err := uses("random", opts); err != nil {
		return nil, err
	}
	m, err := newMembers(weights)
	if err != nil {
		return nil, err
	}
	s := &Random{members: m, rng: newRNG(newConfig(opts).seed)}
	s.rebuild()
	return s, nil
}

// Pick returns a uniformly chosen eligible member.
func (s *Random) Pick(uint64) int {
	return s.order[s.rng.intn(uint64(len(s.order)))]
}

// Done is a no-op: random ignores completions.
func (s *Random) Done(int, time.Duration) {}

// Add adds a member.
func (s *Random) Add(weight int) (int, error) {
	i, err := s.add(weight)
	if err != nil {
		return 0, err
	}
	s.rebuild()
	return i, nil
}

// Remove removes member i.
func (s *Random) Remove(i int) error {
	if err := s.remove(i); err != nil {
		return err
	}
	s.rebuild()
	return nil
}

// SetWeight changes i's weight; only 0 versus positive matters here.
func (s *Random) SetWeight(i, weight int) error {
	if err := s.setWeight(i, weight); err != nil {
		return err
	}
	s.rebuild()
	return nil
}

// Forget frees removed member i's index for a later Add (see Forgetter).
// Only the eligible members are in the draw, so it costs O(log n).
func (s *Random) Forget(i int) error { return s.forget(i) }

func (s *Random) rebuild() {
	s.order = s.order[:0]
	for i := range s.weight {
		if s.eligible(i) {
			s.order = append(s.order, i)
		}
	}
}

// Traits: one random draw a pick; completions do nothing.
func (s *Random) Traits() Traits { return Traits{IgnoresDone: true} }

// NewRand returns a generator where the strategy's stands.
func (s *Random) NewRand() *AtomicRand { return newAtomicRand(s.rng) }

// PickFrom returns a uniformly chosen eligible member, drawn from r.
func (s *Random) PickFrom(r *AtomicRand) int {
	return s.order[r.intn(uint64(len(s.order)))]
}
