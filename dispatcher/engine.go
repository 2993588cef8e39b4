package dispatcher

import (
	"context"
	"fmt"
	"strings"

	"github.com/gobalancer/balancer/worker"
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

// engine is a transport: how requests travel from submitters to the
// balancer, from the balancer to a worker, and how completions come back
// and a parked balancer is woken. The Dispatcher owns the one balancer
// loop (serve), the policy and the worker set; an engine never reads the
// policy's state, and learns what it must through the port it is given
// (port.go). New selects one (newEngine) and nothing else names an
// engine's type: a third engine is its files and a line there.
//
// The submitter side (enqueue, enqueueGo, fence, kick) is called from any
// goroutine; the rest belongs to the balancer goroutine.
type engine interface {
	// enqueue hands r to the balancer, waiting for room if block. Once it
	// returns nil, r will be answered exactly once.
	enqueue(ctx context.Context, r *request, block bool) error
	// enqueueGo is enqueue for Go: the engine supplies the request (a
	// recycled one), filled from m, so nothing is allocated unless the
	// request is accepted.
	enqueueGo(ctx context.Context, m meta, fn goTask) error
	// fence stops intake for Close: every later submit, and every blocked
	// one, returns ErrClosed, and the lifecycle moves to draining.
	fence()
	// kick wakes the balancer to look at the lifecycle or a control call.
	// Never blocks.
	kick()

	// worker makes worker i from cfg, wired to the engine's completions.
	worker(i int, cfg worker.Config[*request]) member
	// poll does, without waiting, what has arrived: it reports the
	// completions and takes the requests into the schedule (through the
	// port), settles the intake's count and its line of submitters, and
	// reports whether it took anything.
	poll() bool
	// park waits until something may have changed: a request the
	// balancer takes, a completion it waits for, a control call or a kick.
	park()
	// intake reports the requests accepted and not yet taken into the
	// schedule, and the submitters waiting for room. Balancer only.
	intake() (queued, blocked int)
	// takeIntake returns every request accepted and not yet taken, for the
	// abandon (the intake is fenced by then).
	takeIntake() []*request
	// setLimit tells the engine worker i's new limit.
	setLimit(i, limit int)
}

// newEngine builds the engine for d: the one place an engine is chosen. It
// also returns the intake whose lanes the schedule keeps (nil for Pike's
// unbuffered channel, where nothing waits for room).
func newEngine(d *Dispatcher, c *config, depth, base int) (engine, *intake) {
	switch {
	case c.engine == Rings:
		e := newRings(d, c.workers, depth, base, c.intake)
		return e, &e.in
	case c.intake == 0:
		return newPike(d, c.completion), nil
	}
	e := newChannels(d, c.intake, c.completion)
	return e, &e.in
}
