package dispatcher

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// WithDeadlineAdmission refuses, at submit, a request whose context's
// deadline falls before the time it is estimated to finish: the work
// accepted ahead of it, by the workers' measured mean task time, spread
// over the live workers, plus its own run. The refusal matches both
// ErrDeadlineUnmeetable and context.DeadlineExceeded, and the task never
// runs: it does not queue only to time out. Requests without a deadline
// are never refused. Until a task time has been measured the estimate is
// 0 and nothing is refused.
//
// Cost: an atomic add per accepted request and one per finished request
// (the count ahead), and a clock read per submit with a deadline; the
// balancer publishes its figures once per turn.
func WithDeadlineAdmission() Option {
	return optionFunc(func(c *config) {
		c.given("WithDeadlineAdmission")
		c.admission = true
	})
}

// admissionState is what a submit reads to estimate its wait.
type admissionState struct {
	accepted atomic.Int64 // requests accepted, ever
	// finished counts requests answered at a worker, counted there as they
	// finish: a balancer parked with nothing to do would leave a count it
	// published stale, and refuse every tight deadline on an idle
	// dispatcher. answered is those the balancer answered itself.
	finished atomic.Int64
	answered atomic.Int64 // (balancer)
	per      atomic.Int64 // mean task time, ns (balancer)
	live     atomic.Int64 // live workers (balancer)
}

// estimate is how long a request accepted now would take to finish.
func (a *admissionState) estimate() time.Duration {
	per := a.per.Load()
	if per <= 0 {
		return 0
	}
	ahead := max(a.accepted.Load()-a.finished.Load()-a.answered.Load(), 0)
	live := max(a.live.Load(), 1)
	return time.Duration(ahead*per/live + per)
}

// deadlineError matches ErrDeadlineUnmeetable and context.DeadlineExceeded.
type deadlineError struct{ est, left time.Duration }

func (e *deadlineError) Error() string {
	return fmt.Sprintf("%v: estimated %v to finish, %v left before the deadline", ErrDeadlineUnmeetable, e.est, e.left)
}

func (e *deadlineError) Unwrap() []error {
	return []error{ErrDeadlineUnmeetable, context.DeadlineExceeded}
}

// admitMeta refuses a request of class m whose deadline cannot be met and
// counts an accepted one (the caller undoes the count if the engine
// refuses it).
func (d *Dispatcher) admitMeta(ctx context.Context, m meta) error {
	if dl, ok := ctx.Deadline(); ok {
		est := d.adm.estimate()
		if left := time.Until(dl); est > left {
			t := m.tenant
			if t == nil {
				t = d.book.def
			}
			t.stats.refused.Add(1)
			d.book.classes[m.prio].refused.Add(1)
			return &deadlineError{est: est, left: left}
		}
	}
	d.adm.accepted.Add(1)
	return nil
}

// admit is admitMeta for a request the caller made.
func (d *Dispatcher) admit(ctx context.Context, r *request) error {
	return d.admitMeta(ctx, r.meta)
}

// admitGo is admitMeta for Go, whose request the engine supplies.
func (d *Dispatcher) admitGo(ctx context.Context, m meta) error {
	return d.admitMeta(ctx, m)
}

// publishAdmission gives submitters the balancer's figures. Balancer only,
// once per turn, with admission on.
func (b *balancer) publishAdmission(a *admissionState) {
	a.answered.Store(b.answered)
	a.live.Store(int64(b.live))
	if b.meanPer > 0 {
		a.per.Store(int64(b.meanPer))
	}
}
