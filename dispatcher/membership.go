package dispatcher

import "fmt"

// AddWorker starts a new worker with the given weight while requests flow
// and returns its index: the lowest index of a removed worker that has
// finished its queue, or a new one, so indices, memory and the cost of a
// membership change stay bounded by the live workers however long the
// dispatcher churns (with a strategy that is a strategies.Forgetter, as
// every built-in dynamic one is; otherwise indices are never reused). The
// strategy must support membership changes (strategies.Dynamic), else
// ErrNotDynamic.
func (d *Dispatcher) AddWorker(weight int) (int, error) {
	if !d.made() {
		return 0, ErrNotStarted
	}
	var idx int
	err := d.exec(func() error {
		if d.b.dyn == nil {
			return ErrNotDynamic
		}
		var err error
		idx, err = d.addLocked(weight)
		return err
	})
	return idx, err
}

// RemoveWorker stops sending to worker i; it finishes what it has queued
// and exits. Nothing is lost or run twice. Removing the last worker with a
// positive weight is refused.
//
// Errors of the runtime calls (AddWorker, RemoveWorker, SetWeight), one
// rule for all: ErrNotDynamic for a static strategy, ErrNoWorker for an
// index that is not a live worker, ErrClosed once Close has begun, and an
// argument the strategy refuses wraps both ErrBadOption and the strategy's
// own error (strategies.ErrNegativeWeight, ErrLastMember, ...).
func (d *Dispatcher) RemoveWorker(i int) error {
	return d.exec(func() error {
		b := &d.b
		if err := b.changeable(i); err != nil {
			return err
		}
		if err := b.dyn.Remove(i); err != nil {
			return fmt.Errorf("%w: %w", ErrBadOption, err)
		}
		d.removeLocked(i)
		return nil
	})
}

// removeLocked retires worker i on the balancer goroutine.
func (d *Dispatcher) removeLocked(i int) {
	b := &d.b
	if b.hasRoom(i) {
		b.room--
	}
	// Pike's figure is over live workers: one that drains its queue after
	// removal leaves the sums now, or the mean counts it over too few.
	b.pend.add(b.w[i].pending, -b.w[i].pending)
	b.w[i].removed = true
	b.live--
	b.ws.remove(i)
	if b.w[i].pending == 0 {
		b.forget(i)
	}
	if b.held != nil && b.heldW == i {
		// Its pick can no longer be honoured: pick again.
		r := b.held
		b.held = nil
		d.dispatch(r)
	}
}

// SetWeight changes worker i's weight while requests flow; 0 drains it
// (it is no longer picked by weighted strategies).
func (d *Dispatcher) SetWeight(i, weight int) error {
	return d.exec(func() error {
		b := &d.b
		if err := b.changeable(i); err != nil {
			return err
		}
		if err := b.dyn.SetWeight(i, weight); err != nil {
			return fmt.Errorf("%w: %w", ErrBadOption, err)
		}
		had := b.hasRoom(i)
		b.w[i].weight = weight
		if weight == 0 && b.held != nil && b.heldW == i {
			// Drained from now on: a request held for it would reach it
			// after this call returns. Pick again, as RemoveWorker does.
			r := b.held
			b.held = nil
			d.dispatch(r)
		}
		if now := b.hasRoom(i); had != now {
			if now {
				b.room++
			} else {
				b.room--
			}
		}
		return nil
	})
}

// changeable reports why live worker i's membership cannot change, if it
// cannot: a static strategy, or no such live worker.
func (b *balancer) changeable(i int) error {
	if b.dyn == nil {
		return ErrNotDynamic
	}
	if !b.isLive(i) {
		return fmt.Errorf("%w: %d", ErrNoWorker, i)
	}
	return nil
}

// addLocked starts a worker of the given weight on the balancer goroutine
// and returns its index (AddWorker and Resize): a removed worker's, once
// it has drained (see forget), or a new one. The limits count live
// workers.
func (d *Dispatcher) addLocked(weight int) (int, error) {
	b := &d.b
	if n := b.live + 1; n > MaxWorkers || n > MaxBuffer/b.depth {
		return 0, fmt.Errorf("%w: %d live workers would pass MaxWorkers (%d) or MaxBuffer (%d) queued requests", ErrBadOption, n, MaxWorkers, MaxBuffer)
	}
	i, err := b.dyn.Add(weight)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrBadOption, err)
	}
	j := b.ws.add()
	if j < len(b.w) {
		b.retired += b.w[j].completed
		b.w[j] = slot{weight: weight, limit: b.base}
	} else {
		b.w = append(b.w, slot{weight: weight, limit: b.base})
	}
	b.live++
	if weight > 0 {
		b.room++
	}
	if i != j {
		// A strategy whose indices do not follow the workers': undo, so
		// nothing is ever sent to a wrong index.
		_ = b.dyn.Remove(i)
		d.removeLocked(j)
		return 0, fmt.Errorf("%w: strategy added member %d for worker %d", ErrBadOption, i, j)
	}
	return i, nil
}
