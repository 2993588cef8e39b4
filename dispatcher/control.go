package dispatcher

// exec runs f on the balancer goroutine and returns its error, or
// ErrClosed when the dispatcher is closing or stopped.
func (d *Dispatcher) exec(f func() error) error {
	if !d.made() {
		return ErrNotStarted
	}
	if d.life.Load() != lifeOpen {
		return ErrClosed
	}
	// Checked again on the balancer: Close may have fenced the intake
	// between the check above and f's turn.
	return d.call(func() error {
		if d.life.Load() != lifeOpen {
			return ErrClosed
		}
		return f()
	})
}

// call runs f on the balancer goroutine, also while it drains after Close.
func (d *Dispatcher) call(f func() error) error {
	errc := make(chan error, 1)
	// Announce the call so a busy balancer looks at ctl (it does not poll
	// the channel: a select per loop costs more than the atomic).
	d.ctlWaiting.Add(1)
	d.eng.kick()
	select {
	case d.ctl <- func() { errc <- f() }:
	case <-d.stopped:
		d.ctlWaiting.Add(-1)
		return ErrClosed
	}
	return <-errc
}

// serveControl runs the control call announced by call (ctlWaiting > 0)
// if its caller has reached its send. A busy balancer looks at the atomic
// each turn, not at ctl: a select per turn costs more. Balancer only.
func (d *Dispatcher) serveControl() {
	select {
	case f := <-d.ctl:
		d.ctlWaiting.Add(-1)
		f()
	default: // the caller has not reached its send yet: next turn
	}
}
