package dispatcher

// WithPanicHandler calls h once for every task that panics (Do, Submit,
// Go, groups alike), on the worker that ran it, before the task's
// requester gets the *PanicError: h sees the value and the worker's stack
// at the panic, which Go's fire-and-forget tasks otherwise drop. The worker
// waits for h, so h should be quick (log, count, report). A panic or a
// runtime.Goexit inside h is contained too: the request is still answered
// exactly once, the worker survives, and Stats counts it in
// PanicHandlerFailures. A nil h is refused.
func WithPanicHandler(h func(*PanicError)) Option {
	return optionFunc(func(c *config) {
		c.given("WithPanicHandler")
		if h == nil {
			c.bad("nil panic handler")
			return
		}
		c.panicHandler = h
	})
}

// panicked answers a request whose task panicked, on its worker (the
// item is already counted): it tells the task's group, then the panic
// handler, then the requester.
func (d *Dispatcher[R]) panicked(r *request[R], v any, stack []byte) {
	d.panics.Add(1)
	pe := &PanicError{Value: v, Stack: stack}
	answered := false
	defer func() {
		// The handler called runtime.Goexit: answer on the way out (the
		// worker's respawn replaces the goroutine afterwards).
		if !answered {
			d.replyErr(r, pe)
		}
	}()
	if s, ok := r.ctx.(*groupSlot[R]); ok {
		s.g.failed(s, pe)
	}
	d.handlePanic(pe)
	answered = true
	d.replyErr(r, pe)
}

// handlePanic calls the panic handler, if any, and contains whatever it
// does.
func (d *Dispatcher[R]) handlePanic(pe *PanicError) {
	if d.onPanic == nil {
		return
	}
	normal := false
	defer func() {
		if !normal {
			d.handlerFailures.Add(1)
			// Its value has nowhere better to go: the handler is what
			// reports panics.
			_ = recover()
		}
	}()
	d.onPanic(pe)
	normal = true
}

// exited answers a request whose task called runtime.Goexit.
func (d *Dispatcher[R]) exited(r *request[R]) {
	d.goexits.Add(1)
	if s, ok := r.ctx.(*groupSlot[R]); ok {
		s.g.failed(s, ErrTaskExited)
	}
	d.replyErr(r, ErrTaskExited)
}
