package dispatcher

import (
	"fmt"

	"github.com/gobalancer/balancer/strategies"
)

// Resize grows or shrinks the dispatcher to n live workers in one call,
// while requests flow: the balancer makes every change before it takes
// another request. Growing adds workers of weight 1 (SetWeight changes
// them); shrinking removes the live workers with the highest indices, and
// each removed worker finishes its queue before it exits, so nothing is
// lost or run twice. Buffers keep the sizes New gave them.
//
// Errors follow the runtime calls' rule (see RemoveWorker): ErrNotDynamic
// for a strategy that cannot change membership, an error wrapping
// ErrBadOption for n outside [1, MaxWorkers] (or past MaxBuffer queued
// requests over all workers) or when the workers left would have no
// positive weight (with strategies.ErrLastMember), ErrClosed once Close has
// begun. Those refusals change nothing. A strategy that refuses a change
// midway (no built-in one does once these checks pass) leaves the changes
// made before it, which Stats shows.
func (d *Dispatcher) Resize(n int) error {
	if !d.made() {
		return ErrNotStarted
	}
	if n < 1 || n > MaxWorkers {
		return fmt.Errorf("%w: Resize(%d): live workers must be in [1, %d]", ErrBadOption, n, MaxWorkers)
	}
	return d.exec(func() error {
		b := &d.b
		if b.dyn == nil {
			return ErrNotDynamic
		}
		if n > MaxBuffer/b.depth {
			return fmt.Errorf("%w: Resize(%d) × queue depth %d exceeds MaxBuffer (%d)", ErrBadOption, n, b.depth, MaxBuffer)
		}
		for b.live < n {
			if _, err := d.addLocked(1); err != nil {
				return err
			}
		}
		if b.live > n {
			return d.shrinkLocked(n)
		}
		return nil
	})
}

// shrinkLocked removes the highest-index live workers until n are left.
// Every victim leaves the strategy before any leaves the pool: a request
// held for a victim is picked again (removeLocked), and must not be picked
// for the next victim.
func (d *Dispatcher) shrinkLocked(n int) error {
	b := &d.b
	var victims []int
	weighted := false // a survivor has a positive weight
	kept := 0
	for i := range b.w {
		if b.w[i].removed {
			continue
		}
		if kept < n {
			kept++
			weighted = weighted || b.w[i].weight > 0
			continue
		}
		victims = append(victims, i)
	}
	if !weighted {
		return fmt.Errorf("%w: Resize(%d): %w: the %d workers left would all have weight 0", ErrBadOption, n, strategies.ErrLastMember, n)
	}
	for k := len(victims) - 1; k >= 0; k-- {
		if err := b.dyn.Remove(victims[k]); err != nil {
			// Undo nothing the pool has seen: the members the strategy
			// dropped already still go, the rest stay.
			victims = victims[k+1:]
			for _, i := range victims {
				d.removeLocked(i)
			}
			return fmt.Errorf("%w: %w", ErrBadOption, err)
		}
	}
	for k := len(victims) - 1; k >= 0; k-- {
		d.removeLocked(victims[k])
	}
	return nil
}
