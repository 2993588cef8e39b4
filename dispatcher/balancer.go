package dispatcher

import (
	"fmt"
	"time"

	"github.com/gobalancer/balancer/pool"
	"github.com/gobalancer/balancer/strategies"
	"github.com/gobalancer/balancer/worker"
)

// batch bounds how many intake items or completions the balancer takes per
// wake-up before it looks at its other channels again.
const batch = 64

// balancer is the state the balancer goroutine owns: no locks guard it.
type balancer[R any] struct {
	strat strategies.Strategy
	dyn   strategies.Dynamic // nil when strat cannot change membership
	pool  *pool.Pool[*request[R]]
	comp  chan worker.Completion
	depth int // most requests counted against one worker

	w     []slot
	room  int // live workers with a positive weight and room for one more
	live  int // live workers
	total int // requests pending over all workers

	held  *request[R] // picked for a full worker, sent when it has room
	heldW int

	closing bool

	dispatched, completed, stalls int64
	pend                          pendingStats
}

type slot struct {
	weight     int
	pending    int
	maxPending int
	completed  int64
	busy       int64 // nanoseconds
	removed    bool
}

func (b *balancer[R]) init(s strategies.Strategy, p *pool.Pool[*request[R]], comp chan worker.Completion, depth int, weights []int) {
	b.strat, b.pool, b.comp, b.depth = s, p, comp, depth
	b.dyn, _ = s.(strategies.Dynamic)
	b.w = make([]slot, len(weights))
	for i, w := range weights {
		b.w[i].weight = w
		b.live++
		if w > 0 {
			b.room++
		}
	}
}

func (b *balancer[R]) hasRoom(i int) bool {
	s := &b.w[i]
	return !s.removed && s.weight > 0 && s.pending < b.depth
}

// balance is the balancer goroutine: Pike's select over requests and
// completions, plus control calls and shutdown.
func (d *Dispatcher[R]) balance() {
	b := &d.b
	closing, abandon := d.closing, d.abandonCh
	for {
		if b.closing && b.held == nil && b.total == 0 && len(d.intake) == 0 {
			break
		}
		// The gate: take a request only when it can go somewhere. A held
		// request or no room anywhere turns the intake case off (a nil
		// channel never receives), so only completions and control run.
		var in chan *request[R]
		if b.held == nil && b.room > 0 {
			in = d.intake
		}
		select {
		case r := <-in:
			d.dispatch(r)
			for k := 1; k < batch && b.held == nil && b.room > 0; k++ {
				select {
				case r = <-d.intake:
					d.dispatch(r)
					continue
				default:
				}
				break
			}
		case c := <-b.comp:
			d.complete(c)
			for k := 1; k < batch; k++ {
				select {
				case c = <-b.comp:
					d.complete(c)
					continue
				default:
				}
				break
			}
		case f := <-d.ctl:
			f()
		case <-closing:
			b.closing, closing = true, nil
		case <-abandon:
			abandon = nil
			d.abandonQueued()
		}
	}
	b.pool.Stop()
	b.pool.Wait()
	s := d.snapshot()
	d.final.Store(&s)
	close(d.stopped)
}

// dispatch picks a worker for r and sends r to it, or holds r until the
// picked worker has room: the pick is honoured, never re-routed.
func (d *Dispatcher[R]) dispatch(r *request[R]) {
	if d.abandoned.Load() {
		r.answerErr(d.abandon)
		return
	}
	b := &d.b
	i := b.strat.Pick(r.key)
	if !b.pool.Live(i) {
		r.answerErr(fmt.Errorf("%w: %d", ErrBadPick, i))
		return
	}
	if b.w[i].pending >= b.depth {
		b.held, b.heldW = r, i
		b.stalls++
		return
	}
	d.send(i, r)
}

// send never blocks: the worker's channel holds depth items and at most
// depth are counted against it.
func (d *Dispatcher[R]) send(i int, r *request[R]) {
	b := &d.b
	s := &b.w[i]
	b.pool.In(i) <- r
	b.pend.add(s.pending, 1)
	s.pending++
	b.total++
	b.dispatched++
	if s.pending > s.maxPending {
		s.maxPending = s.pending
	}
	if s.pending == b.depth && s.weight > 0 && !s.removed {
		b.room--
	}
	b.pend.sample(b.live)
}

func (d *Dispatcher[R]) complete(c worker.Completion) {
	b := &d.b
	i := c.Worker
	s := &b.w[i]
	had := b.hasRoom(i)
	b.pend.add(s.pending, -c.N)
	s.pending -= c.N
	b.total -= c.N
	s.completed += int64(c.N)
	s.busy += int64(c.Busy)
	b.completed += int64(c.N)
	if !had && b.hasRoom(i) {
		b.room++
	}
	// A report covers N requests; each gets the batch's mean duration.
	per := c.Busy / time.Duration(c.N)
	for range c.N {
		b.strat.Done(i, per)
	}
	b.pend.sample(b.live)
	if b.held != nil && b.heldW == i && s.pending < b.depth {
		r := b.held
		b.held = nil
		d.send(i, r)
	}
}

// abandonQueued answers, without running them, the requests Close gave up
// on: the held one, the intake's, and those queued at workers, which would
// otherwise wait for (maybe never) the task running ahead of them.
func (d *Dispatcher[R]) abandonQueued() {
	b := &d.b
	if b.held != nil {
		b.held.answerErr(d.abandon)
		b.held = nil
	}
	for i := range b.w {
		for b.w[i].pending > 0 {
			r, ok := b.pool.TryTake(i)
			if !ok {
				break
			}
			r.answerErr(d.abandon)
			d.complete(worker.Completion{Worker: i, N: 1})
		}
	}
	for {
		select {
		case r := <-d.intake:
			r.answerErr(d.abandon)
		default:
			return
		}
	}
}
