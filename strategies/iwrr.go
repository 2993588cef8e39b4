package strategies

import (
	"math/bits"
	"math/rand/v2"
	"time"
)

func init() {
	register("iwrr", func(w []int, o ...Option) (Strategy, error) { return newIWRR(w, o...) })
}

// iwrr is kitex's interleaved weighted round-robin (cloudwego/kitex PR
// #1019, after the Linux O(1) scheduler): members with credit left in this
// cycle take turns; a member whose credit (its weight, spent in steps of
// the weights' GCD) runs out moves to the next cycle's queue, and the
// queues swap when the current one empties. A cycle of W/GCD picks gives
// every member exactly w_i/GCD picks.
//
// It is not smooth: heavy members take all the picks at the end of a cycle
// once the light ones are spent. On {100,100,66,1} the lag reaches about 17
// picks (see docs/strategies.md). Use swrr when smoothness matters.
//
// The queues are rings of member indices rather than kitex's linked lists,
// and there is no lock. Pick costs O(1) (a few ns at any n) and allocates
// nothing; a membership change costs O(n). Not safe for concurrent use.
type iwrr struct {
	members
	q   [2]iring
	cur int // index in q of the current cycle's queue
	rem []int32
	gcd int32

	// A member that joins (Add, or SetWeight from 0) takes the next pick
	// unless the last pick went to one that joined: joiner is the member
	// placed at the head for it (-1: none), joinerPicked whether the last
	// pick was a joiner's. So joiners take at most every other pick.
	joiner       int32
	joinerPicked bool
}

// iring is a FIFO of member indices in a ring buffer whose length is a
// power of two, so a slot is head&mask; head only grows (it may wrap).
type iring struct {
	buf     []int32
	head, n int
}

func newIRing(c int) iring {
	return iring{buf: make([]int32, 1<<bits.Len(uint(max(c, 1)-1)))}
}

func (r *iring) at(j int) *int32 { return &r.buf[(r.head+j)&(len(r.buf)-1)] }

func (r *iring) push(x int32) {
	*r.at(r.n) = x
	r.n++
}

func (r *iring) holds(x int32) bool {
	for j := 0; j < r.n; j++ {
		if *r.at(j) == x {
			return true
		}
	}
	return false
}

// filter keeps the members keep accepts, in order, with room for c.
func (r *iring) filter(c int, keep func(int32) bool) {
	out := newIRing(c)
	for j := 0; j < r.n; j++ {
		if x := *r.at(j); keep(x) {
			out.push(x)
		}
	}
	*r = out
}

var _ interface {
	Dynamic
	Forgetter
	Declarer
	Cyclic
} = (*iwrr)(nil)

// newIWRR returns an interleaved weighted round-robin strategy over members
// with the given weights. With WithRandomStart the first cycle begins at a
// seeded random member, as kitex's does.
func newIWRR(weights []int, opts ...Option) (*iwrr, error) {
	if _, err := uses("iwrr", opts, "WithRandomStart"); err != nil {
		return nil, err
	}
	m, err := newMembers(weights)
	if err != nil {
		return nil, err
	}
	n := len(weights)
	s := &iwrr{members: m, rem: make([]int32, n), joiner: -1}
	s.q[0], s.q[1] = newIRing(n), newIRing(n)
	off := 0
	if c := newConfig(opts); c.randomStart {
		off = rand.New(rand.NewPCG(c.seed, 0x9e3779b97f4a7c15)).IntN(n)
	}
	for k := range n {
		i := (k + off) % n
		if m.eligible(i) {
			s.rem[i] = int32(m.weight[i])
			s.q[0].push(int32(i))
		}
	}
	s.regcd()
	return s, nil
}

