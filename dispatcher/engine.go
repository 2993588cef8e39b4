package dispatcher

import (
	"context"
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
	// channel carrying runs of requests (bounded by WithIntakeBuffer; 0 is
	// Pike's unbuffered channel of single requests), one channel per
	// worker carrying runs (capacity WithWorkerBuffer) and one completion
	// channel shared by the workers (capacity WithCompletionBuffer)
	// carrying one message per completed request, or per run of completed
	// Go requests with its count. The balancer reads the request and
	// completion channels in one select.
	Channels Engine = iota + 1
	// Rings replaces those hops by a locked intake slice the balancer
	// swaps out whole, a single-producer ring per worker and per-worker
	// atomic completion counters; channels only wake a parked goroutine.
	Rings
)

// DefaultEngine is the engine New uses without WithEngine: Pike's design,
// which costs within a tenth of rings on batches of empty and of 10 µs
// tasks. Rings stays the cheaper one for many closed-loop requesters
// calling Do (docs/performance.md has both figures and their commands).
const DefaultEngine = Channels

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

// MarshalText returns the engine's name; an unknown engine is an error
// wrapping ErrBadOption.
func (e Engine) MarshalText() ([]byte, error) {
	if e != Channels && e != Rings {
		return nil, fmt.Errorf("%w: unknown engine %d", ErrBadOption, int(e))
	}
	return []byte(e.String()), nil
}

// UnmarshalText sets e to the engine named by text ("channels" or
// "rings", in any case), so flag.TextVar takes an Engine; another name is
// an error wrapping ErrBadOption, and e is unchanged.
func (e *Engine) UnmarshalText(text []byte) error {
	for _, x := range [...]Engine{Channels, Rings} {
		if strings.EqualFold(string(text), x.String()) {
			*e = x
			return nil
		}
	}
	return fmt.Errorf("%w: unknown engine %q (want channels or rings)", ErrBadOption, text)
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

// engine is everything one engine does, the one seam between the shared
// policy (balancer, in policy.go) and an engine's own state and goroutine
// loop. Dispatcher holds exactly one; New selects it (newEngine) and
// nothing else names an engine's type.
//
// The submitter side (enqueue, enqueueGo, fence, kick) is called from any
// goroutine; the rest (the links, loop, reap, intakeStats) belongs to the
// balancer goroutine.
type engine interface {
	links
	// enqueue hands r to the balancer, waiting for room if block. Once it
	// returns nil, r will be answered exactly once.
	enqueue(ctx context.Context, r *request, block bool) error
	// enqueueGo is enqueue for Go: the engine supplies the request (its
	// own recycled one), filled from m, so nothing is allocated unless the
	// request is accepted.
	enqueueGo(ctx context.Context, m meta, fn goTask) error
	// fence stops intake for Close: every later submit, and every blocked
	// one, returns ErrClosed, and the lifecycle moves to draining.
	fence()
	// kick wakes the balancer to look at the lifecycle or a control call.
	// Never blocks.
	kick()
	// intakeStats reports requests accepted and not yet taken by the
	// balancer, and submitters waiting for room. Balancer only (snapshot).
	intakeStats() (queued, blocked int)
	// turn does, without waiting, what the engine has ready: it takes the
	// completions and the requests that arrived into the balancer, hands
	// out what the schedule releases, and publishes the hand-offs. It
	// reports whether it did anything. Balancer only (serve).
	turn() bool
	// park waits until something may have changed: a request, a
	// completion the balancer waits for, a control call or a kick.
	park()
	// intakeEmpty reports whether nothing accepted waits in the intake;
	// asked once the intake is fenced.
	intakeEmpty() bool
	// reap counts every completion the workers have reported, so a
	// snapshot taken after a request's answer includes it. Balancer only.
	reap()
}

// newEngine builds the engine e for d: the one place an engine is chosen.
func newEngine(d *Dispatcher, e Engine, c *config, depth, base int) engine {
	if e == Channels {
		return newChannels(d, c.workers, depth, c.intake, c.completion)
	}
	return newRings(d, c.workers, depth, base, c.intake)
}
