package dispatcher

import (
	"fmt"
	"runtime"

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
	errs         []error
}

func defaults() config {
	return config{
		workers:      runtime.GOMAXPROCS(0),
		workerBuffer: 63, // depth 64: see WithWorkerBuffer
		intake:       -1,
		completion:   -1,
		engine:       DefaultEngine,
		strategyName: strategies.Default,
	}
}

func (c *config) bad(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf("%w: "+format, append([]any{ErrBadOption}, args...)...))
}

// WithWorkers sets the number of workers (default GOMAXPROCS).
func WithWorkers(n int) Option {
	return optionFunc(func(c *config) {
		if n < 1 {
			c.bad("workers must be at least 1, got %d", n)
		}
		c.workers = n
	})
}

// WithWeights gives each worker a weight for weighted strategies; it also
// sets the number of workers to len(weights). Weight 0 drains a worker.
func WithWeights(weights ...int) Option {
	return optionFunc(func(c *config) {
		c.weights = append([]int(nil), weights...)
		c.workers = len(weights)
	})
}

// WithWorkerBuffer sets how many requests may wait in each worker's queue
// behind the one it runs (default 63; 0 means one request per worker).
// Deep queues let a worker keep its core busy while the balancer waits for
// CPU; on 2 cores depth 64 beat depth 17 on empty tasks (1.05x vs 1.44x
// pond) and on the requesters' p99.9 cycle (docs/performance.md).
func WithWorkerBuffer(n int) Option {
	return optionFunc(func(c *config) {
		if n < 0 {
			c.bad("worker buffer must be >= 0, got %d", n)
		}
		c.workerBuffer = n
	})
}

// WithCompletionBuffer sets the capacity of the channel engine's
// completion channel, on which every worker sends one message per finished
// request (default: the number of workers; 0 is unbuffered, as in Pike's
// design, where a worker waits for the balancer to take each completion).
// The rings engine has no completion channel: with it, New returns an error
// matching ErrWrongEngine.
func WithCompletionBuffer(n int) Option {
	return optionFunc(func(c *config) {
		if n < 0 {
			c.bad("completion buffer must be >= 0, got %d", n)
		}
		c.completion = n
	})
}

// WithIntakeBuffer sets how many accepted requests may wait for the
// balancer to send them to a worker. 0 accepts a request only when nothing
// waits and a worker has room, like Pike's unbuffered request channel; the
// default (workers × (worker buffer + 1)) lets submitters go on without
// waiting for the balancer.
func WithIntakeBuffer(n int) Option {
	return optionFunc(func(c *config) {
		if n < 0 {
			c.bad("intake buffer must be >= 0, got %d", n)
		}
		c.intake = n
	})
}

// WithStrategy uses s to pick workers. The dispatcher becomes its only
// user: s must not be shared. Its members must be the workers 0..n-1.
func WithStrategy(s strategies.Strategy) Option {
	return optionFunc(func(c *config) {
		if s == nil {
			c.bad("nil strategy")
		}
		c.strategy = s
	})
}

// WithStrategyName builds the strategy registered under name over the
// workers' weights (see strategies.Names), with opts.
func WithStrategyName(name string, opts ...strategies.Option) Option {
	return optionFunc(func(c *config) {
		c.strategyName = name
		c.strategyOpts = opts
	})
}
