package strategies

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// Slow start errors; each matches ErrBadOption, which is what callers
// test (the messages say which setting was refused).
var (
	errSlowStartWindow     = fmt.Errorf("%w: slow start window", ErrBadOption)
	errSlowStartFloor      = fmt.Errorf("%w: slow start floor", ErrBadOption)
	errSlowStartAggression = fmt.Errorf("%w: slow start aggression", ErrBadOption)
	errSlowStartNotDynamic = fmt.Errorf("%w: slow start needs a Dynamic strategy", ErrBadOption)
)

// slowStartScale multiplies every weight given to the wrapped strategy.
// Weights are integers, so a weight-1 member at a floor of 0.1 needs room
// below 1; scaling leaves every share as it was (swrr's sequence over k·w is
// its sequence over w) and gives the ramp a resolution of 1/64 of the
// smallest weight. The price: weights above MaxWeight/64 are ErrTooLarge
// under slow start (WithSlowStart says so).
const slowStartScale = 64

// slowStartSteps bounds the weight changes of one ramp after the one that
// starts it: each is an O(n) SetWeight of the wrapped strategy, so a ramp
// costs a fixed number of them however long its window.
const slowStartSteps = 16

// maxSpan bounds a window (in picks or nanoseconds, about 18 years) so that
// a position times slowStartSteps stays within 64 bits.
const maxSpan = 1 << 59

// Window is how long a slow start ramp lasts: a count of picks (PickWindow)
// or a duration on a clock the caller supplies (TimeWindow). The zero Window
// is invalid.
type Window struct {
	picks uint64
	d     time.Duration
	now   func() time.Time
}

// PickWindow ramps over the next n picks of the whole strategy, counted by
// the wrapper. It needs no clock, so it keeps the strategy deterministic;
// the ramp is as fast as the traffic.
func PickWindow(n int) Window {
	if n <= 0 {
		return Window{}
	}
	return Window{picks: uint64(n)}
}

// TimeWindow ramps over d measured by now, as Envoy's slow_start_config
// does. The package never reads the wall clock by itself: a server passes
// time.Now, a test a fake clock. now is called at construction, when a ramp
// starts, and on every Pick while a ramp runs. A Pick after a pause takes
// the step the clock has reached at once, the last one included.
func TimeWindow(d time.Duration, now func() time.Time) Window {
	return Window{d: d, now: now}
}

func (w Window) check() error {
	switch {
	case w.picks > maxSpan:
		return fmt.Errorf("%w: %d picks (max %d)", errSlowStartWindow, w.picks, uint64(maxSpan))
	case w.picks > 0:
		return nil
	case w.now == nil && w.d == 0:
		return fmt.Errorf("%w: zero Window or PickWindow of no picks", errSlowStartWindow)
	case w.d <= 0:
		return fmt.Errorf("%w: duration %v is not positive", errSlowStartWindow, w.d)
	case w.now == nil:
		return fmt.Errorf("%w: TimeWindow(%v) without a clock", errSlowStartWindow, w.d)
	case w.d > maxSpan:
		return fmt.Errorf("%w: duration %v above %v", errSlowStartWindow, w.d, time.Duration(maxSpan))
	}
	return nil
}

// slowStartConfig is WithSlowStart's configuration.
type slowStartConfig struct {
	window            Window
	floor, aggression float64
}

// slowStart wraps a Dynamic strategy so that a member that joins (Add) or
// comes back (SetWeight from 0) takes an effective weight of floor·w, raised
// to w over the window: w·max(floor, (t/window)^(1/aggression)), Envoy's
// curve (aggression 1 is linear, above 1 climbs fast then flattens). The
// ramp is sampled in slowStartSteps steps, each a SetWeight of the wrapped
// strategy made lazily by the Pick that finds it due, so the wrapped
// strategy's guarantee after a change holds at every step (swrr: lag below 2
// against the effective weights) and the last step sets w exactly: the
// share only grows, and the ramp ends without a burst.
//
// Members present at construction take their weight at once, and a change
// between two positive weights applies at once unless the member is
// ramping, when the ramp goes on towards the new weight. Weight reports
// the configured weight, never the effective one.
//
// Pick costs the wrapped strategy's Pick plus one comparison while no ramp
// runs, a clock read (TimeWindow) while one does, and allocates nothing.
// Not safe for concurrent use.
type slowStart struct {
	inner       Dynamic
	batch       BatchDone // inner, when it takes batches
	window      Window
	floor, aggr float64
	span        uint64 // window length in picks or nanoseconds

	weight []int   // configured weights, 0 for removed members
	state  []uint8 // memberPresent, memberRemoved or memberForgotten, as the wrapped strategy's
	ramps  []ramp
	due    uint64 // the earliest position at which a ramp steps
	picks  uint64 // picks so far: the position of a PickWindow
	epoch  time.Time
}

