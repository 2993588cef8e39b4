package dispatcher

import (
	"fmt"
	"reflect"
	"runtime"
	"time"

	"github.com/gobalancer/balancer/strategies"
)

// Option configures a Dispatcher at construction.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	workers      int
	weights      []int
	workerBuffer int
	intake       int // -1: default
	completion   int // -1: not given (WithCompletionBuffer, channel engine only)
	engine       Engine
	strategy     strategies.Strategy
	strategyName string
	strategyOpts []strategies.Option
	panicHandler func(*PanicError)
	workerIndex  bool // WithWorkerIndex
	schedule     Schedule
	admission    bool          // WithDeadlineAdmission
	budget       time.Duration // WithQueueBudget
	errs         []error

	// set records which options were given, by name, so New can refuse a
	// contradiction naming both sides instead of letting the last one win.
	set map[string]int
}

// given records that option name was applied and refuses a second one.
func (c *config) given(name string) {
	if c.set == nil {
		c.set = map[string]int{}
	}
	c.set[name]++
	if c.set[name] == 2 {
		c.bad("%s given twice: the second would silently replace the first", name)
	}
}

// Size limits: every size option is refused above its maximum, so no
// arithmetic on sizes can overflow and no default allocates without bound.
const (
	// MaxWorkers is the most workers a dispatcher runs.
	MaxWorkers = 1 << 16
	// MaxBuffer bounds the intake and completion buffers (at most
	// MaxBuffer), the worker buffer (below MaxBuffer) and the requests all
	// worker queues together may hold (workers × (worker buffer + 1), or
	// workers × 256 when the default queues may deepen; at most
	// MaxBuffer). At the limit a dispatcher's queues take about 40 MB (the
	// rings engine keeps a ring and a return ring per worker).
	MaxBuffer = 1 << 20
)

// deepDepth is how deep the rings engine's default queues may grow for
// short tasks (WithWorkerBuffer).
const deepDepth = 256

func defaults() config {
	return config{
		workers:      runtime.GOMAXPROCS(0),
		workerBuffer: 63, // depth 64, deepening to deepDepth: see WithWorkerBuffer
		intake:       -1,
		completion:   -1,
		engine:       DefaultEngine,
		schedule:     DefaultSchedule,
		budget:       -1,
		strategyName: strategies.Default,
	}
}

func (c *config) bad(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf("%w: "+format, append([]any{ErrBadOption}, args...)...))
}

// WithWorkers sets the number of workers (default GOMAXPROCS).
func WithWorkers(n int) Option {
	return optionFunc(func(c *config) {
		c.given("WithWorkers")
		if n < 1 || n > MaxWorkers {
			c.bad("workers must be in [1, %d], got %d", MaxWorkers, n)
		}
		c.workers = n
	})
}

// WithWeights gives each worker a weight for weighted strategies; it also
// sets the number of workers to len(weights) (WithWorkers with another
// count is refused). Weight 0 drains a worker.
func WithWeights(weights ...int) Option {
	return optionFunc(func(c *config) {
		c.given("WithWeights")
		c.weights = append([]int(nil), weights...)
	})
}

// WithWorkerBuffer sets how many requests may wait in each worker's queue
// behind the one it runs (0 means one request per worker). Deep queues let
// a worker keep its core busy while the balancer waits for CPU.
//
// The buffer is a worker's most; what it holds is its queue budget's worth
// of work (WithQueueBudget). Without this option the rings engine's queues
// may deepen, up to 255 behind the running task, while tasks are short, so
// a batch of empty tasks is handed over in runs up to four times as long.
// A worker whose tasks turn long keeps its limit until it next publishes
// its busy time (after at most 64 tasks, or when it goes idle). Queues
// deepen only in a dispatcher that New gives at most MaxBuffer/256 (4096)
// workers, which then holds at most that many, AddWorker and Resize
// included; with more at New the most is 63, as with WithWorkerBuffer(63)
// or on the channel engine.
func WithWorkerBuffer(n int) Option {
	return optionFunc(func(c *config) {
		c.given("WithWorkerBuffer")
		if n < 0 || n >= MaxBuffer {
			c.bad("worker buffer must be in [0, %d), got %d", MaxBuffer, n)
		}
		c.workerBuffer = n
	})
}

