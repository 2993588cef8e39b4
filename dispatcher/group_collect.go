package dispatcher

import (
	"cmp"
	"errors"
	"slices"
)

// The end of a group: Wait's and Results' wait for every answer, and the
// result slice and error they leave.

// drain waits, with g.mu held, for the answer of every slot kept and not
// yet yielded, and for every submit in progress (and what the tasks
// submit meanwhile).
func (g *Group[R]) drain() {
	if g.completion && g.taken {
		// Results took every kept slot off done and yielded it, or the
		// range was left early: the slots still kept are on done or on
		// their way there.
		for g.pending > 0 || g.reserving > 0 {
			if s := g.nextCompleted(); s != nil {
				g.release(s)
			}
		}
		return
	}
	// The list may grow while the lock is released: last is the slot
	// ready so far.
	var last *groupSlot[R]
	for {
		s := g.kept
		if last != nil {
			s = last.after
		}
		if s == nil {
			if g.reserving == 0 {
				return
			}
			g.waitSettled()
			continue
		}
		g.ready(s)
		last = s
	}
}

// ready waits, with g.mu held, until kept slot s's submit has settled and
// s is answered.
func (g *Group[R]) ready(s *groupSlot[R]) {
	for {
		st := s.state.Load()
		switch {
		case st&slotKept == 0:
			// A Go has its place from its start; its settle wakes us.
			g.waitSettled()
		case st&slotAnswered == 0:
			g.mu.Unlock()
			s.await(nil)
			g.mu.Lock()
		default:
			return
		}
	}
}

// waitSettled waits, with g.mu held, for a submit to settle.
func (g *Group[R]) waitSettled() {
	g.waiting = true
	g.settled.Wait()
	g.waiting = false
}

// finish collects the results once every kept slot is answered and no
// submit is in progress; g.mu is held, and released.
func (g *Group[R]) finish() {
	g.finished = true
	kept, count, values := g.kept, g.count, !g.taken
	g.kept, g.lastKept, g.free, g.batch = nil, nil, nil, nil
	g.done.Store(nil)
	g.mu.Unlock()

	g.res, g.err = g.results(kept, count, values)
	g.yielded = nil
	g.cancel(nil)
}

// results reads every slot kept and not yielded, all answered: the values
// of the tasks that succeeded unless a Results range has taken them, and
// the group's error, from them and from the failures Results yielded.
func (g *Group[R]) results(kept *groupSlot[R], count int, values bool) ([]R, error) {
	var res []R
	if values {
		res = make([]R, count)
	}
	fs := g.yielded
	for s := kept; s != nil; s = s.after {
		if s.r.err != nil {
			// Wait promises the zero value for a failed task, whatever
			// it returned beside its error: a value nobody should use,
			// which the slice would otherwise keep alive.
			fs = g.note(fs, s.index, s.r.err)
		} else if values {
			res[s.index] = s.res
		}
	}
	switch {
	case g.bad != nil:
		return res, g.bad
	case g.collect:
		// Results yields in completion order too: sort by index.
		slices.SortFunc(fs, func(a, b failure) int { return cmp.Compare(a.index, b.index) })
		errs := make([]error, len(fs))
		for i, f := range fs {
			errs[i] = f.err
		}
		return res, errors.Join(errs...)
	}
	if p := g.first.Load(); p != nil {
		// The failure that cancelled the group, not the cancellations it
		// caused in the tasks queued before it.
		return res, *p
	}
	// Only failures the group did not see happen (a request answered
	// without running: the parent context ended, Close gave up, a strategy
	// picked no worker): the first in submission order.
	if len(fs) > 0 {
		return res, fs[0].err
	}
	return res, nil
}

// note adds the failure of the task at index to fs, which keeps what the
// group's error needs: every failure with CollectErrors, otherwise the
// first in submission order.
func (g *Group[R]) note(fs []failure, index int, err error) []failure {
	switch {
	case g.collect || len(fs) == 0:
		return append(fs, failure{index, err})
	case index < fs[0].index:
		fs[0] = failure{index, err}
	}
	return fs
}

// failure is a task's error and its place in submission order.
type failure struct {
	index int
	err   error
}