// ramp is one member's slow start, at step k of slowStartSteps since start.
type ramp struct {
	i        int
	k, start uint64
}

var _ interface {
	Dynamic
	BatchDone
	Forgetter
	Declarer
} = (*slowStart)(nil)

// NewSlowStart is WithSlowStart over a strategy New does not know: it
// builds the strategy with build (a custom constructor, which New has no
// name for) over weights scaled by 64, with opts, and wraps it as
// WithSlowStart describes. The built strategy must be Dynamic; that, and a
// bad window, floor or aggression, is an error matching ErrBadOption. A
// strategy of this package is built the same way by
// New(name, weights, WithSlowStart(window, floor, aggression), opts...).
//
// It is exported for custom strategies only: slow start is a wrapper, and
// a strategy written elsewhere (Declarer says how one declares its Traits)
// has no other way into it. The result is also a BatchDone, a Forgetter
// (forgetting only when the built strategy is one) and a Declarer.
func NewSlowStart(build func(weights []int, opts ...Option) (Strategy, error), weights []int, window Window, floor, aggression float64, opts ...Option) (Dynamic, error) {
	s, err := newSlowStart(build, weights, window, floor, aggression, opts...)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return s, nil
}

// newSlowStart is NewSlowStart, returning the wrapper itself for New and
// the tests.
func newSlowStart(build constructor, weights []int, window Window, floor, aggression float64, opts ...Option) (*slowStart, error) {
	if err := window.check(); err != nil {
		return nil, err
	}
	if !(floor > 0 && floor <= 1) {
		return nil, fmt.Errorf("%w: %v is outside (0, 1]", errSlowStartFloor, floor)
	}
	if !(aggression > 0) || math.IsInf(aggression, 0) {
		return nil, fmt.Errorf("%w: %v is not a positive number", errSlowStartAggression, aggression)
	}
	if err := checkWeights(weights); err != nil {
		return nil, err
	}
	scaled := make([]int, len(weights))
	for i, w := range weights {
		if err := checkScaled(w); err != nil {
			return nil, fmt.Errorf("member %d: %w", i, err)
		}
		scaled[i] = w * slowStartScale
	}
	inner, err := build(scaled, withoutSlowStart(opts)...)
	if err != nil {
		return nil, err
	}
	dyn, ok := inner.(Dynamic)
	if !ok {
		return nil, fmt.Errorf("%w: %T", errSlowStartNotDynamic, inner)
	}
	s := &slowStart{inner: dyn, window: window, floor: floor, aggr: aggression,
		weight: append([]int(nil), weights...), state: make([]uint8, len(weights))}
	s.batch, _ = inner.(BatchDone)
	s.span = window.picks
	if window.now != nil {
		s.span = uint64(window.d)
		s.epoch = window.now()
	}
	return s, nil
}

// withoutSlowStart cancels WithSlowStart in opts, so that a build which
// itself calls New does not wrap twice.
func withoutSlowStart(opts []Option) []Option {
	return append(opts[:len(opts):len(opts)], optionFunc(func(c *config) {
		c.slowStart = nil
		c.set = slices.DeleteFunc(c.set, func(name string) bool { return name == "WithSlowStart" })
	}))
}

// checkScaled refuses a weight whose scaled value the strategies refuse.
func checkScaled(w int) error {
	if err := checkWeight(w); err != nil {
		return err
	}
	if w > MaxWeight/slowStartScale {
		return fmt.Errorf("%w: weight %d (max %d under slow start)", ErrTooLarge, w, MaxWeight/slowStartScale)
	}
	return nil
}

