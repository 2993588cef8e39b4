package dispatcher

import (
	"cmp"
	"errors"
	"slices"
)

// The end of a group: Wait's and Results' wait for every answer, and the
// result slice and error they leave.

// drain waits, with g.mu held, for the answer of every slot accepted and
// for every submit in progress (and what the tasks submit meanwhile).
func (g *Group[R]) drain() {
	for {
		gen := g.accepts
		// chunks may grow while the lock is released: index, not range.
		for i := 0; i < len(g.chunks); i++ {
			c := g.chunks[i]
			for c.received < c.accepted {
				g.mu.Unlock()
				<-c.done
				g.mu.Lock()
				c.received++
			}
		}
		if g.reserving > 0 {
			g.waiting = true
			g.wake.Wait()
			g.waiting = false
			continue
		}
		if g.accepts == gen {
			return
		}
	}
}

// finish collects the results once every kept slot is answered and no
// submit is in progress; g.mu is held, and released.
func (g *Group[R]) finish() {
	g.finished = true
	chunks, count, values := g.chunks, g.count, !g.taken
	g.chunks, g.free, g.kept, g.lastKept, g.batch = nil, nil, nil, nil, nil
	g.done.Store(nil)
	g.mu.Unlock()

	g.res, g.err = g.results(chunks, count, values)
	g.yielded = nil
	g.cancel(nil)
}

// results reads every kept slot once all are answered: the values of
// the tasks that succeeded unless a Results range has taken them, and
// the group's error, from them and from the failures Results yielded.
func (g *Group[R]) results(chunks []*groupChunk[R], count int, values bool) ([]R, error) {
	var res []R
	if values {
		res = make([]R, count)
	}
	fs := g.yielded
	for _, c := range chunks {
		for i := range c.used {
			s := &c.slots[i]
			if s.index < 0 {
				continue // free, or yielded
			}
			if s.r.err != nil {
				// Wait promises the zero value for a failed task, whatever
				// it returned beside its error: a value nobody should use,
				// which the slice would otherwise keep alive.
				fs = g.note(fs, s.index, s.r.err)
			} else if values {
				res[s.index] = s.res
			}
		}
	}
	switch {
	case g.bad != nil:
		return res, g.bad
	case g.collect:
		// Slots are reused, so the chunks are not in submission order.
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
