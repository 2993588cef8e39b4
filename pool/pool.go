// Package pool owns the balancer's worker set: it creates, starts, grows,
// shrinks and stops the workers, owns every goroutine they run, and gives
// each worker by index. It has no selection logic. A Pool is not safe for
// concurrent use: the balancer goroutine owns it.
//
// It is a building block of package dispatcher, and exports what the
// dispatcher needs of a worker set, nothing more: build on dispatcher,
// not on it.
package pool

import (
	"errors"
	"fmt"
	"slices"
	"sync"
)

// ErrNoWorker is returned by Remove for an index that was never handed out
// or whose worker is already closed.
var ErrNoWorker = errors.New("pool: no live worker")

// Member is what the pool needs of a worker (worker.Worker or worker.Chan).
type Member interface {
	// Start runs the worker's loop on a goroutine started by the spawn
	// function the worker was made with.
	Start()
	// Close makes the worker exit once it has run what it was given.
	Close()
	// Closed reports whether Close was called. The pool keeps no copy:
	// a worker must know it was closed to exit, so it is the one owner.
	Closed() bool
	// Replaced returns how many of its goroutines a task's Goexit replaced.
	Replaced() int64
}

// Pool is the set of workers, indexed from 0. The index of a removed
// worker is reused, by the lowest first, once its owner has said with
// Forget that nothing of it is left to count; until then indices are not
// reused.
type Pool[W Member] struct {
	make    func(i int, spawn func(func())) W
	spawn   func(func())
	workers []W
	free    []int // forgotten indices, for Add to reuse (lowest first)
	wg      sync.WaitGroup
	retired int64 // Replaced of the workers whose index was reused
}

// New starts n workers, each built by make with its index and the spawn
// function it must start its goroutines with (the pool owns them all).
// spawn is an argument, not a field the pool writes into a configuration
// the caller built, so the pool never overwrites a Spawn the caller set.
func New[W Member](n int, make func(i int, spawn func(func())) W) *Pool[W] {
	p := &Pool[W]{make: make}
	p.spawn = func(f func()) { p.wg.Go(f) }
	for range n {
		p.Add()
	}
	return p
}

// Add starts a new worker and returns its index: the lowest forgotten
// one, or a new one.
func (p *Pool[W]) Add() int {
	if n := len(p.free); n > 0 {
		k := 0
		for j, i := range p.free {
			if i < p.free[k] {
				k = j
			}
		}
		i := p.free[k]
		p.free[k] = p.free[n-1]
		p.free = p.free[:n-1]
		p.retired += p.workers[i].Replaced()
		w := p.make(i, p.spawn)
		p.workers[i] = w
		w.Start()
		return i
	}
	i := len(p.workers)
	w := p.make(i, p.spawn)
	p.workers = append(p.workers, w)
	w.Start()
	return i
}

// Forget lets Add reuse the index of removed worker i, whose items the
// owner has all counted. A live or unknown index, or one already
// forgotten, is ErrNoWorker.
func (p *Pool[W]) Forget(i int) error {
	if i < 0 || i >= len(p.workers) || !p.workers[i].Closed() || slices.Contains(p.free, i) {
		return fmt.Errorf("%w: %d cannot be forgotten", ErrNoWorker, i)
	}
	p.free = append(p.free, i)
	return nil
}

// Worker returns worker i, for its producer (the balancer) to send to and
// read counters from.
func (p *Pool[W]) Worker(i int) W { return p.workers[i] }

// live reports whether worker i exists and has not been closed.
func (p *Pool[W]) live(i int) bool {
	return i >= 0 && i < len(p.workers) && !p.workers[i].Closed()
}

// Remove closes worker i: it runs what it has queued, counts it and
// exits. Nothing must be given to it afterwards. An index that is not a
// live worker is ErrNoWorker.
func (p *Pool[W]) Remove(i int) error {
	if !p.live(i) {
		return fmt.Errorf("%w: %d", ErrNoWorker, i)
	}
	p.workers[i].Close()
	return nil
}

// Replaced returns how many worker goroutines were replaced after a Goexit.
func (p *Pool[W]) Replaced() int64 {
	n := p.retired
	for _, w := range p.workers {
		n += w.Replaced()
	}
	return n
}

// Stop removes every live worker. Wait then returns once all have exited.
func (p *Pool[W]) Stop() {
	for _, w := range p.workers {
		if !w.Closed() {
			w.Close()
		}
	}
}

// Wait blocks until every goroutine the pool started has exited. Workers
// never wait for the balancer once it stops giving them work, so Wait
// needs nothing from the caller.
func (p *Pool[W]) Wait() { p.wg.Wait() }
