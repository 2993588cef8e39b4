package strategies

// Option configures a strategy at construction. Options a strategy does not
// use are ignored by it.
type Option interface{ apply(*config) }

type config struct {
	seed         uint64
	randomStart  bool
	virtualNodes int
	loadFactor   float64
	decay        float64
	slowStart    *slowStart
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
func WithRandomStart(on bool) Option { return optionFunc(func(c *config) { c.randomStart = on }) }

// WithVirtualNodes sets the hashing strategies' ring points per member of
// average weight (default 160).
func WithVirtualNodes(n int) Option { return optionFunc(func(c *config) { c.virtualNodes = n }) }

// WithLoadFactor sets bounded-hash's c: no member takes more than
// ceil(c * mean) pending requests (default 1.25, must be > 1).
func WithLoadFactor(f float64) Option { return optionFunc(func(c *config) { c.loadFactor = f }) }

// WithDecay sets the latency strategy's EWMA weight of a new sample, in (0, 1]
// (default 0.2).
func WithDecay(a float64) Option { return optionFunc(func(c *config) { c.decay = a }) }

// WithSlowStart makes New wrap the strategy it builds in a SlowStart, so
// that members that join or come back from weight 0 ramp from floor·w to w
// over window (see NewSlowStart; a bad value is an error of New matching
// ErrBadOption). Constructors called directly (NewSWRR, ...) ignore it.
func WithSlowStart(window Window, floor, aggression float64) Option {
	return optionFunc(func(c *config) { c.slowStart = &slowStart{window, floor, aggression} })
}
