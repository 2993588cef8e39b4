package main

import (
	"time"

	"github.com/gobalancer/balancer/strategies"
)

// tracker wraps the real strategy to learn, honestly, which worker runs
// each request: the dispatcher API does not tell a task its worker, and the
// demo needs it to make some workers slower (-speeds).
//
// How it works: every request is submitted with its own number t as the
// dispatcher's routing key. Pick(t) maps t to the routing key the user asked
// for (-keys), asks the real strategy, and writes the picked worker's speed
// into slot t of a table before returning. The dispatcher honours every pick
// (a full worker holds the request rather than re-picking) and puts the
// request in that worker's queue after Pick returns; the task reads slot t
// after the worker took it. The queue's publish happens-before the take on
// either engine (rings: an atomic store the worker's atomic load observes;
// channels: a send on the worker's channel), so the read needs no lock.
//
// The tracker also records the order of picks, for the plot. It runs on
// the balancer goroutine only, like any strategy, and is read after Close.
type tracker struct {
	inner  strategies.Strategy
	keys   uint64    // -keys; 0: the key is t itself
	speeds []float64 // per worker index, grown by Add
	base   []float64 // -speeds, reused cyclically by added workers
	speed  []float64 // per request t: the speed of the worker picked for it
	order  []int32   // every pick, in order
	record bool      // keep order (only when a plot wants it)
}

// dynTracker is a tracker over a strategy that supports membership changes
// (needed by -churn). It is a separate type so that the dispatcher sees
// strategies.Dynamic only when the real strategy is one.
type dynTracker struct {
	*tracker
	dyn strategies.Dynamic
}

var (
	_ strategies.Strategy = (*tracker)(nil)
	_ strategies.Dynamic  = dynTracker{}
)

func newTracker(inner strategies.Strategy, c *config, record bool) (*tracker, strategies.Strategy) {
	sp := c.speedsOrOne()
	t := &tracker{
		inner:  inner,
		keys:   uint64(c.keys),
		speeds: append([]float64(nil), sp...),
		base:   sp,
		speed:  make([]float64, c.requests),
		record: record,
	}
	if record {
		t.order = make([]int32, 0, c.requests)
	}
	if d, ok := inner.(strategies.Dynamic); ok {
		return t, dynTracker{t, d}
	}
	return t, t
}

// routeKey is the routing key of request t: t mod -keys, or t.
func routeKey(t, keys uint64) uint64 {
	if keys == 0 {
		return t
	}
	return t % keys
}

func (t *tracker) Pick(key uint64) int {
	i := t.inner.Pick(routeKey(key, t.keys))
	if key < uint64(len(t.speed)) && i >= 0 && i < len(t.speeds) {
		t.speed[key] = t.speeds[i]
	}
	if t.record {
		t.order = append(t.order, int32(i))
	}
	return i
}

func (t *tracker) Done(i int, elapsed time.Duration) { t.inner.Done(i, elapsed) }

// speedOf is the speed of the worker running request t; call it only from
// the task (see the type's doc for why that is safe).
func (t *tracker) speedOf(req int) float64 {
	if s := t.speed[req]; s > 0 {
		return s
	}
	return 1
}

// Add gives the new worker the speed of the worker -churn removes with it:
// churn removes the oldest worker as it adds one, so index j replaces index
// j - n and takes speed base[j mod n].
func (d dynTracker) Add(weight int) (int, error) {
	i, err := d.dyn.Add(weight)
	if err == nil {
		for len(d.speeds) <= i {
			d.speeds = append(d.speeds, d.base[len(d.speeds)%len(d.base)])
		}
	}
	return i, err
}

func (d dynTracker) Remove(i int) error            { return d.dyn.Remove(i) }
func (d dynTracker) SetWeight(i, weight int) error { return d.dyn.SetWeight(i, weight) }
