package strategies

// least-requests' busy members, those with requests pending, sit in a
// 4-ary heap keyed by (pending·⌊2^40/w⌋, window end): the load compares
// pending/w without division (a pending request weighs at least 2^20, since
// w ≤ 2^20), and among equal loads the member whose swrr window ends first
// wins, as it would among idle members. A busy member's window does not
// move while it is busy, so only the load key changes on its picks and
// completions; a membership change moves every window, and relayout
// rebuilds the heap.

// lrMaxPending caps the pending count in the key so pending·inv fits in 63
// bits; beyond it members compare as equally loaded.
const lrMaxPending = 1 << 23

// load returns member i's load key.
func (s *leastRequests) load(i int) uint64 {
	e := &s.ent[i]
	return min(e.pending, lrMaxPending) * e.inv
}

// relayout brings the per-member state to the current membership after a
// change and rebuilds the busy heap, in O(n).
func (s *leastRequests) relayout() {
	n := s.tie.Len()
	for len(s.ent) < n {
		s.ent = append(s.ent, lrEnt{})
	}
	// The heap may come to hold every member: size it now so that picks
	// never grow it.
	if cap(s.busy.e) < n {
		s.busy.e = make([]hent[pair], 0, n+n/4)
	}
	s.busy.reset()
	s.busy.grow(n - 1)
	s.idle = 0
	for i := range s.ent {
		if !s.tie.eligible(i) {
			continue
		}
		e := &s.ent[i]
		e.inv = (1 << 40) / uint64(s.tie.weight[i])
		if e.pending == 0 {
			s.idle++
			continue
		}
		s.busy.e = append(s.busy.e, hent[pair]{key: pair{s.load(i), s.tie.ent[i].end()}, idx: int32(i)})
	}
	s.busy.init()
}

// check verifies swrr's order, the busy heap's keys and who is where;
// tests call it.
func (s *leastRequests) check() error {
	if err := s.tie.check(); err != nil {
		return err
	}
	if err := s.busy.check(); err != nil {
		return err
	}
	for _, x := range s.busy.e {
		if i := int(x.idx); !s.tie.eligible(i) || s.ent[i].pending == 0 || x.key.hi != s.load(i) || x.key.lo != s.tie.ent[i].end() {
			return errHeap("busy heap misplaces member", i)
		}
	}
	idle := 0
	for i := range s.ent {
		if !s.tie.eligible(i) || s.ent[i].pending != 0 {
			continue
		}
		if !s.tie.on[i] {
			return errHeap("idle member out of the tie order", i)
		}
		idle++
	}
	if idle != s.idle || idle+s.busy.len() != s.tie.live {
		return errHeap("members counted idle", s.idle)
	}
	return nil
}
