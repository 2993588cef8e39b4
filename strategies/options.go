package strategies

import (
	"fmt"
	"slices"
)

// Option configures a strategy at construction. A constructor refuses an
// option it has no use for with an error matching ErrBadOption (WithSeed
// is accepted by every one: a strategy with no randomness has nothing to
// seed, which is not a setting lost). WithSlowStart is taken only by New
// and NewSlowStart; New lists which strategy takes which of the others.
type Option interface{ apply(*config) }

type config struct {
	seed         uint64
	randomStart  bool
	virtualNodes int
	loadFactor   float64
	decay        float64
	slowStart    *slowStartConfig
	set          []string // the options given, by name, for uses
}

func defaults() config {
	return config{seed: 1, virtualNodes: 160, loadFactor: 1.25, decay: 0.2}
}

func newConfig(opts []Option) config {
	c := defaults()
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithSeed seeds the strategy's random source, making its picks repeatable.
func WithSeed(seed uint64) Option { return optionFunc(func(c *config) { c.seed = seed }) }

// WithRandomStart makes round-robin begin at a seeded random member, as brpc
// does, so that many clients do not all start on member 0.
func WithRandomStart(on bool) Option {
	return optionFunc(func(c *config) { c.randomStart = on; c.set = append(c.set, "WithRandomStart") })
}

// WithVirtualNodes sets the hashing strategies' ring points per member of
// average weight (default 160).
func WithVirtualNodes(n int) Option {
	return optionFunc(func(c *config) { c.virtualNodes = n; c.set = append(c.set, "WithVirtualNodes") })
}

// WithLoadFactor sets bounded-hash's c: no member takes more than
// ceil(c * mean) pending requests (default 1.25, must be > 1).
func WithLoadFactor(f float64) Option {
	return optionFunc(func(c *config) { c.loadFactor = f; c.set = append(c.set, "WithLoadFactor") })
}

// WithDecay sets the latency strategy's EWMA weight of a new sample, in (0, 1]
// (default 0.2).
func WithDecay(a float64) Option {
	return optionFunc(func(c *config) { c.decay = a; c.set = append(c.set, "WithDecay") })
}

// WithSlowStart makes New wrap the strategy it builds so that a member
// that joins (Add) or comes back (SetWeight from 0) takes an effective
// weight of floor·w, raised to its weight w over window along Envoy's
// curve w·max(floor, (t/window)^(1/aggression)): floor in (0, 1],
// aggression > 0, 1 linear, above 1 climbing fast then flattening. A bad
// value is an error of New matching ErrBadOption.
//
// The ramp takes 16 steps, each a SetWeight of the wrapped strategy made by
// the Pick that finds it due, so the wrapped strategy's guarantee after a
// change holds at every step and the last step sets w exactly. Members
// present at construction take their weight at once; a change between two
// positive weights applies at once unless the member is ramping, when the
// ramp goes on towards the new weight. Weights are scaled by 64 inside, so
// weights above MaxWeight/64 are ErrTooLarge under slow start. The result's
// Traits are the wrapped strategy's less Concurrent (Pick steps the ramps),
// it is a BatchDone, and a Weight(i int) int method reports the configured
// weight, never the effective one.
func WithSlowStart(window Window, floor, aggression float64) Option {
	return optionFunc(func(c *config) {
		c.slowStart = &slowStartConfig{window, floor, aggression}
		c.set = append(c.set, "WithSlowStart")
	})
}

// uses returns the options' config, or an error naming the first option
// strategy has no use for: an option is never accepted and ignored.
func uses(strategy string, opts []Option, used ...string) (config, error) {
	c := newConfig(opts)
	for _, name := range c.set {
		if !slices.Contains(used, name) {
			return c, fmt.Errorf("%w: %s has no use for %s", ErrBadOption, strategy, name)
		}
	}
	return c, nil
}
