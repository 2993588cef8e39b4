package strategies

import "math/bits"

// swrr's waiting members (window not yet open) sit in a timing wheel by
// window start: bucket start mod P, a singly linked list through next. The
// clock visits one bucket per pick, in order, and takes out the members
// whose window opens at that slot; a member whose start is a lap or more
// ahead stays. P is a power of two near 8n (at most W+3, beyond which no
// start reaches), so a slot's bucket holds 1/8 of a member on average and a
// waiting member is passed over about W/w/P times in all; a pick does one
// write into a random bucket instead of a heap sift. Memory: 4P bytes,
// about 32 to 64 bytes a member.
type swrrWheel struct {
	head []int32 // bucket -> first member, -1 when empty
	next []int32 // member -> next member in its bucket, -1 at the end
	mask uint64
}

// resetWheel empties the wheel and sizes it for the current members and W.
func (s *swrr) resetWheel() {
	w := &s.wheel
	p := 1 << bits.Len64(min(s.sumW+3, 8*uint64(len(s.weight)))-1)
	if len(w.head) != p {
		w.head = make([]int32, p)
		w.mask = uint64(p - 1)
	}
	for b := range w.head {
		w.head[b] = -1
	}
	for len(w.next) < len(s.weight) {
		w.next = append(w.next, -1)
	}
}

// park puts member i, whose window opens after the clock, on the wheel.
func (s *swrr) park(i int) {
	w := &s.wheel
	b := s.ent[i].start & w.mask
	w.next[i] = w.head[b]
	w.head[b] = int32(i)
}

// unpark takes off the wheel a member whose window opens at slot t, the
// clock, and returns it, or -1 when there is none.
func (s *swrr) unpark(t uint64) int {
	w := &s.wheel
	p := &w.head[t&w.mask]
	for j := *p; j >= 0; j = *p {
		if s.ent[j].start == t {
			*p = w.next[j]
			return int(j)
		}
		p = &w.next[j]
	}
	return -1
}

// skipToOpen moves the clock to the first slot where a window opens, when
// none is open: where skipIdle, which scans every member, moves it. Held
// members leave their slots unused, so the others run ahead of the clock
// and this happens about every pick while some are held: it steps over the
// slots on the wheel (about W/W_idle − 1 a pick, W_idle the weight not
// held, one bucket each) and scans only after 64 without an opening, when
// the idle members' weight is below about 1/64 of W.
func (s *swrr) skipToOpen() {
	for range 64 {
		s.t++
		if j := s.unpark(s.t); j >= 0 {
			s.park(j) // the caller takes every member opening here
			return
		}
	}
	s.skipIdle()
}

// skipIdle moves the clock to the first window start when no window is
// open (only a membership change can leave it so), rather than return a
// member early.
func (s *swrr) skipIdle() {
	t := ^uint64(0)
	for i := range s.ent {
		if s.on[i] {
			t = min(t, s.ent[i].start)
		}
	}
	s.t = t
}

// checkWheel verifies that every member with a window is either eligible
// or parked in the bucket of its start, which is after the clock.
func (s *swrr) checkWheel(eligible int) error {
	w := &s.wheel
	parked := 0
	for b, j := range w.head {
		for ; j >= 0; j = w.next[j] {
			if e := &s.ent[j]; !s.on[j] || e.start <= s.t || e.start&w.mask != uint64(b) {
				return errHeap("wheel misplaces member", int(j))
			}
			parked++
		}
	}
	on := 0
	for _, x := range s.on {
		if x {
			on++
		}
	}
	if parked+eligible != on {
		return errHeap("wheel and heap hold members", parked+eligible)
	}
	return nil
}
