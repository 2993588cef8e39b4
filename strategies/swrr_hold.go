package strategies

// Hooks that let least-requests use swrr as the tie order of its members
// with nothing pending: a member that is busy is held out of swrr's order
// (it keeps its window but has none open: on is false) and rejoins when it
// is idle again. Holding is lazy: a member that turns busy stays where it
// is until it reaches the top, so when every pick is completed before the
// next one nobody is ever held and the order is exactly swrr's.

// next returns the member Pick would return, without picking it: it does
// what Pick does first (move the keys' base, or the clock to the next slot
// where a window opens), so that the member is at the top of the heap and a
// Pick that follows takes it. At least one member must have a window.
func (s *SWRR) next() int {
	if !s.wide && s.t >= s.rebaseAt {
		s.rebase() // leaves s.wide set if the keys no longer fit
	}
	if s.wide {
		if s.elig.len() == 0 {
			s.skipToOpen()
			for j := s.unpark(s.t); j >= 0; j = s.unpark(s.t) {
				s.elig.push(j, s.ent[j].end(), s.ent[j].start)
			}
		}
		return int(s.elig.top().idx)
	}
	if s.pk.len() == 0 {
		s.skipToOpen()
		s.setBase(s.t) // no key is held: the base moves with the clock
		for j := s.unpark(s.t); j >= 0; j = s.unpark(s.t) {
			s.pk.push(j, s.key(j))
		}
	}
	return int(s.pk.e[0].idx)
}

// skipToOpen moves the clock to the first slot where a window opens, when
// none is open: where skipIdle, which scans every member, moves it. Held
// members leave their slots unused, so the others run ahead of the clock
// and this happens about every pick while some are held: it steps over the
// slots on the wheel (about W/W_idle − 1 a pick, W_idle the weight not
// held, one bucket each) and scans only after 64 without an opening, when
// the idle members' weight is below about 1/64 of W.
func (s *SWRR) skipToOpen() {
	for range 64 {
		s.t++
		if j := s.unpark(s.t); j >= 0 {
			s.park(j) // the caller takes every member opening here
			return
		}
	}
	s.skipIdle()
}

// holdTop takes the member next returned out of the order, keeping its
// window for rejoin.
func (s *SWRR) holdTop() {
	if s.wide {
		s.on[s.elig.pop().idx] = false
		return
	}
	s.on[s.pk.pop().idx] = false
}

// rejoin puts back a member holdTop took out; one that was never taken out
// stays as it is. A window that ended while the member was held is
// replaced by a fresh one opening now, as a newcomer's: the member takes
// its share from here on instead of the picks it missed in a burst.
func (s *SWRR) rejoin(i int) {
	if s.on[i] {
		return
	}
	e := &s.ent[i]
	if e.end() <= s.t {
		e.start, e.endQ, e.endR = s.t, s.t+e.stepQ, e.stepR
	}
	s.on[i] = true
	switch {
	case e.start > s.t:
		s.park(i)
	case s.wide:
		s.elig.push(i, e.end(), e.start)
	default:
		s.pk.push(i, s.key(i))
	}
}
