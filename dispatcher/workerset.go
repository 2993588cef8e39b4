package dispatcher

import (
	"time"

	"github.com/gobalancer/balancer/pool"
)

// member is what the balancer needs of a worker of either engine beyond
// what the pool does.
type member interface {
	pool.Member
	Busy() time.Duration
}

// workerSet is the part of an engine's links that only asks its pool:
// membership, busy time, replacements and the final stop. Embedded by both
// engines, whose other links differ.
type workerSet[W member] struct {
	pool *pool.Pool[W]
}

func (s *workerSet[W]) add() int                 { return s.pool.Add() }
func (s *workerSet[W]) busy(i int) time.Duration { return s.pool.Worker(i).Busy() }
func (s *workerSet[W]) replaced() int64          { return s.pool.Replaced() }

// remove closes worker i. The balancer's slot is its record of membership
// and it removes only a worker its slot says is live; the pool's refusal
// (ErrNoWorker, asked of the worker) guards other callers and cannot
// happen here.
func (s *workerSet[W]) remove(i int) { _ = s.pool.Remove(i) }

// stop stops every worker and waits for all their goroutines.
func (s *workerSet[W]) stop() {
	s.pool.Stop()
	s.pool.Wait()
}