// WithQueueBudget sets how much work, by its tasks' measured mean run
// time, a worker's queue may hold: late binding. Requests beyond it wait
// in the balancer, where the schedule still chooses among them and the
// strategy picks their worker when one has room. A worker's limit is
// budget / (mean task time), never less than 2 (the task it runs and the
// next, so it never waits for the balancer between two) nor more than its
// queue's depth (WithWorkerBuffer + 1, or 256 where queues deepen). Each
// worker starts at WithWorkerBuffer + 1 and moves to its limit once it
// publishes its busy time (after at most 64 tasks, or when it goes idle).
//
// The default, DefaultQueueBudget, keeps two 100 µs tasks at a worker, ten
// of 10 µs and 256 empty ones. 0 turns late binding off: every worker
// keeps WithWorkerBuffer + 1 requests whatever its tasks take. A negative
// budget, or one above a second, is refused.
func WithQueueBudget(d time.Duration) Option {
	return optionFunc(func(c *config) {
		c.given("WithQueueBudget")
		if d < 0 || d > time.Second {
			c.bad("queue budget must be in [0, 1s], got %v", d)
			return
		}
		c.budget = d
	})
}

// DefaultQueueBudget is the queue budget without WithQueueBudget.
const DefaultQueueBudget = 100 * time.Microsecond

// WithCompletionBuffer sets the capacity of the channel engine's
// completion channel, on which every worker sends one message per finished
// request before its answer. Requests nobody waits for (Go) are the
// exception: a worker with at least twice as many requests queued behind
// them carries up to 32 of their completions in one message with the
// count, and always reports what it holds before an answer or before it
// waits for more. The default, workers × (worker buffer + 1), has a slot for every
// request that can be pending, so a worker never waits for the balancer to
// take its report (workers added later share those slots); 0 is
// unbuffered, as in Pike's design, where a worker waits for the balancer
// to take each completion. Any value is deadlock-free. The rings engine
// has no completion channel: with it, New returns an error matching
// ErrWrongEngine.
func WithCompletionBuffer(n int) Option {
	return optionFunc(func(c *config) {
		c.given("WithCompletionBuffer")
		if n < 0 || n > MaxBuffer {
			c.bad("completion buffer must be in [0, %d], got %d", MaxBuffer, n)
		}
		c.completion = n
	})
}

// WithIntakeBuffer sets how many accepted requests may wait for the
// balancer to send them to a worker. 0 accepts a request only when nothing
// waits and a worker has room, like Pike's unbuffered request channel; the
// default (workers × (worker buffer + 1); with the default buffer on the
// rings engine workers × 256, the most its queues may deepen to) lets
// submitters go on without waiting for the balancer.
//
// Under a schedule other than FIFO, with a buffer, the schedule decides
// admission too: each tenant (Fair, ByDeadline) or priority class
// (ByPriority) has a part of the buffer by its weight, shared among those
// holding requests, and a request whose flow holds less than its part is
// admitted even when the buffer is full, so a flow that floods cannot
// make the others wait behind it. What that admits beyond the buffer is
// bounded by a second buffer: at most 2·n requests are accepted and not
// yet handed out.
func WithIntakeBuffer(n int) Option {
	return optionFunc(func(c *config) {
		c.given("WithIntakeBuffer")
		if n < 0 || n > MaxBuffer {
			c.bad("intake buffer must be in [0, %d], got %d", MaxBuffer, n)
		}
		c.intake = n
	})
}

