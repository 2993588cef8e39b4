package dispatcher

import "github.com/gobalancer/balancer/worker"

// chanLinks is what both channel engines share: a channel per worker
// (worker.Chan, carrying runs of requests), the completion channel every
// worker sends on, and the kick channel that wakes a balancer parked in
// its select.
//
// Deadlock-free at any buffers by one rule: the balancer sends only to a
// worker with room (fewer than its limit pending), so the send never
// waits for a worker that waits on the completion channel; while the
// picked worker is full the balancer only serves completions (and
// control) until the worker has room.
type chanLinks struct {
	p     *port
	done  chan worker.Done // the completion channel (WithCompletionBuffer)
	kicks chan struct{}    // capacity 1: a lifecycle change or control call to look at
}

func newChanLinks(d *Dispatcher, completion int) chanLinks {
	return chanLinks{p: (*port)(d), done: make(chan worker.Done, completion), kicks: make(chan struct{}, 1)}
}

// worker makes a channel worker reporting on the completion channel.
func (l *chanLinks) worker(i int, cfg worker.Config[*request]) member {
	cfg.Quiet = quiet
	return worker.NewChan(cfg, i, l.done)
}

// quiet: nobody waits for a Go request's answer, so its worker may report
// its completion with others' (worker.Chan). Every other request is
// reported before it is answered, so Stats read after an answer counts it.
func quiet(r *request) bool { return r.async }

// setLimit: the balancer's count alone keeps a worker under its limit.
func (l *chanLinks) setLimit(int, int) {}

// pollBatch bounds how many messages of one kind a turn takes without
// waiting, so control calls and the lifecycle are looked at between.
const pollBatch = 256

// completions takes the completion messages already sent, up to
// pollBatch, and reports whether there were any.
func (l *chanLinks) completions() bool {
	for k := range pollBatch {
		select {
		case c := <-l.done:
			l.p.completed(c.Worker, c.N)
		default:
			return k > 0
		}
	}
	return true
}

// wait is the balancer's select: a message on in (the engine's request
// channel; nil while the balancer takes none), which it returns, a
// completion, a control call or a kick, which it serves.
func wait[T any](l *chanLinks, in <-chan T) (v T, ok bool) {
	select {
	case v = <-in:
		return v, true
	case c := <-l.done:
		l.p.completed(c.Worker, c.N)
	case f := <-l.p.ctl:
		l.p.ctlWaiting.Add(-1)
		f()
	case <-l.kicks:
	}
	return v, false
}

// kick tells the balancer to look at the lifecycle, ctl or the line. Never
// blocks.
func (l *chanLinks) kick() {
	select {
	case l.kicks <- struct{}{}:
	default: // a kick is pending already
	}
}
