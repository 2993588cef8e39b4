package strategies

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"
	"time"
)

func init() {
	register("nginx-swrr", func(w []int, o ...Option) (Strategy, error) { return newNginxSWRR(w, o...) })
}

// nginxMaxMembers bounds the members present at once (drained ones
// included), so that W stays below 2^40 and every product the changes
// compute fits 128 bits and every current weight 63 (see rescale).
const nginxMaxMembers = 1 << 20

// nginxCarry is how many picks of debt or credit a member carries across a
// change at most. nginx's rule never reached 1 in the tests (the smoothness
// table's worst is 0.998), so this only bites after changes that piled
// debts up; it keeps every number small whatever the history of changes.
const nginxCarry = 2

// nginxSWRR, registered as "nginx-swrr", is nginx's smooth weighted
// round-robin, exactly: the rule of ngx_http_upstream_get_peer in nginx's
// round-robin upstream module. On every pick each eligible member's current
// weight grows by its weight, the member with the largest current weight
// wins (ties to the lowest index) and its current weight drops by W, the sum
// of the weights. With 5,1,1 that is a a b a c a a, the order nginx and
// ports of its rule give, which configurations carried over from them may
// rely on. swrr, whose windows bound every member's lag below one pick,
// gives a a a b a c a instead.
//
// nginx's effective weight, which it lowers after a failed request and
// raises back by one a pick, is the weight here: failures are the
// caller's to report, with SetWeight or a slow start ramp.
//
// Without changes, current weights always sum to 0, so a member's current
// weight over W is the number of picks it is owed: its share of the picks
// so far less the picks it got. nginx has no rule for a change: a reload
// builds its peers afresh, every current weight 0. Resetting here would
// give the heaviest member the first pick after every change, so frequent
// changes would starve the others. Instead a change keeps what each
// member is owed, in picks: current weights scale by W′/W, a newcomer (or
// a drained member coming back) is owed nothing, and what a member that
// leaves (Remove, or weight 0) was owed is shared evenly by the others,
// so that the current weights sum to 0 again. Keeping the current weights
// unscaled instead would burst: removing the heavy member of 100,1,1
// leaves the light ones up to 100 apart with W′ = 2, about 50 picks in a
// row for one of them. No bound on the lag after a change is promised;
// the tests check that it stays small (TestNginxSWRRNoBurstAfterChange).
//
// Pick scans every eligible member: O(n), with no allocation. Medians of
// BenchmarkPick (docs/strategies.md): 13 ns at 10 members, 144 ns at 100,
// 1.0 µs at 1000, 7.8 µs at 10 000, where swrr takes 22, 57, 58 and 67 ns.
// Below a few tens of members it is the cheaper of the two; from about a
// hundred a pick costs more than the dispatcher spends on a whole task
// (about 80 ns), and from a thousand more than ten times that: there swrr,
// O(log n), is the choice unless the order must be nginx's. A
// membership change costs O(n) plus a sort of the rounding remainders. At
// most 2^20 members may be present at once. Not safe for concurrent use.
type nginxSWRR struct {
	members
	// The eligible members in index order, as parallel arrays so that a
	// pick streams through two of them.
	cw []int64 // current weights
	w  []int64
	id []int32

	rem   []uint64 // scratch for rescale
	order []int32
}

var _ interface {
	Dynamic
	Forgetter
	Declarer
	Cyclic
} = (*nginxSWRR)(nil)

// newNginxSWRR returns nginx's smooth weighted round-robin over members
// with the given weights.
func newNginxSWRR(weights []int, opts ...Option) (*nginxSWRR, error) {
	if _, err := uses("nginx-swrr", opts); err != nil {
		return nil, err
	}
	if len(weights) > nginxMaxMembers {
		return nil, fmt.Errorf("%w: %d members (max %d)", ErrTooLarge, len(weights), nginxMaxMembers)
	}
	m, err := newMembers(weights)
	if err != nil {
		return nil, err
	}
	s := &nginxSWRR{members: m}
	for i, w := range weights {
		if w > 0 {
			s.cw = append(s.cw, 0)
			s.w = append(s.w, int64(w))
			s.id = append(s.id, int32(i))
		}
	}
	return s, nil
}

// Pick returns the member nginx's rule picks.
func (s *nginxSWRR) Pick(uint64) int {
	cw := s.cw
	w := s.w[:len(cw)]
	best := 0
	top := cw[0] + w[0]
	cw[0] = top
	for k := 1; k < len(cw); k++ {
		c := cw[k] + w[k]
		cw[k] = c
		if c > top { // strict: a tie stays with the lower index, as in nginx
			top, best = c, k
		}
	}
	cw[best] -= int64(s.total)
	return int(s.id[best])
}

// Done is a no-op: nginx-swrr ignores completions.
func (s *nginxSWRR) Done(int, time.Duration) {}

// Add adds a member; it is owed nothing, so it neither waits for nor
// bursts to catch up with the picks made before it came.
func (s *nginxSWRR) Add(weight int) (int, error) {
	if s.present >= nginxMaxMembers {
		return 0, fmt.Errorf("%w: %d members present (max %d)", ErrTooLarge, s.present, nginxMaxMembers)
	}
	oldW := int64(s.total)
	i, err := s.add(weight)
	if err != nil {
		return 0, err
	}
	if weight > 0 {
		s.insert(i, weight) // a forgotten index may be below others
	}
	s.rescale(oldW)
	return i, nil
}

// Remove removes member i; what it was owed is shared by the others.
func (s *nginxSWRR) Remove(i int) error {
	oldW := int64(s.total)
	if err := s.remove(i); err != nil {
		return err
	}
	s.drop(i)
	s.rescale(oldW)
	return nil
}

