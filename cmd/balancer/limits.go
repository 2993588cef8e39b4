package main

import (
	"fmt"
	"time"

	"github.com/gobalancer/balancer/dispatcher"
)

// Bounds on the flags that size or time a run: past them a run would
// exhaust memory or never end, so they are bad input (exit 2) instead.
const (
	// Each requester is a goroutine blocked in Do: 2^16 of them hold at
	// least 128 MB of stacks. 2^48 requests take years.
	maxRequesters = 1 << 16
	maxRequests   = 1 << 48
	// A request's mean CPU work: beyond a second, a run of the default
	// 10000 requests on 2 cores takes hours, and a duration near 2^63 ns
	// overflows the busy loop's iteration count.
	maxWork = time.Second
	// Worker speeds: a request costs -work/speed, so at 0.01 the slowest
	// is 100 times -work, at most 100 s a request.
	minSpeed, maxSpeed = 0.01, 1e6
)

// checkBounds applies the bounds above; see maxPicks for -picks.
func (c *config) checkBounds(set map[string]bool) error {
	switch {
	case c.requesters > maxRequesters:
		return fmt.Errorf("%s must be at most %d, got %d", spelled(set, "requesters", "nRequester"), maxRequesters, c.requesters)
	case int64(c.requests) > maxRequests:
		return fmt.Errorf("-requests must be at most 2^48 (%d), got %d", int64(maxRequests), c.requests)
	case c.picks > maxPicks:
		return fmt.Errorf("-picks must be at most %d (the trace is held whole), got %d", maxPicks, c.picks)
	case c.work < 0 || c.churn < 0:
		return fmt.Errorf("-work and -churn must be >= 0")
	case c.work > maxWork:
		return fmt.Errorf("-work must be at most %v per request, got %v", maxWork, c.work)
	}
	return nil
}

// checkSizes applies the dispatcher's size limits, so that a size it
// would refuse is bad input (exit 2) rather than a failed run, and so that
// nothing is sized by a count it would refuse. Ranges are checked first:
// the product cannot overflow.
func (c *config) checkSizes(set map[string]bool) error {
	switch {
	case c.weights != nil && c.workers > dispatcher.MaxWorkers:
		return fmt.Errorf("-weights: %d weights, more than the %d workers a dispatcher runs (dispatcher.MaxWorkers)",
			c.workers, dispatcher.MaxWorkers)
	case c.workers > dispatcher.MaxWorkers:
		return fmt.Errorf("%s must be at most %d (dispatcher.MaxWorkers), got %d",
			spelled(set, "workers", "nWorker"), dispatcher.MaxWorkers, c.workers)
	}
	for _, v := range c.workerBuffers {
		if v >= dispatcher.MaxBuffer {
			return fmt.Errorf("-worker-buffer must be below %d (dispatcher.MaxBuffer), got %d", dispatcher.MaxBuffer, v)
		}
		if c.workers > dispatcher.MaxBuffer/(v+1) {
			return fmt.Errorf("%d workers × (-worker-buffer %d + 1) is more than the %d requests all worker queues may hold (dispatcher.MaxBuffer)",
				c.workers, v, dispatcher.MaxBuffer)
		}
	}
	for _, v := range c.completions {
		if v > dispatcher.MaxBuffer {
			return fmt.Errorf("-completion-buffer must be at most %d (dispatcher.MaxBuffer), got %d", dispatcher.MaxBuffer, v)
		}
	}
	return nil
}
