package strategies

import (
	"math/bits"
	"time"
)

func init() {
	register("least-requests", func(w []int, o ...Option) (Strategy, error) { return NewLeastRequests(w, o...) })
}

// LeastRequests is skipper's leastRequests (zalando/skipper v0.27.53): the
// member with the lowest pending/weight wins, and ties go in smooth weighted
// order, so with equal weights and nothing pending it is round-robin.
// skipper scans every endpoint, O(n) (437 µs at 10 000); this keeps the
// members with requests pending in a 4-ary indexed heap keyed by
// pending·⌊2^40/w⌋, so the ratio is compared without division, and those
// with nothing pending, which tie on load 0, in a heap keyed by one word
// that holds their tie order (lr_idle.go).
//
// The tie order is a virtual clock (start-time fair queuing): each member
// has a virtual start that advances by ⌊2^40/w⌋ per pick and is never more
// than half a pick behind the clock, and ties go to the lowest midpoint
// start + ⌊2^40/w⌋/2. A member back from being busy therefore resumes its
// turn instead of catching up in a burst. A change of weight keeps a
// member's place in its turn (rephase), and a newcomer's first turn is
// spread by its index, so a change brings no burst (a raise went to 25.4
// picks off the share, an Add before the first pick to 83). There is no
// bound like swrr's: the order has no windows, and shows a lag of up to
// 2.24 counted from arbitrary picks of runs without any change; after
// random changes, members that come and go leave the turns unevenly
// spread, and the lag counted from a change reached 3.4 in about 15 000 random
// sequences.
//
// Pick and Done cost O(log n) and allocate nothing: a pick of an idle
// member is one one-word sift, its Done one short climb back (about 940
// instructions and 65 ns for both at 10 000 members); among busy members a
// pick is a sift of (load, midpoint, index) triples. Keeping the idle keys
// in range costs O(n) each time the clock moves about 2^(64−⌈log₂ n⌉)
// (2^50 at 10 000 members: some 2^29 picks with weights 1..100). Not safe
// for concurrent use.
type LeastRequests struct {
	members
	ent  []lrEnt
	h    dheap // members with requests pending, or all of them when merged
	idle kheap // members with nothing pending, by one word (lr_idle.go)
	vt   uint64
	now  uint64 // midpoint of the last pick: where the tie order stands

	split      bool   // idle members are in idle, not in h
	base       uint64 // idle keys hold midpoint − base
	idxBit     uint8
	maintainAt uint64 // virtual time of the next rebase or split attempt
}

type lrEnt struct {
	pending uint64
	inv     uint64 // ⌊2^40/w⌋: pending·inv orders by pending/w
	start   uint64 // virtual start of the member's next pick
}

// lrMaxPending caps the pending count in the key so pending·inv fits in 63
// bits; beyond it members compare as equally loaded.
const lrMaxPending = 1 << 23

var _ Dynamic = (*LeastRequests)(nil)

// NewLeastRequests returns a least-requests strategy over members with the
// given weights.
func NewLeastRequests(weights []int, opts ...Option) (*LeastRequests, error) {
	if _, err := uses("least-requests", opts); err != nil {
		return nil, err
	}
	m, err := newMembers(weights)
	if err != nil {
		return nil, err
	}
	s := &LeastRequests{members: m, ent: make([]lrEnt, len(weights))}
	s.idle.cmov = true
	for i := range weights {
		if m.eligible(i) {
			e := &s.ent[i]
			e.inv = (1 << 40) / uint64(m.weight[i])
			// Stagger the first turns by index, i/n of a turn each: equal
			// weights still go in index order, and light members do not all
			// tie at one virtual instant, which would serve them in a burst
			// between two halves of a heavy member's turns.
			// The midpoints fall at 2^40 + i/n of a turn.
			hi, lo := bits.Mul64(e.inv, uint64(i))
			q, _ := bits.Div64(hi, lo, uint64(len(weights)))
			e.start = 1<<40 + q - e.inv/2
		}
	}
	// The clock starts at the first turn, the lowest midpoint, not at 0: a
	// member added before the first pick starts there, and from 0 it would
	// take every pick until its turns reached the others' (83 picks in a
	// row for a member of weight 87 beside 26 others). No midpoint is below
	// it, so catchUp raises nobody and ties go as from 0.
	s.vt = 1 << 41
	for i := range s.ent {
		if e := &s.ent[i]; m.eligible(i) {
			s.vt = min(s.vt, e.start+e.inv/2)
		}
	}
	s.now = s.vt
	s.resplit()
	return s, nil
}

func (e *lrEnt) keys() (uint64, uint64) {
	return min(e.pending, lrMaxPending) * e.inv, e.start + e.inv/2
}

// Pick returns the member with the lowest pending/weight and counts one more
// pending on it.
func (s *LeastRequests) Pick(uint64) int {
	if s.vt >= s.maintainAt {
		s.maintain()
	}
	if s.split && s.idle.len() > 0 {
		// Nothing pending ranks below any load: the first idle member.
		i := int(s.idle.e[0].idx)
		s.idle.pop()
		k1, k2 := s.take(i)
		s.h.push(i, k1, k2)
		return i
	}
	i := int(s.h.top().idx)
	k1, k2 := s.take(i)
	s.h.set(i, k1, k2)
	return i
}