// SetWeight changes i's weight, keeping what it is owed in picks; 0 drains
// it as a Remove would, and coming back it is owed nothing.
func (s *nginxSWRR) SetWeight(i, weight int) error {
	oldW := int64(s.total)
	if err := s.setWeight(i, weight); err != nil {
		return err
	}
	p, found := slices.BinarySearch(s.id, int32(i))
	switch {
	case weight == 0:
		s.drop(i)
	case found:
		s.w[p] = int64(weight)
	default:
		s.insert(i, weight)
	}
	s.rescale(oldW)
	return nil
}

// Forget frees removed member i's index for a later Add (see Forgetter).
// A removed member is not among the eligible ones, so it costs O(log n).
func (s *nginxSWRR) Forget(i int) error { return s.forget(i) }

// insert puts member i, owed nothing, in the eligible arrays at its place
// in index order.
func (s *nginxSWRR) insert(i, weight int) {
	p, _ := slices.BinarySearch(s.id, int32(i))
	s.cw = slices.Insert(s.cw, p, 0)
	s.w = slices.Insert(s.w, p, int64(weight))
	s.id = slices.Insert(s.id, p, int32(i))
}

// drop takes member i out of the eligible arrays, if it is there.
func (s *nginxSWRR) drop(i int) {
	if p, found := slices.BinarySearch(s.id, int32(i)); found {
		s.cw = slices.Delete(s.cw, p, p+1)
		s.w = slices.Delete(s.w, p, p+1)
		s.id = slices.Delete(s.id, p, p+1)
	}
}

// rescale turns the current weights, counted against the old W, into
// current weights against the new one that keep each member's debt in
// picks, cw/W: cw′ = (cw − C/n′)·W′/W, where C is the sum of the carried
// current weights over the n′ eligible members (what the ones that left
// were owed, negated) and each carries at most nginxCarry picks. The
// results are floored and the k units the floors lose in all go to the k
// largest remainders (ties to the lower index), so the new current
// weights sum to 0 exactly, as nginx's rule needs to stay bounded.
//
// Bounds, with n′ ≤ 2^20 and so W, W′ ≤ 2^40: |n′·cw − C| ≤ 2^62 after
// the clamp, its product with W′ fits 128 bits, and the quotient, at most
// 2·nginxCarry·W′ in size, fits 64. Between changes no current weight
// falls below the lower of −W and the lowest one after the change (the
// winner's is at least W/n before it drops by W, the others only grow)
// and, as they sum to 0, none rises above n′ times that: below 2^63.
func (s *nginxSWRR) rescale(oldW int64) {
	newW := int64(s.total)
	n := int64(len(s.cw))
	var c int64
	for k, x := range s.cw {
		x = min(max(x, -nginxCarry*oldW), nginxCarry*oldW)
		s.cw[k] = x
		c += x
	}
	if c == 0 && newW == oldW {
		return // nothing owed changes hands and the unit is the same
	}
	d := uint64(n) * uint64(oldW)
	s.rem = s.rem[:0]
	s.order = s.order[:0]
	var lost int64
	for k, x := range s.cw {
		q, r := mulFloorDiv(n*x-c, uint64(newW), d)
		s.cw[k] = q
		s.rem = append(s.rem, r)
		lost -= q
		if r != 0 {
			s.order = append(s.order, int32(k))
		}
	}
	// lost = Σr/d < n: the floors dropped less than one unit each.
	slices.SortFunc(s.order, func(a, b int32) int {
		if o := cmp.Compare(s.rem[b], s.rem[a]); o != 0 {
			return o
		}
		return cmp.Compare(a, b)
	})
	for _, k := range s.order[:lost] {
		s.cw[k]++
	}
}

// mulFloorDiv returns q = ⌊a·b/d⌋ and r = a·b − q·d in [0, d), for b ≥ 0
// and d > 0, provided |a·b/d| < 2^63 and a is not the smallest int64.
func mulFloorDiv(a int64, b, d uint64) (int64, uint64) {
	ua := uint64(a)
	if a < 0 {
		ua = -ua
	}
	hi, lo := bits.Mul64(ua, b)
	q, r := bits.Div64(hi, lo, d)
	switch {
	case a >= 0:
		return int64(q), r
	case r == 0:
		return -int64(q), 0
	default:
		return -int64(q) - 1, d - r
	}
}

// check verifies the invariants a change must keep; tests call it.
func (s *nginxSWRR) check() error {
	var sum, w int64
	for k, x := range s.cw {
		sum += x
		w += s.w[k]
		if !s.eligible(int(s.id[k])) || int64(s.weight[s.id[k]]) != s.w[k] || k > 0 && s.id[k] <= s.id[k-1] {
			return fmt.Errorf("nginx-swrr: eligible array wrong at %d: member %d", k, s.id[k])
		}
	}
	if sum != 0 || w != int64(s.total) || len(s.cw) != s.live {
		return fmt.Errorf("nginx-swrr: current weights sum to %d, weights to %d (total %d), %d eligible of %d", sum, w, s.total, len(s.cw), s.live)
	}
	return nil
}

// Traits: a cycle of picks; completions do nothing.
func (s *nginxSWRR) Traits() Traits { return Traits{IgnoresDone: true} }

// Cycle is W/g picks, W the sum of the weights and g their greatest
// common divisor: after W/g picks from the constructor's state every
// current weight is back to 0.
func (s *nginxSWRR) Cycle() int { return weightCycle(&s.members) }
