package strategies

import (
	"fmt"
	"math"
	"time"
)

func init() {
	register("bounded-hash", func(w []int, o ...Option) (Strategy, error) { return newBoundedHash(w, o...) })
}

// boundedHash, registered as "bounded-hash", is consistent hashing with
// bounded loads (Mirrokni, Thorup and Zadimoghaddam, SODA 2018; arXiv 2016):
// a key goes to its ring owner unless that member already has its capacity
// ⌈c·(m+1)·w_i/W⌉ pending, m being the pending total, in which case it walks
// on along the ring to the first member under its capacity. So no member
// exceeds ⌈c·mean⌉ (weighted) at pick time, and a key stays on its member
// while that member is under the bound. c is WithLoadFactor (default 1.25,
// must be > 1). Pick counts pending until Done.
//
// Affinity is kept only under the bound, and so is order: while a key's
// owner is at its bound, the key's next request goes to another member,
// where it may be served before the earlier ones still pending at the
// owner. One hot key submitted faster than it is served therefore spreads
// over every member, in no particular order. Requests of one key keep
// their order only when each is sent after the previous one completed;
// consistent-hash keeps a key on its member whatever the load.
//
// The ring is consistent-hash's, with its points per member and its
// rebuilds (see consistentHash): a round of Add, two rebuilding SetWeight
// and Remove at 100 members takes 1.06 ms (1.05–1.07 ms, Intel Xeon, 2
// cores, 2026-12-01:
// go test -run '^$' -bench 'BenchmarkMembership/strategy=bounded-hash/n=100$' -benchtime 200ms -count 5 ./strategies/).
//
// Pick costs O(1) expected plus a walk of expected length O(1/(c−1)²) when
// the owner is full, and allocates nothing. Not safe for concurrent use.
type boundedHash struct {
	members
	ring    hashRing
	c       float64
	pending []int
	sum     int // pending over present members
}

var _ interface {
	Dynamic
	Forgetter
	Declarer
} = (*boundedHash)(nil)

// newBoundedHash returns a bounded-load consistent-hashing strategy over
// members with the given weights.
func newBoundedHash(weights []int, opts ...Option) (*boundedHash, error) {
	cfg, err := uses("bounded-hash", opts, "WithVirtualNodes", "WithLoadFactor")
	if err != nil {
		return nil, err
	}
	if !(cfg.loadFactor > 1) || math.IsInf(cfg.loadFactor, 0) {
		return nil, fmt.Errorf("%w: load factor %v must be > 1", ErrBadOption, cfg.loadFactor)
	}
	m, err := newMembers(weights)
	if err != nil {
		return nil, err
	}
	r, err := newHashRing(&m, cfg.virtualNodes)
	if err != nil {
		return nil, err
	}
	return &boundedHash{members: m, ring: r, c: cfg.loadFactor, pending: make([]int, len(weights))}, nil
}

// Pick returns the first member at or after key's ring point that is under
// its load bound, and counts one more pending on it.
func (s *boundedHash) Pick(key uint64) int {
	// pending < ⌈f·w⌉ is pending < f·w for an integer pending.
	f := s.c * float64(s.sum+1) / float64(s.total)
	j := s.ring.lookup(mix64(key))
	for {
		o := s.ring.owner(j)
		if float64(s.pending[o]) < f*float64(s.weight[o]) {
			s.pending[o]++
			s.sum++
			return o
		}
		// Capacities sum to c·(m+1) > m, so someone is under the bound and
		// the walk ends within one lap.
		if j++; j == len(s.ring.pts) {
			j = 0
		}
	}
}

// Done counts one request of member i as no longer pending.
func (s *boundedHash) Done(i int, _ time.Duration) {
	if s.has(i) && s.pending[i] > 0 {
		s.pending[i]--
		s.sum--
	}
}

// Pending returns member i's pending count as the strategy sees it.
func (s *boundedHash) Pending(i int) int {
	if !s.has(i) {
		return 0
	}
	return s.pending[i]
}

// Add adds a member; it takes over only the keys its own points cover.
func (s *boundedHash) Add(weight int) (int, error) {
	if s.next() >= ringMaxMembers {
		return 0, ErrTooLarge
	}
	i, err := s.add(weight)
	if err != nil {
		return 0, err
	}
	s.pending = put(s.pending, i, 0)
	return i, s.ring.change(&s.members, i, weight, true)
}

// Remove removes member i; its pending requests no longer count.
func (s *boundedHash) Remove(i int) error {
	if err := s.remove(i); err != nil {
		return err
	}
	s.sum -= s.pending[i]
	s.pending[i] = 0
	return s.ring.change(&s.members, i, 0, false)
}

// Forget frees removed member i's index for a later Add (see Forgetter).
// A removed member has no points and nothing pending that counts, so it
// costs O(log n).
func (s *boundedHash) Forget(i int) error {
	if err := s.forget(i); err != nil {
		return err
	}
	s.pending, s.ring.count = fit(s.pending, s.Len()), fit(s.ring.count, s.Len())
	return nil
}

// SetWeight changes i's weight and its share of the ring.
func (s *boundedHash) SetWeight(i, weight int) error {
	if err := s.setWeight(i, weight); err != nil {
		return err
	}
	return s.ring.change(&s.members, i, weight, weight > 0)
}

// Traits: completions count, their times do not.
func (s *boundedHash) Traits() Traits { return Traits{IgnoresElapsed: true} }
