package strategies

import "math/bits"

// swrr's eligible order is (window end, window start, index). The fast path
// packs it into one word, so its heap compares with one instruction:
//
//	end−base | lenMax−(end−start) | index
//
// Among equal ends the earlier start is the longer window, hence the
// complement of the length. A window is at most ⌈W/w⌉+1 ≤ W+2 slots long,
// so the length takes ⌈log₂(W+3)⌉ bits and the index ⌈log₂ n⌉; the end
// takes the rest, relative to a base at or below every held end. Every end
// keyed at slot t is at most t+W+2, so the keys fit until t reaches
// rebaseAt, at least 3W slots past the base; then rebase moves the base up
// to the smallest held end (or t) in one pass that subtracts the same
// amount from every key, which keeps the heap order. With 10 000 members of
// weight 1..100 (W ≈ 2^19) that is once in about 2^30 picks.
//
// When W is too large for this (the end field would have fewer than two
// bits more than the length: roughly W·√n above 2^31), or a membership
// change left a window so overdue that its end is more than 3W behind the
// clock, the members go to a heap of (end, start, index) triples instead,
// until the next membership change.

// key returns member i's packed eligible key.
func (s *swrr) key(i int) uint64 {
	e := &s.ent[i]
	end := e.end()
	return (end-s.base)<<s.endShift | (s.lenMax-(end-e.start))<<s.idxBit | uint64(i)
}

// layout chooses the key fields for the current W and member count, and
// the wide path if they do not fit; base is the smallest end the eligible
// members hold (or t).
func (s *swrr) layout(base uint64) {
	lenBits := uint8(bits.Len64(s.sumW + 2))
	s.idxBit = uint8(bits.Len(uint(len(s.weight) - 1)))
	s.endShift = lenBits + s.idxBit
	s.lenMax = 1<<lenBits - 1
	s.wide = 64-s.endShift < lenBits+2
	if !s.wide {
		s.setBase(base)
		s.wide = s.t >= s.rebaseAt
	}
}

func (s *swrr) setBase(b uint64) {
	s.base = b
	s.rebaseAt = b + 1<<(64-s.endShift) - (s.sumW + 8)
}

// rebase moves the base up to the smallest held end, or the clock; it
// reports false, having moved to the wide path, if the keys still would
// not fit.
func (s *swrr) rebase() bool {
	d := s.t - s.base
	for _, x := range s.pk.e {
		d = min(d, x.key>>s.endShift)
	}
	sub := d << s.endShift
	for j := range s.pk.e {
		s.pk.e[j].key -= sub
	}
	s.setBase(s.base + d)
	if s.t < s.rebaseAt {
		return true
	}
	s.goWide()
	return false
}

// goWide moves the eligible members to the (end, start, index) heap.
func (s *swrr) goWide() {
	for _, x := range s.pk.e {
		e := &s.ent[x.idx]
		s.elig.e = append(s.elig.e, hent[pair]{key: pair{e.end(), e.start}, idx: x.idx})
	}
	s.pk.reset()
	s.elig.init()
	s.wide = true
}
