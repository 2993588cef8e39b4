package dispatcher

import (
	"fmt"
	"strings"
)

// Engine selects how requests travel between submitters, the balancer and
// the workers. Both engines run the same balancer policy (strategy, held
// request, room, membership, Close) and give the same guarantees; they
// differ only in the three links.
type Engine int

const (
	// Channels is Pike's design with real channels: one shared request
	// channel (capacity WithIntakeBuffer), one buffered channel per worker
	// (capacity WithWorkerBuffer) and one completion channel shared by the
	// workers (capacity WithCompletionBuffer) carrying one message per
	// completed request. The balancer reads the request and completion
	// channels in one select.
	Channels Engine = iota + 1
	// Rings replaces those hops by a locked intake slice the balancer
	// swaps out whole, a single-producer ring per worker and per-worker
	// atomic completion counters; channels only wake a parked goroutine.
	Rings
)

// DefaultEngine is the engine New uses without WithEngine.
const DefaultEngine = Rings

// Engines lists every engine, in the order the demo shows them.
var Engines = []Engine{Channels, Rings}

// String returns the engine's name: "channels" or "rings".
func (e Engine) String() string {
	switch e {
	case Channels:
		return "channels"
	case Rings:
		return "rings"
	}
	return fmt.Sprintf("Engine(%d)", int(e))
}

// ParseEngine returns the engine named s ("channels" or "rings"), or an
// error wrapping ErrBadOption.
func ParseEngine(s string) (Engine, error) {
	for _, e := range Engines {
		if strings.EqualFold(s, e.String()) {
			return e, nil
		}
	}
	return 0, fmt.Errorf("%w: unknown engine %q (want channels or rings)", ErrBadOption, s)
}

// WithEngine selects the engine (default DefaultEngine).
func WithEngine(e Engine) Option {
	return optionFunc(func(c *config) {
		c.given("WithEngine")
		if e != Channels && e != Rings {
			c.bad("unknown engine %d (want Channels or Rings)", int(e))
			return
		}
		c.engine = e
	})
}
