package dispatcher

import "runtime"

// serve is the balancer goroutine, the one loop of either engine, as
// http.Server.Serve is the one accept loop over any listener: each turn
// it runs a control call that waits, acts on the lifecycle, publishes
// admission's figures, and has the engine do what is ready (turn). It
// stops once Close has fenced the intake and everything accepted is
// answered, then stops the workers.
//
// A turn that did nothing is followed by a few yielding turns before the
// engine parks (spinTurns): a balancer that is runnable, not parked,
// costs the workers nothing when they report, where one that parks at
// every completion pays a wake-up per request.
func (d *Dispatcher) serve() {
	b := &d.b
	idle := 0 // turns in a row that did nothing
	for {
		if d.ctlWaiting.Load() > 0 {
			d.serveControl()
		}
		d.observe()
		if d.admission {
			b.publishAdmission(&d.adm)
		}
		progress := d.turn()
		// Past open the intake is fenced: what is buffered is all there is.
		if b.seen >= lifeDraining && b.drained() && d.intakeEmpty() {
			break
		}
		if progress {
			idle = 0
			continue
		}
		if idle < spinTurns {
			idle++
			runtime.Gosched()
			continue
		}
		idle = 0
		d.eng.park()
	}
	d.stop()
}

// turn takes what the engine has ready (requests into the schedule,
// completions), hands out what the schedule releases while workers have
// room, and publishes the hand-offs; it reports whether it did anything.
func (d *Dispatcher) turn() bool {
	b := &d.b
	progress := d.eng.poll()
	for r := b.next(); r != nil; r = b.next() {
		d.dispatch(r)
		progress = true
	}
	b.ws.flush()
	return progress
}

// intakeEmpty reports whether nothing accepted waits in the intake.
func (d *Dispatcher) intakeEmpty() bool {
	queued, _ := d.eng.intake()
	return queued == 0
}

// reap takes every completion the workers have reported, so a snapshot
// read after an answer counts its request (workers report before
// answering), and at the stop the last ones.
func (p *port) reap() {
	for p.eng.poll() {
	}
}

// spinTurns is how many empty turns the balancer yields its P for before it
// parks (both engines). A closed loop of requesters submits again within
// microseconds; yielding (runtime.Gosched, not a busy wait: whoever is
// runnable runs) lets them do so without the balancer paying a park and a
// wake-up per request. Without it a closed loop of Do with empty tasks
// costs markedly more CPU a request; batches and fairness do not move
// (docs/performance.md, "The yields").
const spinTurns = 3
