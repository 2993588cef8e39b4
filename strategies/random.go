package strategies

import "time"

func init() {
	register("random", func(w []int, o ...Option) (Strategy, error) { return newRandom(w, o...) })
}

// random picks an eligible member uniformly, ignoring weights other than 0
// (drained), like brpc's "random". The draw is unbiased (Lemire's
// multiply-shift with rejection) and repeatable under WithSeed.
//
// Pick costs O(1) and allocates nothing; a membership change costs O(n). Not
// safe for concurrent use.
type random struct {
	members
	order []int // eligible members
	rng   rng
}

var _ interface {
	Dynamic
	Forgetter
	Declarer
	Sampler
} = (*random)(nil)

// newRandom returns a uniform random strategy over members with the given
// weights.
func newRandom(weights []int, opts ...Option) (*random, error) {
	if _, err := uses("random", opts); err != nil {
		return nil, err
	}
	m, err := newMembers(weights)
	if err != nil {
		return nil, err
	}
	s := &random{members: m, rng: newRNG(newConfig(opts).seed)}
	s.rebuild()
	return s, nil
}

// Pick returns a uniformly chosen eligible member.
func (s *random) Pick(uint64) int {
	return s.order[s.rng.intn(uint64(len(s.order)))]
}

// Done is a no-op: random ignores completions.
func (s *random) Done(int, time.Duration) {}

// Add adds a member.
func (s *random) Add(weight int) (int, error) {
	i, err := s.add(weight)
	if err != nil {
		return 0, err
	}
	s.rebuild()
	return i, nil
}

// Remove removes member i.
func (s *random) Remove(i int) error {
	if err := s.remove(i); err != nil {
		return err
	}
	s.rebuild()
	return nil
}

// SetWeight changes i's weight; only 0 versus positive matters here.
func (s *random) SetWeight(i, weight int) error {
	if err := s.setWeight(i, weight); err != nil {
		return err
	}
	s.rebuild()
	return nil
}

// Forget frees removed member i's index for a later Add (see Forgetter).
// Only the eligible members are in the draw, so it costs O(log n).
func (s *random) Forget(i int) error { return s.forget(i) }

func (s *random) rebuild() {
	s.order = s.order[:0]
	for i := range s.weight {
		if s.eligible(i) {
			s.order = append(s.order, i)
		}
	}
}

// Traits: one random draw a pick; completions do nothing.
func (s *random) Traits() Traits { return Traits{IgnoresDone: true} }

// NewRand returns a generator where the strategy's stands.
func (s *random) NewRand() *AtomicRand { return newAtomicRand(s.rng) }

// PickFrom returns a uniformly chosen eligible member, drawn from r.
func (s *random) PickFrom(r *AtomicRand) int {
	return s.order[r.intn(uint64(len(s.order)))]
}
