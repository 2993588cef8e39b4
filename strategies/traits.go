package strategies

import "math"

// Traits is what a strategy promises beyond the Strategy interface, for a
// caller that shares it between goroutines or feeds it completions (an
// RPC client's picker, say). The zero Traits promises nothing, and acting
// on it is always correct: take a lock around every Pick and Done, time
// each request, report every completion. It is what TraitsOf gives a
// strategy that declares none.
type Traits struct {
	// Concurrent: Pick and Done (and DoneN) may be called from any number
	// of goroutines at once without a lock. Membership changes (Dynamic,
	// Forgetter) still need exclusive access: no Pick or Done may run
	// during one.
	Concurrent bool
	// IgnoresElapsed: Done never reads its elapsed argument, so a caller
	// need not time requests; it may pass 0.
	IgnoresElapsed bool
	// IgnoresDone: the strategy's picks do not depend on completions
	// (round-robin, hashing, random draws), so Done keeps no state and a
	// caller may leave it out. It implies IgnoresElapsed.
	IgnoresDone bool
}

// Declarer is implemented by strategies that declare their Traits. Every
// strategy of this package does; a strategy written elsewhere that does
// not is treated as promising nothing.
type Declarer interface {
	Traits() Traits
}

// TraitsOf returns the Traits s declares, or the zero Traits (nothing
// promised) when it declares none. IgnoresDone implies IgnoresElapsed, and
// the result says so.
func TraitsOf(s Strategy) Traits {
	d, ok := s.(Declarer)
	if !ok {
		return Traits{}
	}
	t := d.Traits()
	t.IgnoresElapsed = t.IgnoresElapsed || t.IgnoresDone
	return t
}

// Cyclic is implemented by strategies whose picks are a fixed cycle,
// which a caller may record once and replay from any number of goroutines
// with an atomic counter, without a lock. Such a strategy ignores the
// routing key and completions (IgnoresDone), and from the state its
// constructor leaves, until its first membership change, its picks come
// in cycles of Cycle() picks, every cycle giving each member the same
// number of picks: its share at the current weights (its weight over the
// weights' greatest common divisor; for round-robin, one). The order
// within a cycle is the same in every cycle, except that iwrr's first
// cycle may order its members differently from the later ones.
type Cyclic interface {
	// Cycle returns the length of a cycle at the current weights.
	Cycle() int
}

// Sampler is implemented by strategies whose Pick is one random draw and
// nothing else: the routing key and completions are ignored (IgnoresDone),
// and only a membership change alters what a draw maps to. A caller may
// thus draw from any number of goroutines at once without a lock, each
// draw taking its own state from one shared AtomicRand.
type Sampler interface {
	// NewRand returns a generator at the state of the strategy's own:
	// PickFrom calls drawing from it, one at a time, give the picks that
	// Pick calls would give from here.
	NewRand() *AtomicRand
	// PickFrom picks as Pick does but draws from r and leaves the strategy
	// as it was, so any number of goroutines may call it at once, between
	// membership changes.
	PickFrom(r *AtomicRand) int
}

// weightCycle returns W/g over the members of positive weight, g their
// weights' greatest common divisor (at most math.MaxInt).
func weightCycle(m *members) int {
	g := 0
	for i, w := range m.weight {
		if m.eligible(i) {
			g = gcd(g, w)
		}
	}
	return int(min(m.total/int64(g), math.MaxInt))
}
