package grpcbalancer

import (
	"math/bits"
	"slices"
	"sync/atomic"

	"github.com/gobalancer/balancer/strategies"
	"google.golang.org/grpc/balancer"
)

// Strategies whose Pick depends on nothing a call changes get a lock-free
// picker: round-robin, iwrr and swrr repeat a fixed schedule, random and
// weighted-random draw from fixed tables. Their Done is a no-op, so their
// state between two membership changes is a position in a sequence, which
// one atomic word can hold. Everything else (least-pending, least-requests,
// p2c, latency, bounded-hash) updates per-member state on every Pick and
// Done and keeps the mutex; consistent-hash does too, because the strategies
// package does not promise that its Pick may run concurrently.
const (
	lfNone     = iota
	lfSchedule // the strategy's own picks over one period, replayed
	lfUniform  // random: uniform over the eligible members
	lfAlias    // weighted-random: an alias table over the eligible members
)

// maxSchedule caps a replayed period (4 bytes an entry, so 256 KiB): a
// period is the weights' sum over their GCD, and one beyond this keeps the
// mutex rather than spend that memory and the picks to record it on every
// membership change.
const maxSchedule = 1 << 16

func lockFreeKind(strategy string) int {
	switch strategy {
	case "round-robin", "iwrr", "swrr":
		return lfSchedule
	case "random":
		return lfUniform
	case "weighted-random":
		return lfAlias
	}
	return lfNone
}

// cacheLine keeps a cursor's word apart from whatever the allocator puts
// next to it: every pick of the channel writes it.
const cacheLine = 64

// cursor is a channel's position in its schedule, or its random state. It
// outlives pickers, so an update that keeps the weights continues the
// schedule where it was instead of restarting it at its head (gRPC sends a
// new picker whenever any child changes state), and one that changes them
// lands at a phase set by the picks so far, not always at the head.
type cursor struct {
	_ [cacheLine]byte
	n atomic.Uint64
	_ [cacheLine - 8]byte
}

// The random strategies' generator is wyrand, a Weyl sequence through a
// mixer: its state only ever advances by a constant, so an atomic add gives
// every concurrent draw its own state, and a channel seeded like the
// strategy draws the strategy's sequence. These constants are the
// strategies package's (rng.go); TestLockFreeMatchesStrategy pins them.
const (
	wyGamma = 0xa0761d6478bd642f
	wyMix   = 0xe7037ed1a0b428db
	wySalt  = 0xda3e39cb94b95bdb
)

func newCursor(kind int, cfg *Config) *cursor {
	c := &cursor{}
	if kind == lfUniform || kind == lfAlias {
		seed := uint64(1) // the strategies package's default seed
		if cfg.Seed != nil {
			seed = *cfg.Seed
		}
		c.n.Store(mix64(seed ^ wySalt))
	}
	return c
}

func (c *cursor) uint64() uint64 {
	s := c.n.Add(wyGamma)
	hi, lo := bits.Mul64(s, s^wyMix)
	return hi ^ lo
}

// intn is Lemire's unbiased multiply-shift, as the random strategy draws.
func (c *cursor) intn(n uint64) uint64 {
	hi, lo := bits.Mul64(c.uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(c.uint64(), n)
		}
	}
	return hi
}

func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// selector is the immutable part of a lock-free picker: what a pick maps
// the cursor to. Pickers of the same weights share it.
type selector struct {
	kind  int
	cur   *cursor
	sched []int32 // lfSchedule: member per position; lfUniform: eligible members
	col   []aliasCol
}

// newSelector builds the selector of a lock-free strategy over members with
// the given weights. ok is false when the strategy's period is too long to
// replay (the caller keeps the mutex). The strategy is built only to check
// the weights and, for a schedule, to record its picks: the picker never
// calls it.
func newSelector(kind int, cfg *Config, weights []int, cur *cursor) (_ *selector, ok bool, err error) {
	s, err := strategies.New(cfg.Strategy, weights, cfg.options()...)
	if err != nil {
		return nil, false, err
	}
	sel := &selector{kind: kind, cur: cur}
	switch kind {
	case lfSchedule:
		sel.sched, ok = record(s, cfg.Strategy, weights)
		return sel, ok, nil
	case lfUniform:
		for i, w := range weights {
			if w > 0 {
				sel.sched = append(sel.sched, int32(i))
			}
		}
	case lfAlias:
		sel.col = buildAlias(weights)
	}
	return sel, true, nil
}

