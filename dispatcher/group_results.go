package dispatcher

import (
	"context"
	"iter"
)

// Results returns the group's answers as an iterator: each task's value
// and error, yielded as soon as it is answered and every task before it
// is too, in submission order; with CompletionOrder, as soon as it is
// answered, in the order the tasks finish. It runs while tasks still run
// and others are submitted (from the loop body or from other goroutines).
// A Go that was refused yields its refusal. Each task's error is yielded
// beside it: by default the first failure cancels the group, and the
// tasks it cancels yield their context's error; with CollectErrors
// nothing is cancelled.
//
// The sequence ends as Wait returns: once every task submitted before
// (and by the tasks meanwhile) has been yielded and no submit is in
// progress. So a range that catches up with a producer in another
// goroutine ends there, and the producer's next submit gets ErrGroupDone:
// such a producer keeps the range open by keeping a task unanswered until
// it is done (each task returning once the next is submitted, say). The
// group is then done, as after Wait: later submits get ErrGroupDone, the
// context is cancelled, and Wait returns the error it would have (the
// first failure, or with CollectErrors every error joined in submission
// order) with a nil slice.
//
// Memory. The range takes each value: the group keeps no answer it has
// yielded, and its next submit reuses the slot. A group ranged over
// while a producer feeds it holds the tasks in flight and the answers
// waiting to be read (in submission order, those behind a task still
// running), not every task submitted. (Without the range, Wait returns
// every value, so the group holds them all.)
//
// Leaving the range early cancels the group's context and waits for
// every task, as Wait does, before the range returns; Wait then returns
// the group's error. A panic in the loop body leaves the group as it is,
// for Wait (or another range) to finish. Results on a group already done
// (Wait or a Results range has ended) yields one (zero, ErrGroupDone); on
// a group not made by NewGroup, (zero, ErrNotStarted). A range and
// a Wait, or two ranges, run one after the other, as two Waits do.
func (g *Group[R]) Results() iter.Seq2[R, error] {
	return func(yield func(R, error) bool) {
		var zero R
		if g == nil || g.d == nil {
			yield(zero, ErrNotStarted)
			return
		}
		g.waitMu.Lock()
		defer g.waitMu.Unlock()
		if g.finished {
			yield(zero, ErrGroupDone)
			return
		}
		g.mu.Lock()
		g.taken = true
		if g.completion {
			// Slots are taken off done from now on, and reused: nothing
			// keeps them in submission order.
			g.kept, g.lastKept = nil, nil
		}
		for {
			var s *groupSlot[R]
			if g.completion {
				s = g.nextCompleted()
			} else {
				s = g.nextInOrder()
			}
			if s == nil {
				break
			}
			v, err := g.release(s)
			g.mu.Unlock() // the body may submit
			if !yield(v, err) {
				g.cancel(context.Canceled)
				g.mu.Lock()
				break
			}
			g.mu.Lock()
		}
		g.drain()
		g.finish()
	}
}

// nextInOrder takes the next slot in submission order once its submit has
// settled and it is answered, waiting for both; nil once no slot is kept
// and no submit is in progress. g.mu is held.
func (g *Group[R]) nextInOrder() *groupSlot[R] {
	for g.kept == nil {
		if g.reserving == 0 {
			return nil
		}
		g.waitSettled()
	}
	s := g.kept
	g.ready(s)
	if g.kept = s.after; g.kept == nil {
		g.lastKept = nil
	}
	s.after = nil
	return s
}

// nextCompleted takes the next answered slot in completion order,
// waiting for one; nil once no slot is kept and no submit is in progress.
// g.mu is held.
func (g *Group[R]) nextCompleted() *groupSlot[R] {
	for g.batch == nil {
		top := g.done.Swap(nil)
		switch {
		case top != nil:
			// Newest on top: reversed, the batch is in completion order.
			for top != nil {
				next := top.next
				top.next, g.batch = g.batch, top
				top = next
			}
		case g.pending > 0:
			// Some kept slot is not answered: its push will find done
			// empty (this Swap emptied it) and leave a token.
			g.mu.Unlock()
			<-g.wake
			g.mu.Lock()
		case g.reserving > 0:
			g.waitSettled()
		default:
			return nil
		}
	}
	s := g.batch
	g.batch, s.next = s.next, nil
	return s
}

// push puts the answered kept slot s on g.done (CompletionOrder). Results
// only ever takes the whole stack, so a push that succeeds is right
// whatever happened to its top meanwhile.
func (g *Group[R]) push(s *groupSlot[R]) {
	for {
		top := g.done.Load()
		s.next = top
		if g.done.CompareAndSwap(top, s) {
			if top == nil {
				select {
				case g.wake <- struct{}{}:
				default: // a token is already there
				}
			}
			return
		}
	}
}

// release takes the answer of the slot s that Results is about to yield,
// notes its failure for the group's error, and frees s for the next
// submit. g.mu is held.
func (g *Group[R]) release(s *groupSlot[R]) (R, error) {
	index := s.index
	v, err := s.take()
	if err != nil {
		g.yielded = g.note(g.yielded, index, err)
	}
	g.free, s.next = s, g.free
	g.pending--
	return v, err
}
