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
	return e.in.enqueue(ctx, e.d, e, r, block)
}

// enqueueGo takes a spare request under the intake's lock, so nothing is
// allocated or recycled unless the request is accepted.
func (e *channels) enqueueGo(ctx context.Context, m meta, fn goTask) error {
	return e.in.enqueueGo(ctx, e.d, e, m, fn)
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
	e.onWay = len(q)
	in.q, e.reuse = e.reuse, nil
	in.mu.Unlock()
	e.runs <- q // capacity 1, and only the sender that set sending sends: never blocks
}

// receive takes run q off the request channel, and what was staged
// meanwhile, into the schedule. Balancer only.
func (e *channels) receive(q []*request) {
	in := &e.in
	in.mu.Lock()
	q = append(q, in.q...)
	clear(in.q)
	in.q = in.q[:0]
	e.sending, e.onWay = false, 0
	if e.reuse == nil && e.last != nil {
		e.reuse = e.last[:0]
	}
	in.mu.Unlock()
	for i, r := range q {
		e.p.take(r)
		q[i] = nil
	}
	e.last = q
}

// settle tells the intake how many requests left since it last did, hands
// it the Go requests collected from the workers, and offers the room to
// submitters in line: at once if the balancer is about to park (idle),
// otherwise once half the buffer is free, so a submitter that outruns the
// workers wakes once per half buffer, not per request. Balancer only.
func (e *channels) settle(idle bool) {
	in := &e.in
	sp := e.p.spares()
	left := e.p.left()
	if left == in.left && !idle && len(sp.free) == 0 {
		return // in.left is the balancer's own: read without the lock
	}
	in.mu.Lock()
	sp.give(in)
	e.settleLocked(left)
	if idle && in.waitq.n > 0 && in.admits() {
		in.offer()
	}
	in.offerLanes(idle)
	in.mu.Unlock()
}

// settleLocked tells the intake that left requests in all have left, and
// offers room once it is due. Called with in.mu held.
func (e *channels) settleLocked(left int64) {
	in := &e.in
	in.account(left)
	if in.offerDue() {
		in.offer()
	}
	in.offerLanes(false)
}

// intake reports what is staged or on its way, and the line. Balancer
// only.
func (e *channels) intake() (queued, blocked int) {
	in := &e.in
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.q) + e.onWay, in.waitq.n
}

// takeIntake returns every request accepted and not yet taken, for the
// abandon. The intake is fenced (abandon follows Close): nothing arrives
// after it.
func (e *channels) takeIntake() []*request {
	in := &e.in
	in.mu.Lock()
	q := append([]*request(nil), in.q...)
	in.q = nil
	sending := e.sending
	e.sending, e.onWay = false, 0
	in.mu.Unlock() // n drops as the abandon answers them (settle)
	if sending {
		q = append(q, <-e.runs...) // on its way: its sender sends without waiting
	}
	return q
}

// fence stops intake for Close: blocked submitters leave with ErrClosed,
// and every later submit sees the lifecycle past open. The intake's lock
// is the fence: no submitter is between its lifecycle check and its
// append once the state moves under it.
func (e *channels) fence() {
	in := &e.in
	in.mu.Lock()
	e.d.advance(lifeDraining)
	in.wakeAll()
	in.mu.Unlock()
}
