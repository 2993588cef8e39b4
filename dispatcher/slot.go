package dispatcher

import "sync/atomic"

// resultSlot is one task's place in an ordered result, the one piece a
// Group's Wait, its Results in either order, and Map share: the request,
// the typed holder of its value, and its state. The answer names its
// slot: the worker that answers marks this slot answered, and wakes the
// one reader only if the reader sleeps on this very slot, so an answer
// costs one atomic operation and a reader one receive per answer it had
// to wait for. A slot is reused once its reader has taken its answer.
type resultSlot[R any] struct {
	r request
	typed[R]
	// state holds slotAnswered and slotWaited, and a group's slotKept.
	state atomic.Uint32
}

const (
	slotAnswered uint32 = 1 << iota // the value and error are set
	slotWaited                      // the reader sleeps until slotAnswered
	slotKept                        // a group's: its submit has settled with a place
)

// init makes fut (s, in the type that holds it) the answerer of s's
// request, and the reader's wake channel (its group's or stream's,
// capacity 1) the request's done channel, which an answered Future never
// uses: set when the slot is made and never changed, so a worker may send
// on it after the slot has been reused.
func (s *resultSlot[R]) init(wake chan struct{}, fut answerer) {
	s.r.done = wake
	s.r.fut = fut
}

// mark sets bits (slotAnswered among them) and wakes the reader if it
// sleeps on s; it returns the bits set before. The caller must not touch
// s afterwards but through the returned value: the reader may reuse it.
func (s *resultSlot[R]) mark(bits uint32) uint32 {
	old := s.state.Or(bits)
	if old&slotWaited != 0 {
		select {
		case s.r.done <- struct{}{}:
		default: // a token is already there: the reader looks again
		}
	}
	return old
}

// await waits until s is answered, or ended is closed first (false; nil:
// never). A token may be stale (left by a slot the reader gave up on, or
// by another kind of wake-up): the state is looked at again after each.
func (s *resultSlot[R]) await(ended <-chan struct{}) bool {
	for {
		st := s.state.Load()
		if st&slotAnswered != 0 {
			return true
		}
		if st&slotWaited == 0 && !s.state.CompareAndSwap(st, st|slotWaited) {
			continue
		}
		select {
		case <-s.r.done:
		case <-ended:
			return s.state.Load()&slotAnswered != 0
		}
	}
}

// take returns s's answer and clears s for reuse. s is answered.
func (s *resultSlot[R]) take() (R, error) {
	v, err := s.res, s.r.err
	s.clear()
	s.r.err, s.r.ctx, s.r.job = nil, nil, nil
	s.state.Store(0)
	return v, err
}
