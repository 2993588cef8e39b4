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
// submission for batches, run-and-wait for closed-loop requesters. The task
// is bound at construction so each implementation can wrap it once, in the
// form its API takes, instead of allocating a wrapper per call.
type Pool interface {
	// Go runs the task on some worker and returns without waiting for it.
	Go()
	// Do runs the task on some worker and returns once it has finished.
	Do()
	// Close waits for every submitted task and releases the workers.
	Close()
}

// Impl names a pool implementation and builds it with a number of workers
// running task.
type Impl struct {
	Name string
	New  func(workers int, task func()) Pool
}

// Impls lists every implementation, ours first.
var Impls = []Impl{
	{"balancer", newBalancer},
	{"balancer-channels", newBalancerChannels},
	{"balancer-wb0", newRingsWith(dispatcher.WithWorkerBuffer(0))},
	{"balancer-wb1", newRingsWith(dispatcher.WithWorkerBuffer(1))},
	{"balancer-wb3", newRingsWith(dispatcher.WithWorkerBuffer(3))},
	{"balancer-wb63", newRingsWith(dispatcher.WithWorkerBuffer(63))},
	{"balancer-wb255", newRingsWith(dispatcher.WithWorkerBuffer(255))},
	{"balancer-wb1023", newRingsWith(dispatcher.WithWorkerBuffer(1023))},
	// The old fixed depth with a larger intake: what the intake alone buys.
	{"balancer-ib1024", newRingsWith(dispatcher.WithWorkerBuffer(63), dispatcher.WithIntakeBuffer(1024))},
	{"balancer-ib4096", newRingsWith(dispatcher.WithWorkerBuffer(63), dispatcher.WithIntakeBuffer(4096))},
	// Pike's unbuffered request channel: a submit completes only when the
	// balancer takes it (the rendezvous, on the channel engine).
	{"balancer-channels-ib0", func(n int, task func()) Pool {
		return newDispatcher(n, task, dispatcher.WithEngine(dispatcher.Channels), dispatcher.WithIntakeBuffer(0))
	}},
	{"chanpool", newChanPool},
	{"pike", newPike},
	{"ants", newAnts},
	{"pond", newPond},
	{"workerpool", newWorkerPool},
	{"conc", newConc},
	{"errgroup", newErrgroup},
	{"goroutine", newGoroutine},
}

// Workers is the worker count every benchmark uses: one per P.
func Workers() int { return runtime.GOMAXPROCS(0) }

// balancerPool is ours with its default strategy and buffers: Go is the
// dispatcher's fire-and-forget Go, Do is Do; neither allocates.
type balancerPool struct {
	d      *dispatcher.Dispatcher
	task   func(context.Context) (struct{}, error) // Do's
	goTask func(context.Context) error             // Go's
}

// newBalancer names the rings engine instead of taking DefaultEngine, so
// that impl=balancer keeps measuring the same engine, and rounds taken
// before and after a change of the default stay comparable.
func newBalancer(n int, task func()) Pool {
	return newDispatcher(n, task, dispatcher.WithEngine(dispatcher.Rings))
}

// newBalancerChannels is the same dispatcher on Pike's channels, with the
// channel engine's default buffers: what the rings engine must beat.
func newBalancerChannels(n int, task func()) Pool {
	return newDispatcher(n, task, dispatcher.WithEngine(dispatcher.Channels))
}

// newRingsWith is the rings engine with other buffers than the default,
// for experiments on buffer sizes: whether holding requests in
// the balancer rather than in the workers' queues shortens the requesters'
// tail (it does not), and what deeper queues or a larger intake buy a
// batch of tiny tasks.
func newRingsWith(opts ...dispatcher.Option) func(int, func()) Pool {
	return func(n int, task func()) Pool {
		return newDispatcher(n, task, append([]dispatcher.Option{dispatcher.WithEngine(dispatcher.Rings)}, opts...)...)
	}
}

func newDispatcher(n int, task func(), opts ...dispatcher.Option) Pool {
	d, err := dispatcher.New(append([]dispatcher.Option{dispatcher.WithWorkers(n)}, opts...)...)
	if err != nil {
		panic(err) // static options: a programming error
	}
	return &balancerPool{
		d:      d,
		task:   func(context.Context) (struct{}, error) { task(); return struct{}{}, nil },
		goTask: func(context.Context) error { task(); return nil },
	}
}

func (p *balancerPool) Go() {
	if err := p.d.Go(context.Background(), p.goTask); err != nil {
		panic(err)
	}
}

