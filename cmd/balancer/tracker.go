package main

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/gobalancer/balancer/strategies"
)

// tracker wraps the real strategy to learn, honestly, which worker runs
// each request: the dispatcher API does not tell a task its worker, and the
// demo needs it to make some workers slower (-speeds).
//
// How it works: request t of requester r is submitted with routing key
// t<<reqBits | r. Pick maps t to the routing key the user asked for
// (-keys), asks the real strategy, and stores the picked worker's speed,
// tagged with t, in requester r's slot before returning. A requester has
// one request in flight, so a slot per requester suffices and the table
// does not grow with -requests. The dispatcher honours every pick (a full
// worker holds the request rather than re-picking) and puts the request
// in that worker's queue after Pick returns; the task reads slot r after
// the worker took it, so the queue's publish orders the store before the
// load. The slot is atomic all the same: a requester whose context was
// cancelled moves on while its abandoned task may still read the slot;
// the tag tells that task the slot is no longer its own.
//
// The tracker also counts picks per worker for the plot. It runs on the
// balancer goroutine only, like any strategy, and is read after Close.
type tracker struct {
	inner  strategies.Strategy
	keys   uint64          // -keys; 0: the key is t itself
	speeds []float64       // per worker index, grown by Add
	base   []float64       // -speeds, reused cyclically by added workers
	slots  []atomic.Uint64 // per requester: low 32 bits of t, then float32 bits of the speed
	cum    *cumulative     // picks per worker, only when a plot wants them
}

// reqBits is the part of a routing key that names the requester: hence
// the limits on -requesters (2^reqBits) and -requests (2^(64-reqBits)).
const reqBits = 16

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
		slots:  make([]atomic.Uint64, c.requesters),
	}
	if record {
		t.cum = &cumulative{}
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

// requestKey is the dispatcher's routing key of request t of requester r.
func requestKey(t, r int) uint64 { return uint64(t)<<reqBits | uint64(r) }

func (t *tracker) Pick(key uint64) int {
	req, r := key>>reqBits, key&(1<<reqBits-1)
	i := t.inner.Pick(routeKey(req, t.keys))
	if r < uint64(len(t.slots)) && i >= 0 && i < len(t.speeds) {
		t.slots[r].Store(uint64(uint32(req))<<32 | uint64(math.Float32bits(float32(t.speeds[i]))))
	}
	if t.cum != nil {
		t.cum.add(i)
	}
	return i
}

func (t *tracker) Done(i int, elapsed time.Duration) { t.inner.Done(i, elapsed) }

// speedOf is the speed of the worker running request req of requester r;
// call it only from the task (see the type's doc for why that is safe).
func (t *tracker) speedOf(req, r int) float64 {
	v := t.slots[r].Load()
	if uint32(v>>32) != uint32(req) {
		return 1 // not this request's pick: only an abandoned task reads it
	}
	if s := float64(math.Float32frombits(uint32(v))); s > 0 {
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
