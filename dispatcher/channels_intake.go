package dispatcher

import "context"

// The channel engine's intake. With a buffer, the request channel carries
// runs: a submitter appends its request to the staged slice under the
// intake's lock and, if no run is on its way, sends the slice as one
// message; requests that arrive while a run is on its way join the next
// one, which the balancer sweeps up under the same lock when it receives
// the run. One channel message per request cost a lock on the channel's
// both ends per request, held against each other: half of a batch's CPU
// time went to that contention. An idle balancer still hears of a lone
// request at once (its run is a message of one); a busy one takes what
// piled up in one receive and one lock.
//
// The buffer bounds what is accepted and not yet taken by the balancer
// (staged, on its way, or in the balancer's backlog of the last run);
// submitters that find it full wait in the intake's line, as on rings.
// Without a buffer the channel is Pike's unbuffered one, a rendezvous per
// request.

// enqueue hands r to the balancer, waiting for room if block. Once it
// returns nil, r will be answered exactly once.
func (e *channels) enqueue(ctx context.Context, r *request, block bool) error {
	if e.runs == nil {
		return e.rendezvous(ctx, r, block)
	}
	l, w := e.d.book.laneOf(e.in.mode, r.tenant, r.prio)
	if err := e.in.admit(ctx, l, w, block, &e.d.life, e); err != nil {
		return err
	}
	e.push(r)
	return nil
}

// enqueueGo takes a spare request under the intake's lock, so nothing is
// allocated or recycled unless the request is accepted (the unbuffered
// send hands an unsent one back).
func (e *channels) enqueueGo(ctx context.Context, m meta, fn goTask) error {
	in := &e.in
	if e.runs != nil {
		l, w := e.d.book.laneOf(e.in.mode, m.tenant, m.prio)
		if err := in.admit(ctx, l, w, true, &e.d.life, e); err != nil {
			return err
		}
		r := in.spareGo()
		r.ctx, r.job, r.meta = ctx, fn, m
		e.push(r)
		return nil
	}
	in.mu.Lock()
	r := in.spareGo()
	in.mu.Unlock()
	r.ctx, r.job, r.meta = ctx, fn, m
	err := e.rendezvous(ctx, r, true)
	if err != nil {
		r.ctx, r.job = nil, nil
		in.mu.Lock()
		in.spare = append(in.spare, r)
		in.mu.Unlock()
	}
	return err
}

// push stages r in the intake, which admit left locked, unlocks it, and
// sends the staged run unless one is on its way already.
func (e *channels) push(r *request) {
	in := &e.in
	in.q = append(in.q, r)
	in.n++
	if e.sending {
		in.mu.Unlock()
		return
	}
	e.sending = true
	q := in.q
	in.q, e.reuse = e.reuse, nil
	in.mu.Unlock()
	e.runs <- q // capacity 1, and only the sender that set sending sends: never blocks
}

// receive takes run q off the request channel: what was staged meanwhile
// joins it, and it becomes the backlog. Balancer only, with the last
// backlog used up.
func (e *channels) receive(q []*request) {
	in := &e.in
	in.mu.Lock()
	q = append(q, in.q...)
	clear(in.q)
	in.q = in.q[:0]
	e.sending = false
	if e.reuse == nil && e.backlog != nil {
		clear(e.backlog)
		e.reuse = e.backlog[:0]
	}
	in.mu.Unlock()
	e.backlog, e.next = q, 0
}

// takeBacklog takes requests from the backlog while the balancer accepts
// them, and reports whether it took any. Balancer only.
func (e *channels) takeBacklog() bool {
	k := e.next
	for e.next < len(e.backlog) && e.accepting() {
		r := e.backlog[e.next]
		e.backlog[e.next] = nil
		e.next++
		e.took(r)
	}
	return e.next > k
}

// settle tells the intake how many requests left since it last did, hands
// it the Go requests collected from the workers, and offers the room to
// submitters in line: at once if the balancer is about to park (idle),
// otherwise once half the buffer is free, so a submitter that outruns the
// workers wakes once per half buffer, not per request. Balancer only.
func (e *channels) settle(idle bool) {
	in := &e.in
	if e.d.b.left() == in.left && !idle && len(e.free) == 0 {
		return // in.left is the balancer's own: read without the lock
	}
	in.mu.Lock()
	e.give(in)
	if e.runs == nil {
		in.mu.Unlock()
		return
	}
	e.settleLocked()
	if idle && in.waitq.n > 0 && in.admits() {
		in.offer()
	}
	in.offerLanes(idle)
	in.mu.Unlock()
}

func (e *channels) settleLocked() {
	in := &e.in
	in.account(e.d.b.left())
	if in.offerDue() {
		in.offer()
	}
	in.offerLanes(false)
}

// intakeEmpty reports whether nothing accepted waits in the intake. The
// lifecycle is past open (no submit is accepted any more). Balancer only.
func (e *channels) intakeEmpty() bool {
	if e.runs == nil {
		return true // unbuffered: a request is taken as it is sent
	}
	if e.next < len(e.backlog) {
		return false
	}
	e.in.mu.Lock()
	defer e.in.mu.Unlock()
	return len(e.in.q) == 0 && !e.sending
}

// takeIntake returns every request accepted and not yet taken, for the
// abandon. The intake is fenced (abandon follows Close): nothing arrives
// after it.
func (e *channels) takeIntake() []*request {
	if e.runs == nil {
		return nil // unbuffered, and no sender is past the fence
	}
	q := append([]*request(nil), e.backlog[e.next:]...)
	e.backlog, e.next = nil, 0
	in := &e.in
	in.mu.Lock()
	q = append(q, in.q...)
	in.q = nil
	sending := e.sending
	e.sending = false
	in.mu.Unlock() // n drops as the abandon answers them (settle)
	if sending {
		q = append(q, <-e.runs...) // on its way: its sender sends without waiting
	}
	return q
}

// intakeStats: read on the balancer goroutine (snapshot), like the
// backlog, the schedule and the held request it accounts for.
func (e *channels) intakeStats() (queued, blocked int) {
	if e.runs == nil {
		// Unbuffered: nothing waits in the channel, only in the schedule.
		return e.d.b.sched.len(), int(e.blocked.Load())
	}
	// n counts what is staged, on its way, in the backlog, in the schedule
	// and held; Queued leaves the held one to Stats.Held.
	in := &e.in
	in.mu.Lock()
	in.account(e.d.b.left())
	queued, blocked = in.n, in.waitq.n
	in.mu.Unlock()
	if e.d.b.held != nil {
		queued--
	}
	return queued, blocked
}

// fence stops intake for Close: blocked submitters leave with ErrClosed,
// those between their check and their send finish, and every later submit
// sees the lifecycle past open. The intake's lock fences the buffered
// intake (as on rings), closeMu the unbuffered send.
func (e *channels) fence() {
	close(e.closing)
	in := &e.in
	in.mu.Lock()
	e.closeMu.Lock()
	e.d.advance(lifeDraining)
	in.wakeAll()
	e.closeMu.Unlock()
	in.mu.Unlock()
}

// kick tells the balancer to look at the lifecycle, ctl or the line. Never
// blocks.
func (e *channels) kick() {
	select {
	case e.kicks <- struct{}{}:
	default: // a kick is pending already
	}
}
