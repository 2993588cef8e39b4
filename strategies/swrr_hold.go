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
func (s *swrr) next() int {
	if !s.wide && s.t >= s.rebaseAt {
		s.rebase() // leaves s.wide set if the keys no longer fit
	}
	if s.wide {
		if s.elig.len() == 0 {
			fill(s, &s.elig)
		}
		return int(s.elig.e[0].idx)
	}
	if s.pk.len() == 0 {
		fill(s, &s.pk)
	}
	return int(s.pk.e[0].idx)
}

// holdTop takes the member next returned out of the order, keeping its
// window for rejoin.
func (s *swrr) holdTop() {
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
func (s *swrr) rejoin(i int) {
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
		s.elig.push(i, pair{e.end(), e.start})
	default:
		s.pk.push(i, s.key(i))
	}
}
