package benchmarks

import (
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/alitto/pond/v2"
	"github.com/gammazero/workerpool"
	"github.com/gobalancer/balancer/dispatcher"
	"github.com/panjf2000/ants/v2"
	"github.com/sourcegraph/conc/pool"
	"golang.org/x/sync/errgroup"
)

// Pool is what every implementation offers the benchmarks: fire-and-forget
// submission for batches, run-and-wait for closed-loop requesters.
type Pool interface {
	// Go runs task on some worker and returns without waiting for it.
	Go(task func())
	// Do runs task on some worker and returns once it has finished.
	Do(task func())
	// Close waits for every submitted task and releases the workers.
	Close()
}

// Impl names a pool implementation and builds it with a number of workers.
type Impl struct {
	Name string
	New  func(workers int) Pool
}

// Impls lists every implementation, ours first.
var Impls = []Impl{
	{"balancer", newBalancer},
	{"chanpool", newChanPool},
	{"ants", newAnts},
	{"pond", newPond},
	{"workerpool", newWorkerPool},
	{"conc", newConc},
	{"errgroup", newErrgroup},
	{"goroutine", newGoroutine},
}

// Workers is the worker count every benchmark uses: one per P.
func Workers() int { return runtime.GOMAXPROCS(0) }

// balancer is ours with its default strategy. Go uses the dispatcher's
// fire-and-forget Go; Do uses Do (no allocation per request).
type balancerPool struct {
	d *dispatcher.Dispatcher[struct{}]
}

func newBalancer(n int) Pool {
	d, err := dispatcher.New[struct{}](dispatcher.WithWorkers(n))
	if err != nil {
		panic(err) // static options: a programming error
	}
	return balancerPool{d}
}

func (p balancerPool) Go(task func()) {
	if _, err := p.d.Submit(context.Background(), func(context.Context) (struct{}, error) { task(); return struct{}{}, nil }); err != nil {
		panic(err)
	}
}

func (p balancerPool) Do(task func()) {
	if _, err := p.d.Do(context.Background(), func(context.Context) (struct{}, error) { task(); return struct{}{}, nil }); err != nil {
		panic(err)
	}
}

func (p balancerPool) Close() { _ = p.d.Close(context.Background()) }

// chanPool is the plain pool: n goroutines receiving jobs from one
// unbuffered channel, the baseline every dispatcher must beat or explain.
type chanPool struct {
	ch chan job
	wg sync.WaitGroup
}

type job struct {
	task func()
	done chan struct{} // nil for Go
}

func newChanPool(n int) Pool {
	p := &chanPool{ch: make(chan job)}
	for range n {
		p.wg.Go(func() {
			for j := range p.ch {
				j.task()
				if j.done != nil {
					j.done <- struct{}{}
				}
			}
		})
	}
	return p
}

func (p *chanPool) Go(task func()) { p.ch <- job{task: task} }

// doneChans recycles the capacity-1 answer channels of Do, so the plain
// pool allocates nothing per request either.
var doneChans = sync.Pool{New: func() any { return make(chan struct{}, 1) }}

func (p *chanPool) Do(task func()) {
	done := doneChans.Get().(chan struct{})
	p.ch <- job{task: task, done: done}
	<-done
	doneChans.Put(done)
}

func (p *chanPool) Close() { close(p.ch); p.wg.Wait() }

type antsPool struct{ p *ants.Pool }

func newAnts(n int) Pool {
	p, err := ants.NewPool(n)
	if err != nil {
		panic(err)
	}
	return antsPool{p}
}

func (p antsPool) Go(task func()) {
	if err := p.p.Submit(task); err != nil {
		panic(err)
	}
}

func (p antsPool) Do(task func()) {
	done := doneChans.Get().(chan struct{})
	p.Go(func() { task(); done <- struct{}{} })
	<-done
	doneChans.Put(done)
}

// Close waits for the workers to exit, which they do after their task.
func (p antsPool) Close() { _ = p.p.ReleaseTimeout(time.Minute) }

type pondPool struct{ p pond.Pool }

func newPond(n int) Pool { return pondPool{pond.NewPool(n)} }

func (p pondPool) Go(task func()) {
	if err := p.p.Go(task); err != nil {
		panic(err)
	}
}

func (p pondPool) Do(task func()) {
	if err := p.p.Submit(task).Wait(); err != nil {
		panic(err)
	}
}

func (p pondPool) Close() { p.p.StopAndWait() }

type wpPool struct{ p *workerpool.WorkerPool }

func newWorkerPool(n int) Pool  { return wpPool{workerpool.New(n)} }
func (p wpPool) Go(task func()) { p.p.Submit(task) }
func (p wpPool) Do(task func()) { p.p.SubmitWait(task) }
func (p wpPool) Close()         { p.p.StopWait() }

// concPool: conc's pool is single-use (Wait ends it), so Close waits.
type concPool struct{ p *pool.Pool }

func newConc(n int) Pool { return concPool{pool.New().WithMaxGoroutines(n)} }

func (p concPool) Go(task func()) { p.p.Go(task) }

func (p concPool) Do(task func()) {
	done := doneChans.Get().(chan struct{})
	p.p.Go(func() { task(); done <- struct{}{} })
	<-done
	doneChans.Put(done)
}

func (p concPool) Close() { p.p.Wait() }

type egPool struct{ g *errgroup.Group }

func newErrgroup(n int) Pool {
	g := new(errgroup.Group)
	g.SetLimit(n)
	return egPool{g}
}

func (p egPool) Go(task func()) { p.g.Go(func() error { task(); return nil }) }

func (p egPool) Do(task func()) {
	done := doneChans.Get().(chan struct{})
	p.g.Go(func() error { task(); done <- struct{}{}; return nil })
	<-done
	doneChans.Put(done)
}

func (p egPool) Close() { _ = p.g.Wait() }

// goroutinePool starts one goroutine per task: no bound, no reuse.
type goroutinePool struct{ wg *sync.WaitGroup }

func newGoroutine(int) Pool { return goroutinePool{new(sync.WaitGroup)} }

func (p goroutinePool) Go(task func()) { p.wg.Go(task) }

func (p goroutinePool) Do(task func()) {
	done := doneChans.Get().(chan struct{})
	p.wg.Go(func() { task(); done <- struct{}{} })
	<-done
	doneChans.Put(done)
}

func (p goroutinePool) Close() { p.wg.Wait() }
