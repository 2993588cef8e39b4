package dispatcher

// WithPanicHandler calls h once for every task that panics (Do, Submit,
// Go, groups alike), on the worker that ran it, before the task's
// requester gets the *PanicError: h sees the value and the worker's stack
// at the panic, which Go's fire-and-forget tasks otherwise drop. The worker
// stays busy until h returns (the balancer counts the task as running and
// sends that worker nothing more), so a slow h delays its own worker and
// nothing else; h runs as part of the task and follows a task's rules on
// submitting to its own dispatcher (see Dispatcher). A panic or a
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

// panicked answers a request whose task panicked, on its worker: it tells
// the request's owner (a group), then the panic handler, then counts the
// request done and answers it. Counting after the handler keeps the worker
// busy while the handler runs: the balancer sends it nothing more (a full
// worker is never sent to), so a slow handler delays its own worker only.
func (d *Dispatcher) panicked(r *request, v any, stack []byte, count, exiting func()) {
	d.panics.Add(1)
	d.finished(r)
	pe := &PanicError{Value: v, Stack: stack}
	answered := false
	defer func() {
		// The handler called runtime.Goexit: answer on the way out (the
		// worker's respawn replaces the goroutine afterwards; it is
		// counted first, so Stats read after the answer has it).
		if !answered {
			exiting()
			count()
			d.reply(r, pe)
		}
	}()
	if r.owner != nil {
		r.owner.taskFailed(pe)
	}
	d.handlePanic(pe)
	answered = true
	count()
	d.reply(r, pe)
}

// handlePanic calls the panic handler, if any, and contains whatever it
// does.
func (d *Dispatcher) handlePanic(pe *PanicError) {
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
func (d *Dispatcher) exited(r *request) {
	d.goexits.Add(1)
	d.finished(r)
	if r.owner != nil {
		r.owner.taskFailed(ErrTaskExited)
	}
	d.reply(r, ErrTaskExited)
}