// record returns one period of the strategy's picks from its initial
// state, or false when the period exceeds maxSchedule or one period does
// not give every member exactly its share (then replaying it would not be
// the strategy: fall back to calling it under the mutex).
func record(s strategies.Strategy, name string, weights []int) ([]int32, bool) {
	g, sum, live := 0, 0, 0
	for _, w := range weights {
		if w > 0 {
			g, sum, live = gcd(g, w), sum+w, live+1
		}
	}
	period := sum / g
	if name == "round-robin" {
		period = live // it ignores weights other than 0
	}
	if period > maxSchedule {
		return nil, false
	}
	sched := make([]int32, period)
	count := make([]int, len(weights))
	for k := range sched {
		i := s.Pick(0)
		sched[k] = int32(i)
		count[i]++
	}
	for i, w := range weights {
		want := 0
		if w > 0 {
			want = w / g
			if name == "round-robin" {
				want = 1
			}
		}
		if count[i] != want {
			return nil, false
		}
	}
	return sched, true
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// next returns the member of the next pick.
func (s *selector) next() int32 {
	switch s.kind {
	case lfSchedule:
		k := s.cur.n.Add(1) - 1
		return s.sched[k%uint64(len(s.sched))]
	case lfUniform:
		return s.sched[s.cur.intn(uint64(len(s.sched)))]
	}
	return sampleAlias(s.col, s.cur.uint64())
}

// lockFreePicker is the picker of a lock-free strategy: one atomic add (two
// on a rare random rejection) and the child's pick. Its Done is the child's:
// these strategies ignore completions, so there is nothing to report and
// nothing to allocate.
type lockFreePicker struct {
	sel     *selector
	pickers []balancer.Picker // member index -> READY child's picker
}

func (p *lockFreePicker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	return p.pickers[p.sel.next()].Pick(info)
}

// aliasCol is a column of Vose's alias table: it yields self with
// probability thr/2^64 and alias otherwise. It is the weighted-random
// strategy's table (strategies/alias.go), rebuilt here because that one is
// not exported and its draws are not safe to share.
type aliasCol struct {
	thr   uint64
	self  int32
	alias int32
}

// buildAlias builds the table over the members of positive weight in exact
// integer arithmetic: column c holds w_i·n in units of 1/W.
func buildAlias(weights []int) []aliasCol {
	var col []aliasCol
	var scaled []uint64
	W := uint64(0)
	for _, w := range weights {
		W += uint64(w)
	}
	n := 0
	for _, w := range weights {
		if w > 0 {
			n++
		}
	}
	var small, large []int32
	for i, w := range weights {
		if w == 0 {
			continue
		}
		p := uint64(w) * uint64(n)
		c := int32(len(col))
		scaled = append(scaled, p)
		col = append(col, aliasCol{self: int32(i), alias: int32(i)})
		if p < W {
			small = append(small, c)
		} else {
			large = append(large, c)
		}
	}
	for len(small) > 0 && len(large) > 0 {
		s := small[len(small)-1]
		small = small[:len(small)-1]
		l := large[len(large)-1]
		col[s].thr, _ = bits.Div64(scaled[s], 0, W) // scaled[s] < W: fits
		col[s].alias = col[l].self
		scaled[l] -= W - scaled[s]
		if scaled[l] < W {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	for _, c := range slices.Concat(large, small) {
		col[c].thr = ^uint64(0) // exactly full: always itself
	}
	return col
}

// sampleAlias maps one draw to a member: the high word of u·n picks the
// column, the low word is the coin.
func sampleAlias(col []aliasCol, u uint64) int32 {
	c, coin := bits.Mul64(u, uint64(len(col)))
	e := &col[c]
	if coin < e.thr {
		return e.self
	}
	return e.alias
}