// Pick steps the ramps that are due, then picks from the wrapped strategy.
func (s *slowStart) Pick(key uint64) int {
	if len(s.ramps) > 0 {
		if p := s.pos(); p >= s.due {
			s.step(p)
		}
	}
	s.picks++
	return s.inner.Pick(key)
}

// Done passes the completion on.
func (s *slowStart) Done(i int, elapsed time.Duration) { s.inner.Done(i, elapsed) }

// DoneN passes the batch on, or replays it when the wrapped strategy takes
// completions one by one.
func (s *slowStart) DoneN(i, n int, elapsed time.Duration) {
	if s.batch != nil {
		s.batch.DoneN(i, n, elapsed)
		return
	}
	for range n {
		s.inner.Done(i, elapsed)
	}
}

// Add adds a member; one of positive weight starts its ramp at the floor.
func (s *slowStart) Add(weight int) (int, error) {
	if err := checkScaled(weight); err != nil {
		return 0, err
	}
	i, err := s.inner.Add(s.effective(weight, 0))
	if err != nil {
		return 0, err
	}
	s.weight = put(s.weight, i, weight) // i is new, or one forgotten
	s.state = put(s.state, i, memberPresent)
	if weight > 0 {
		s.begin(i)
	}
	return i, nil
}

// Remove removes member i, and its ramp if it had one.
func (s *slowStart) Remove(i int) error {
	if err := s.inner.Remove(i); err != nil {
		return err
	}
	s.end(i)
	if i >= 0 && i < len(s.weight) {
		s.weight[i], s.state[i] = 0, memberRemoved
	}
	return nil
}

// SetWeight changes i's configured weight. From 0 to a positive weight the
// member ramps from the floor; during a ramp the ramp goes on towards the
// new weight; 0 drains it and ends its ramp.
func (s *slowStart) SetWeight(i, weight int) error {
	if err := checkScaled(weight); err != nil {
		return err
	}
	if !s.has(i) {
		return fmt.Errorf("%w: %d", ErrNoMember, i)
	}
	k, ramping := s.rampStep(i)
	switch {
	case weight == 0:
		ramping = false
	case s.weight[i] == 0:
		k, ramping = 0, true
	}
	eff := weight * slowStartScale
	if ramping {
		eff = s.effective(weight, k)
	}
	if err := s.inner.SetWeight(i, eff); err != nil {
		return err
	}
	if weight == 0 {
		s.end(i)
	} else if s.weight[i] == 0 {
		s.begin(i)
	}
	s.weight[i] = weight
	return nil
}

// Weight returns member i's configured weight, or 0 when it is not a member.
func (s *slowStart) Weight(i int) int {
	if !s.has(i) {
		return 0
	}
	return s.weight[i]
}

func (s *slowStart) has(i int) bool {
	return i >= 0 && i < len(s.weight) && s.state[i] == memberPresent
}

// Forget frees removed member i's index for a later Add (see Forgetter),
// in the wrapped strategy and here. The wrapped strategy must be a
// Forgetter (every Dynamic strategy of this package is): over another one
// Forget changes nothing and returns an error matching
// errors.ErrUnsupported, and indices are never reused.
func (s *slowStart) Forget(i int) error {
	f, ok := s.inner.(Forgetter)
	switch {
	case i < 0 || i >= len(s.weight):
		return fmt.Errorf("%w: %d is no member", ErrNotRemoved, i)
	case s.state[i] == memberPresent:
		return fmt.Errorf("%w: %d is present", ErrNotRemoved, i)
	case s.state[i] == memberForgotten:
		return fmt.Errorf("%w: %d is already forgotten", ErrNotRemoved, i)
	case !ok:
		return fmt.Errorf("%w: slow start over %T, which cannot forget", errors.ErrUnsupported, s.inner)
	}
	if err := f.Forget(i); err != nil {
		return err
	}
	s.state[i] = memberForgotten
	n := len(s.weight) // the wrapped strategy dropped the forgotten indices at the end: so does the wrapper
	for n > 0 && s.state[n-1] == memberForgotten {
		n--
	}
	s.weight, s.state = s.weight[:n], s.state[:n]
	return nil
}

