package dispatcher

// port is the Dispatcher as its engine sees it: what the engine tells the
// balancer (take, completed) and the few questions about the policy it
// may ask, and nothing else of the policy's state. Balancer goroutine
// only.
type port Dispatcher

// take puts r, which the engine took from its intake, in the schedule.
func (p *port) take(r *request) { p.b.take(r) }

// completed counts n completions of worker i, and collects the Go
// requests the worker handed back meanwhile.
func (p *port) completed(i, n int) {
	b := &p.b
	b.spares.collect(b.ws.ret[i])
	b.account(i, n)
	b.complete(i, n)
}

// left is how many requests have left the accepted state: the intake's
// count of what it holds drops by them.
func (p *port) left() int64 { return p.b.left() }

// accepts is how many more requests an unbuffered intake may hand over
// now: the free slots of the workers beside what the schedule holds.
// O(workers).
func (p *port) accepts() int { return p.b.freeSlots() - p.b.sched.len() }

// open reports whether the balancer acts on an open dispatcher.
func (p *port) open() bool { return p.b.seen == lifeOpen }

// changed reports whether the lifecycle moved since the balancer last
// acted on it: a parking engine must not sleep through it.
func (p *port) changed() bool { return p.life.Load() != p.b.seen }

// busy reports whether worker i has requests pending: only those report
// completions.
func (p *port) busy(i int) bool { return p.b.w[i].pending > 0 }

// awaiting reports whether the balancer waits for a completion to go on:
// a request is held for a full worker, the schedule holds requests, no
// worker has room, or Close waits for the last ones.
func (p *port) awaiting() bool {
	b := &p.b
	return b.held != nil || b.room == 0 || b.sched.len() > 0 || (b.seen >= lifeDraining && b.total > 0)
}

// spares is where the balancer keeps the Go requests handed back, which
// the engine passes to the intake's spare list under its lock.
func (p *port) spares() *spares { return &p.b.spares }

// freeSlots is how many more requests the workers can take now (rings'
// admission at a zero buffer). O(workers).
func (p *port) freeSlots() int { return p.b.freeSlots() }