// Pick returns the next member with credit left in this cycle. A member
// that keeps credit goes from the head of the ring to its tail, which is
// one store; one that runs out moves to the other ring.
func (s *iwrr) Pick(uint64) int {
	c := s.cur
	if s.q[c].n == 0 {
		c ^= 1
		s.cur = c
	}
	q := &s.q[c]
	i := *q.at(0)
	q.head++
	s.joinerPicked, s.joiner = i == s.joiner, -1
	r := s.rem[i] - s.gcd
	if r > 0 {
		s.rem[i] = r
		*q.at(q.n - 1) = i
	} else {
		s.rem[i] = int32(s.weight[i])
		q.n--
		s.q[c^1].push(i)
	}
	return int(i)
}

// Done is a no-op: iwrr ignores completions.
func (s *iwrr) Done(int, time.Duration) {}

// Add adds a member (see join).
func (s *iwrr) Add(weight int) (int, error) {
	i, err := s.add(weight)
	if err != nil {
		return 0, err
	}
	s.rem = put(s.rem, i, int32(weight))
	s.resize()
	s.regcd()
	if weight > 0 {
		s.join(int32(i))
	}
	return i, nil
}

// join places a member that arrives: it takes its full credit in the next
// cycle, as kitex's newcomers do, so the cycle in progress keeps its
// shares. Kitex's alone would never pick a member that leaves before the
// next cycle (one that comes and goes, or a cycle the others keep long),
// so it first takes the next pick as a step of credit of its own, unless
// the last pick went to a joiner. Joiners thus take at most every other
// pick: a member that stays is picked at least once in every 4·W/g picks,
// W the largest total weight in that time, whatever the others do.
func (s *iwrr) join(i int32) {
	s.rem[i] = s.gcd
	if s.joiner >= 0 || s.joinerPicked {
		s.rem[i] = int32(s.weight[i])
		s.q[s.cur^1].push(i)
		return
	}
	q := &s.q[s.cur]
	q.head--
	q.n++
	*q.at(0) = i
	s.joiner = i
}

// Remove removes member i from whichever queue holds it.
func (s *iwrr) Remove(i int) error {
	if err := s.remove(i); err != nil {
		return err
	}
	s.drop(i)
	s.regcd()
	return nil
}

// SetWeight changes i's weight. A lower weight caps the credit it has left
// in this cycle; a higher one applies from the next cycle; 0 drains it and a
// drained member coming back joins as a new one does (see join).
func (s *iwrr) SetWeight(i, weight int) error {
	old := s.Weight(i)
	if err := s.setWeight(i, weight); err != nil {
		return err
	}
	s.regcd()
	switch {
	case weight == 0:
		s.drop(i)
	case old == 0:
		s.join(int32(i))
	case s.q[s.cur^1].holds(int32(i)):
		s.rem[i] = int32(weight) // not started on this cycle's credit
	default:
		s.rem[i] = min(s.rem[i], int32(weight))
	}
	return nil
}

// Forget frees removed member i's index for a later Add (see Forgetter).
// A removed member is in no queue, so it costs O(log n).
func (s *iwrr) Forget(i int) error {
	if err := s.forget(i); err != nil {
		return err
	}
	s.rem = fit(s.rem, s.Len())
	return nil
}

func (s *iwrr) drop(i int) {
	if int(s.joiner) == i {
		s.joiner = -1
	}
	for k := range s.q {
		s.q[k].filter(len(s.weight), func(x int32) bool { return int(x) != i })
	}
}

// resize gives both rings room for every member index.
func (s *iwrr) resize() {
	for k := range s.q {
		if len(s.q[k].buf) < len(s.weight) {
			s.q[k].filter(len(s.weight), func(int32) bool { return true })
		}
	}
}

// regcd recomputes the step: the GCD of the positive weights, so that a
// cycle is as short as the weights allow.
func (s *iwrr) regcd() {
	g := 0
	for i, w := range s.weight {
		if s.eligible(i) {
			g = gcd(g, w)
		}
	}
	s.gcd = int32(g)
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// Traits: a cycle of picks; completions do nothing.
func (s *iwrr) Traits() Traits { return Traits{IgnoresDone: true} }

// Cycle is W/g picks, W the sum of the weights and g their greatest
// common divisor, the credit step: one swap of the queues.
func (s *iwrr) Cycle() int { return weightCycle(&s.members) }