// Len returns one more than the highest index in use: present, or removed
// and not yet forgotten.
func (s *slowStart) Len() int { return len(s.weight) }

// Ramping reports whether member i is in its slow start.
func (s *slowStart) Ramping(i int) bool { _, ok := s.rampStep(i); return ok }

// Unwrap returns the wrapped strategy, whose weights are the effective ones
// times slowStartScale. Changing its membership directly desynchronizes the
// wrapper.
func (s *slowStart) Unwrap() Dynamic { return s.inner }

// pos is the ramps' clock: picks, or nanoseconds since construction.
func (s *slowStart) pos() uint64 {
	if s.window.now == nil {
		return s.picks
	}
	return uint64(max(0, s.window.now().Sub(s.epoch)))
}

// effective is the wrapped strategy's weight for w at step k of a ramp;
// the last step gives w exactly, and a positive weight never drops to 0,
// which would drain the member instead of slowing it.
func (s *slowStart) effective(w int, k uint64) int {
	if w == 0 || k >= slowStartSteps {
		return w * slowStartScale
	}
	f := max(s.floor, math.Pow(float64(k)/slowStartSteps, 1/s.aggr))
	return max(1, min(w*slowStartScale, int(math.Round(f*float64(w*slowStartScale)))))
}

func (s *slowStart) rampStep(i int) (uint64, bool) {
	for _, r := range s.ramps {
		if r.i == i {
			return r.k, true
		}
	}
	return 0, false
}

// begin starts i's ramp now; the caller has set its floor weight.
func (s *slowStart) begin(i int) {
	s.end(i)
	s.ramps = append(s.ramps, ramp{i: i, start: s.pos()})
	s.resetDue()
}

// end drops i's ramp, if any, leaving its weight as it is.
func (s *slowStart) end(i int) {
	for k := range s.ramps {
		if s.ramps[k].i == i {
			s.drop(k)
			s.resetDue()
			return
		}
	}
}

func (s *slowStart) drop(k int) {
	s.ramps[k] = s.ramps[len(s.ramps)-1]
	s.ramps = s.ramps[:len(s.ramps)-1]
}

// dueOf is the position at which r takes its next step.
func (s *slowStart) dueOf(r *ramp) uint64 {
	return r.start + ((r.k+1)*s.span+slowStartSteps-1)/slowStartSteps
}

func (s *slowStart) resetDue() {
	s.due = math.MaxUint64
	for k := range s.ramps {
		s.due = min(s.due, s.dueOf(&s.ramps[k]))
	}
}

// step moves every ramp to its step at position p. A step's SetWeight
// raises a present member between positive weights within range, which no
// strategy of this package refuses; if a custom one does, that ramp stops
// where it is rather than retry on every pick.
func (s *slowStart) step(p uint64) {
	for k := 0; k < len(s.ramps); {
		r := &s.ramps[k]
		at := uint64(slowStartSteps)
		if p < r.start {
			at = 0 // a clock that went back: wait, rather than finish the ramp
		} else if d := p - r.start; d < s.span {
			at = d * slowStartSteps / s.span
		}
		if at > r.k {
			old := s.effective(s.weight[r.i], r.k)
			r.k = at
			eff := s.effective(s.weight[r.i], at)
			if eff != old && s.inner.SetWeight(r.i, eff) != nil {
				at = slowStartSteps
			}
		}
		if at >= slowStartSteps {
			s.drop(k)
			continue
		}
		k++
	}
	s.resetDue()
}

// check verifies the wrapped strategy's invariants; tests call it.
func (s *slowStart) check() error {
	if c, ok := s.inner.(interface{ check() error }); ok {
		return c.check()
	}
	return nil
}

// Traits are the wrapped strategy's, less Concurrent: a Pick counts the
// picks and steps the ramps.
func (s *slowStart) Traits() Traits {
	t := TraitsOf(s.inner)
	t.Concurrent = false
	return t
}
