package dispatcher

import (
	"context"
)

// enqueue hands r to the balancer. Once it returns nil, r will be answered
// exactly once.
func (e *rings) enqueue(ctx context.Context, r *request, block bool) error {
	return e.in.enqueue(ctx, e.d, e, r, block)
}

// enqueueGo takes the request from the spare list under the lock the
// submit takes anyway, so nothing is allocated or recycled unless the
// request is accepted.
func (e *rings) enqueueGo(ctx context.Context, m meta, fn goTask) error {
	return e.in.enqueueGo(ctx, e.d, e, m, fn)
}

// push appends r to the intake, which admit left locked, and unlocks it.
func (e *rings) push(r *request) {
	in := &e.in
	in.q = append(in.q, r)
	in.n++
	in.mu.Unlock()
	e.kick()
}

// fence stops intake for Close. The intake's lock is the fence: no
// submitter is between its lifecycle check and its append once the state
// moves under it.
func (e *rings) fence() {
	in := &e.in
	in.mu.Lock()
	e.d.advance(lifeDraining)
	in.wakeAll() // blocked submitters return ErrClosed
	in.mu.Unlock()
}