func (p *balancerPool) Do() {
	if _, err := dispatcher.Do(context.Background(), p.d, p.task); err != nil {
		panic(err)
	}
}

func (p *balancerPool) Close() { _ = p.d.Close(context.Background()) }

// chanPool is the plain pool: n goroutines receiving jobs from one
// unbuffered channel, the baseline every dispatcher must beat or explain.
type chanPool struct {
	task func()
	ch   chan chan struct{} // a job: where to signal completion, nil for Go
	wg   sync.WaitGroup
}

func newChanPool(n int, task func()) Pool {
	p := &chanPool{task: task, ch: make(chan chan struct{})}
	for range n {
		p.wg.Go(func() {
			for done := range p.ch {
				p.task()
				if done != nil {
					done <- struct{}{}
				}
			}
		})
	}
	return p
}

func (p *chanPool) Go() { p.ch <- nil }

// doneChans recycles the capacity-1 answer channels of Do, so the
// baselines allocate nothing per request beyond what their API requires.
var doneChans = sync.Pool{New: func() any { return make(chan struct{}, 1) }}

func (p *chanPool) Do() {
	done := doneChans.Get().(chan struct{})
	p.ch <- done
	<-done
	doneChans.Put(done)
}

func (p *chanPool) Close() { close(p.ch); p.wg.Wait() }

// wait runs task through submit with a closure that signals completion:
// the natural Do for pools whose API has no per-task wait.
func wait(task func(), submit func(func())) {
	done := doneChans.Get().(chan struct{})
	submit(func() { task(); done <- struct{}{} })
	<-done
	doneChans.Put(done)
}

type antsPool struct {
	p    *ants.Pool
	task func()
}

func newAnts(n int, task func()) Pool {
	p, err := ants.NewPool(n)
	if err != nil {
		panic(err)
	}
	return antsPool{p, task}
}

func (p antsPool) submit(f func()) {
	if err := p.p.Submit(f); err != nil {
		panic(err)
	}
}

func (p antsPool) Go() { p.submit(p.task) }
func (p antsPool) Do() { wait(p.task, p.submit) }

// Close waits for the workers to exit, which they do after their task.
func (p antsPool) Close() { _ = p.p.ReleaseTimeout(time.Minute) }

type pondPool struct {
	p    pond.Pool
	task func()
}

func newPond(n int, task func()) Pool { return pondPool{pond.NewPool(n), task} }

func (p pondPool) Go() {
	if err := p.p.Go(p.task); err != nil {
		panic(err)
	}
}

func (p pondPool) Do() {
	if err := p.p.Submit(p.task).Wait(); err != nil {
		panic(err)
	}
}

func (p pondPool) Close() { p.p.StopAndWait() }

type wpPool struct {
	p    *workerpool.WorkerPool
	task func()
}

func newWorkerPool(n int, task func()) Pool { return wpPool{workerpool.New(n), task} }
func (p wpPool) Go()                        { p.p.Submit(p.task) }
func (p wpPool) Do()                        { p.p.SubmitWait(p.task) }
func (p wpPool) Close()                     { p.p.StopWait() }

// concPool: conc's pool is single-use (Wait ends it), so Close waits.
type concPool struct {
	p    *pool.Pool
	task func()
}

func newConc(n int, task func()) Pool { return concPool{pool.New().WithMaxGoroutines(n), task} }
func (p concPool) Go()                { p.p.Go(p.task) }
func (p concPool) Do()                { wait(p.task, p.p.Go) }
func (p concPool) Close()             { p.p.Wait() }

type egPool struct {
	g    *errgroup.Group
	task func() error
}

func newErrgroup(n int, task func()) Pool {
	g := new(errgroup.Group)
	g.SetLimit(n)
	return egPool{g, func() error { task(); return nil }}
}

func (p egPool) Go() { p.g.Go(p.task) }
func (p egPool) Do() {
	wait(func() { _ = p.task() }, func(f func()) { p.g.Go(func() error { f(); return nil }) })
}
func (p egPool) Close() { _ = p.g.Wait() }

// goroutinePool starts one goroutine per task: no bound, no reuse.
type goroutinePool struct {
	wg   *sync.WaitGroup
	task func()
}

func newGoroutine(_ int, task func()) Pool { return goroutinePool{new(sync.WaitGroup), task} }
func (p goroutinePool) Go()                { p.wg.Go(p.task) }
func (p goroutinePool) Do()                { wait(p.task, p.wg.Go) }
func (p goroutinePool) Close()             { p.wg.Wait() }
