package strategies

import "math/bits"

// least-requests keeps its members with nothing pending apart, in a heap
// keyed by one word: their load is 0, below every busy member's (a pending
// request weighs ⌊2^40/w⌋ ≥ 2^20), so they only need the tie order
// (midpoint, index), and that packs as
//
//	midpoint − base | index
//
// with ⌈log₂ n⌉ bits for the index. base is at or below every member's
// start (starts never fall, except when rebase moves them all), so the
// field never goes negative; it overflows only once a key is 2^(64−⌈log₂ n⌉)
// (2^50 at 10 000 members) past base. Then resplit moves base up to the
// lowest start, in O(n); should a member busy all that time still hold
// base down, the members are merged back into the one (load, midpoint,
// index) heap, and the split is tried again after the clock has moved on
// by 2^46. The order is the same either way: the split changes no pick.
//
// A pick takes the first idle member when there is one (a one-word sift)
// and moves it to the busy heap; its Done moves it back. Members with
// requests pending are ordered in the three-word heap as before.

// place puts member i where its state says, with fresh keys.
func (s *LeastRequests) place(i int) {
	if !s.eligible(i) {
		s.h.remove(i)
		s.idle.remove(i)
		return
	}
	e := &s.ent[i]
	if s.split && e.pending == 0 {
		f := e.start + e.inv/2 - s.base
		if f>>(64-s.idxBit) != 0 {
			s.resplit() // places everyone, i included
			return
		}
		k := f<<s.idxBit | uint64(i)
		s.h.remove(i)
		if s.idle.has(i) {
			s.idle.set(i, k)
		} else {
			s.idle.push(i, k)
		}
		return
	}
	s.idle.remove(i)
	k1, k2 := e.keys()
	if s.h.has(i) {
		s.h.set(i, k1, k2)
	} else {
		s.h.push(i, k1, k2)
	}
}

// maintain rebases the clock when it nears the top of its range, or tries
// the split again.
func (s *LeastRequests) maintain() {
	if s.vt >= lrRebaseAt {
		s.rebase()
	} else {
		s.resplit()
	}
}

// resplit chooses base and the layout, and rebuilds both heaps, in O(n).
func (s *LeastRequests) resplit() {
	n := len(s.ent)
	s.idxBit = uint8(bits.Len(uint(n - 1)))
	b := s.vt
	for i := range s.ent {
		if s.eligible(i) {
			b = min(b, s.ent[i].start)
		}
	}
	s.base = b
	s.split = true
	for i := range s.ent {
		if e := &s.ent[i]; s.eligible(i) && e.pending == 0 && (e.start+e.inv/2-b)>>(64-s.idxBit) != 0 {
			s.split = false
			break
		}
	}
	s.layout(s.split)
}

// layout rebuilds the heaps, split or merged.
func (s *LeastRequests) layout(split bool) {
	n := len(s.ent)
	s.split = split
	s.maintainAt = lrRebaseAt
	if !split {
		s.maintainAt = min(lrRebaseAt, s.vt+1<<46)
	}
	// Either heap may come to hold every member: size them now so that
	// picks never grow them.
	if cap(s.h.e) < n {
		s.h.e = make([]hent, 0, n+n/4)
	}
	if cap(s.idle.e) < n {
		s.idle.e = makeKents(n + n/4)
	}
	s.h.reset()
	s.idle.reset()
	s.h.grow(n - 1)
	s.idle.grow(n - 1)
	for i := range s.ent {
		if !s.eligible(i) {
			continue
		}
		e := &s.ent[i]
		if split && e.pending == 0 {
			k := (e.start+e.inv/2-s.base)<<s.idxBit | uint64(i)
			s.idle.e = append(s.idle.e, kent{key: k, idx: int32(i)})
		} else {
			k1, k2 := e.keys()
			s.h.e = append(s.h.e, hent{k1: k1, k2: k2, idx: int32(i)})
		}
	}
	s.h.init()
	s.idle.init()
}

// check verifies both heaps, their keys and who is where; tests call it.
func (s *LeastRequests) check() error {
	if err := s.h.check(); err != nil {
		return err
	}
	if err := s.idle.check(); err != nil {
		return err
	}
	for _, x := range s.h.e {
		e := &s.ent[x.idx]
		if k1, k2 := e.keys(); x.k1 != k1 || x.k2 != k2 || s.split && e.pending == 0 {
			return errHeap("busy heap misplaces member", int(x.idx))
		}
	}
	for _, x := range s.idle.e {
		e := &s.ent[x.idx]
		if !s.split || e.pending != 0 || x.key != (e.start+e.inv/2-s.base)<<s.idxBit|uint64(x.idx) {
			return errHeap("idle heap misplaces member", int(x.idx))
		}
	}
	in := 0
	for i := range s.ent {
		if s.eligible(i) {
			in++
		}
	}
	if in != s.h.len()+s.idle.len() {
		return errHeap("heaps hold members", s.h.len()+s.idle.len())
	}
	return nil
}