// take counts a pick of member i and returns its new keys.
func (s *LeastRequests) take(i int) (uint64, uint64) {
	e := &s.ent[i]
	e.pending++
	st := s.catchUp(e)
	s.vt = max(s.vt, st)
	s.now = st + e.inv/2
	e.start = st + e.inv
	return e.keys()
}

// Done counts one request of member i as no longer pending.
func (s *LeastRequests) Done(i int, _ time.Duration) {
	if !s.has(i) || s.ent[i].pending == 0 {
		return
	}
	s.ent[i].pending--
	if s.eligible(i) {
		s.place(i)
	}
}

// catchUp returns e's start, raised to within half a pick of the clock. A
// member that has been tied for picks all along is never below that (the
// winner has the lowest midpoint), so only one back from being busy, or new,
// is raised: it resumes its turn instead of catching up in a burst.
func (s *LeastRequests) catchUp(e *lrEnt) uint64 {
	if floor := s.vt - min(s.vt, e.inv/2); e.start < floor {
		return floor
	}
	return e.start
}

// lrRebaseAt is where the virtual clock is moved back: it advances by up to
// 2^40 a pick, so without it a member's start would wrap 2^64 after about
// 2^24 picks of weight-1 members, and the wrapped member would take every
// tie.
const lrRebaseAt = 1 << 62

// rebase moves the virtual clock and every start back by the same amount,
// keeping starts within 2^42 of the clock; a start further behind is
// raised, which catchUp would do at the member's next pick anyway (only
// their order among themselves may change, once in about 2^22 picks).
func (s *LeastRequests) rebase() {
	d := s.vt - 1<<42
	for i := range s.ent {
		e := &s.ent[i]
		e.start = max(e.start, d) - d
	}
	s.vt -= d
	s.now = max(s.now, d) - d
	s.resplit()
}

// Pending returns member i's pending count as the strategy sees it.
func (s *LeastRequests) Pending(i int) int {
	if !s.has(i) {
		return 0
	}
	return int(s.ent[i].pending)
}

// Add adds a member. It starts with nothing pending, so it takes picks until
// its load matches the others', as a fresh worker should; among ties its
// first turn comes within one of the last pick's, not ahead of everyone.
func (s *LeastRequests) Add(weight int) (int, error) {
	i, err := s.add(weight)
	if err != nil {
		return 0, err
	}
	// The first turn comes u of one after the last pick's, u the golden
	// ratio sequence of the index (Weyl): members added together, one as
	// heavy as the other, would otherwise share one turn and be served
	// back to back, 2.6 picks ahead of their share beside a heavy member.
	e := lrEnt{start: s.now}
	if weight > 0 {
		inv := uint64(1<<40) / uint64(weight)
		u, _ := bits.Mul64(uint64(i)*0x9e3779b97f4a7c15, inv)
		e.start = s.now + u - min(s.now+u, inv/2)
	}
	s.ent = append(s.ent, e)
	if bits.Len(uint(i)) > int(s.idxBit) {
		s.resplit() // the index takes one more bit of the idle keys
	}
	s.sync(i)
	return i, nil
}

// Remove takes member i out of the heaps.
func (s *LeastRequests) Remove(i int) error {
	if err := s.remove(i); err != nil {
		return err
	}
	s.place(i)
	return nil
}

// SetWeight changes i's weight, keeping its pending count; 0 drains it.
func (s *LeastRequests) SetWeight(i, weight int) error {
	if err := s.setWeight(i, weight); err != nil {
		return err
	}
	s.sync(i)
	return nil
}

// sync gives member i fresh keys for its weight, or takes it out.
func (s *LeastRequests) sync(i int) {
	if s.eligible(i) {
		e := &s.ent[i]
		inv := (1 << 40) / uint64(s.weight[i])
		if e.inv != 0 && e.inv != inv {
			e.start = s.rephase(e.start, e.inv, inv)
		}
		e.inv = inv
		e.start = s.catchUp(e)
	}
	s.place(i)
}

// rephase moves a start from a member's old period to its new one keeping
// its phase: the distance of its next midpoint from the last pick's, as a
// fraction of the period, is the same. Kept as is, a start a whole old turn
// ahead would hold back a member whose weight was raised for that old turn
// (a burst of the others), and one behind would let a lowered member catch
// up at its new rate.
func (s *LeastRequests) rephase(start, from, to uint64) uint64 {
	mid := start + from/2
	d, ahead := mid-s.now, mid >= s.now
	if !ahead {
		d = s.now - mid
	}
	hi, lo := bits.Mul64(d, to)
	if hi >= from {
		d = 1 << 62 // beyond any start the clock could reach before a rebase
	} else {
		d, _ = bits.Div64(hi, lo, from)
	}
	mid = s.now - min(d, s.now)
	if ahead {
		mid = s.now + min(d, 1<<62)
	}
	return mid - min(mid, to/2)
}
