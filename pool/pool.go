// Package pool owns the balancer's worker set: it creates, starts, grows,
// shrinks and stops the workers and gives each worker by index.
// It has no selection logic. A Pool is not safe for concurrent use: the
// balancer goroutine owns it.
package pool

import (
	"fmt"

	"github.com/gobalancer/balancer/worker"
	"golang.org/x/sync/errgroup"
)

// Pool is the set of workers, indexed from 0; indices are never reused.
type Pool[T any] struct {
	cfg     worker.Config[T]
	workers []*worker.Worker[T]
	closed  []bool
	group   errgroup.Group
}

// New starts n workers built from cfg (cfg.Spawn is replaced by the pool's
// own, which owns every goroutine it starts).
func New[T any](n int, cfg worker.Config[T]) *Pool[T] {
	p := &Pool[T]{cfg: cfg}
	p.cfg.Spawn = func(f func()) { p.group.Go(func() error { f(); return nil }) }
	for range n {
		p.Add()
	}
	return p
}

// Add starts a new worker and returns its index.
func (p *Pool[T]) Add() int {
	i := len(p.workers)
	w := worker.New(p.cfg)
	p.workers = append(p.workers, w)
	p.closed = append(p.closed, false)
	w.Start()
	return i
}

// Len returns the number of indices handed out, removed workers included.
func (p *Pool[T]) Len() int { return len(p.workers) }

// Worker returns worker i, for its producer (the balancer) to push to and
// read counters from.
func (p *Pool[T]) Worker(i int) *worker.Worker[T] { return p.workers[i] }

// Live reports whether worker i exists and has not been removed.
func (p *Pool[T]) Live(i int) bool { return i >= 0 && i < len(p.workers) && !p.closed[i] }

// Remove closes worker i: it runs what it has queued, counts it and
// exits. Nothing must be pushed to it afterwards.
func (p *Pool[T]) Remove(i int) error {
	if !p.Live(i) {
		return fmt.Errorf("pool: no live worker %d", i)
	}
	p.closed[i] = true
	p.workers[i].Close()
	return nil
}

// TryTake removes an item still queued at worker i (removed or not) without
// blocking; see worker.Worker.TryTake.
func (p *Pool[T]) TryTake(i int) (T, bool) { return p.workers[i].TryTake() }

// Replaced returns how many worker goroutines were replaced after a Goexit.
func (p *Pool[T]) Replaced() int64 {
	var n int64
	for _, w := range p.workers {
		n += w.Replaced()
	}
	return n
}

// Stop removes every live worker. Wait then returns once all have exited.
func (p *Pool[T]) Stop() {
	for i := range p.workers {
		if !p.closed[i] {
			p.closed[i] = true
			p.workers[i].Close()
		}
	}
}

// Wait blocks until every goroutine the pool started has exited. Workers
// never wait for the balancer, so Wait needs nothing from the caller.
func (p *Pool[T]) Wait() { _ = p.group.Wait() }