// WithStrategy uses s to pick workers. The dispatcher becomes its only
// user: s must not be shared. Its members must be the workers 0..n-1: a
// strategy with a Len() int method whose Len differs from the worker count
// is refused, as is a nil one (also a typed nil) and WithStrategyName
// beside it. WithWeights beside it sets each member's weight with
// SetWeight, so s must then be a strategies.Dynamic.
func WithStrategy(s strategies.Strategy) Option {
	return optionFunc(func(c *config) {
		c.given("WithStrategy")
		if isNil(s) {
			c.bad("nil strategy (%T)", s)
			return
		}
		c.strategy = s
	})
}

// WithStrategyName builds the strategy registered under name over the
// workers' weights (see strategies.Names), with opts.
func WithStrategyName(name string, opts ...strategies.Option) Option {
	return optionFunc(func(c *config) {
		c.given("WithStrategyName")
		c.strategyName = name
		c.strategyOpts = opts
	})
}

// isNil reports whether s is nil or an interface holding a nil pointer (or
// other nil-able kind), which would crash at the first Pick.
func isNil(s strategies.Strategy) bool {
	if s == nil {
		return true
	}
	switch v := reflect.ValueOf(s); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// plan resolves the options into one consistent configuration, or the
// first contradiction, naming both options.
func (c *config) plan() error {
	if len(c.errs) > 0 {
		return c.errs[0]
	}
	if c.set["WithStrategy"] > 0 && c.set["WithStrategyName"] > 0 {
		return fmt.Errorf("%w: WithStrategy and WithStrategyName both given: one strategy only", ErrBadOption)
	}
	if c.set["WithWeights"] > 0 {
		if len(c.weights) == 0 {
			return fmt.Errorf("%w: WithWeights needs at least one weight: %w", ErrBadOption, strategies.ErrNoMembers)
		}
		if c.set["WithWorkers"] > 0 && c.workers != len(c.weights) {
			return fmt.Errorf("%w: WithWorkers(%d) contradicts WithWeights with %d weights", ErrBadOption, c.workers, len(c.weights))
		}
		c.workers = len(c.weights)
		if c.workers > MaxWorkers {
			return fmt.Errorf("%w: %d weights, more than MaxWorkers (%d)", ErrBadOption, c.workers, MaxWorkers)
		}
	}
	if c.workers < 1 {
		return fmt.Errorf("%w: workers must be at least 1, got %d", ErrBadOption, c.workers)
	}
	if c.completion >= 0 && c.engine != Channels {
		return fmt.Errorf("%w: %w: WithCompletionBuffer(%d) needs WithEngine(Channels): the %v engine has no completion channel",
			ErrBadOption, ErrWrongEngine, c.completion, c.engine)
	}
	depth := c.workerBuffer + 1
	if c.workers > MaxBuffer/depth {
		return fmt.Errorf("%w: WithWorkers(%d) × (WithWorkerBuffer(%d) + 1) exceeds MaxBuffer (%d)", ErrBadOption, c.workers, c.workerBuffer, MaxBuffer)
	}
	if c.strategy != nil {
		if c.weights != nil {
			if err := strategies.CheckWeights(c.weights); err != nil {
				return fmt.Errorf("%w: WithWeights: %w", ErrBadOption, err)
			}
		}
		if l, ok := c.strategy.(interface{ Len() int }); ok && l.Len() != c.workers {
			return fmt.Errorf("%w: WithStrategy has %d members but there are %d workers", ErrBadOption, l.Len(), c.workers)
		}
		if c.weights != nil {
			// The weights must reach the strategy too, or the dispatcher and
			// the strategy disagree on who may be picked.
			dyn, ok := c.strategy.(strategies.Dynamic)
			if !ok {
				return fmt.Errorf("%w: WithWeights beside WithStrategy needs a strategy that takes weights (strategies.Dynamic); build the strategy over those weights and drop WithWeights", ErrBadOption)
			}
			for i, w := range c.weights {
				if err := dyn.SetWeight(i, w); err != nil {
					return fmt.Errorf("%w: WithWeights: worker %d: %w", ErrBadOption, i, err)
				}
			}
		}
	}
	return nil
}
