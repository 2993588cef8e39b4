package httpbalancer

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// backend is one member: its URL, the weight the user gave it, why it is
// out of service if it is, and its counters. Guarded by Proxy.mu.
type backend struct {
	i       int // member index in the strategy
	url     *url.URL
	weight  int  // the user's weight; -1: unknown (a strategy without Weight)
	removed bool // by Remove; kept until its requests in flight finish
	drained bool // set to weight 0 in the strategy while out of service

	// Active health: unhealthy after UnhealthyThreshold failed checks in a
	// row, healthy again after HealthyThreshold passes in a row.
	unhealthy      bool
	passes, fails  int
	checkReason    string
	stop           context.CancelFunc
	checks, failed uint64

	// Passive ejection: out until ejectedUntil. ejections counts the ones
	// since the last success, for the doubling; a success of a request
	// picked before ejectedUntil (in flight when it failed) does not count,
	// or a flapping backend would never see its time grow.
	ejectedUntil time.Time
	ejections    int
	totalEjects  uint64
	ejectReason  string
	run5xx       int

	requests, errors uint64
	inflight         int
	latency          histogram
}

// serving reports whether b may take a request at now.
func (b *backend) serving(now time.Time) bool {
	return !b.removed && !b.unhealthy && !now.Before(b.ejectedUntil)
}

func (b *backend) started() { b.requests++; b.inflight++ }

func (b *backend) ended(elapsed time.Duration, failed bool) {
	b.inflight--
	if failed {
		b.errors++
	}
	b.latency.record(elapsed)
}

// reason says why b is not serving at now, for a 502 and for Stats.
func (b *backend) reason(now time.Time) string {
	var r []string
	if b.removed {
		r = append(r, "removed")
	}
	if b.unhealthy {
		r = append(r, "unhealthy: "+b.checkReason)
	}
	if now.Before(b.ejectedUntil) {
		r = append(r, fmt.Sprintf("ejected for %v more: %s", b.ejectedUntil.Sub(now).Round(time.Millisecond), b.ejectReason))
	}
	return strings.Join(r, " and ")
}

// reasons lists why no backend serves, at most a few, so that a 502 names
// the causes without growing with the pool. Called with mu held.
func (p *Proxy) reasons(now time.Time) string {
	const most = 4
	var r []string
	n := 0
	for _, b := range p.order {
		if b.removed {
			continue
		}
		n++
		if len(r) < most {
			why := b.reason(now)
			if why == "" {
				why = "weight 0"
			}
			r = append(r, b.url.Host+" "+why)
		}
	}
	if n > most {
		r = append(r, fmt.Sprintf("and %d more", n-most))
	}
	return strings.Join(r, "; ")
}

// eject takes b out of service for the doubling ejection time: at once for
// a connection error (is5xx false), after WithEject5xx consecutive 5xx
// otherwise. Called from the transport without mu.
func (p *Proxy) eject(a *attempt, cause error, is5xx bool) {
	if p.cfg.ejectFor == 0 {
		return
	}
	now := p.cfg.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	b := a.b
	if is5xx {
		b.run5xx++
		if p.cfg.eject5xx == 0 || b.run5xx < p.cfg.eject5xx {
			return
		}
		cause = fmt.Errorf("%d consecutive 5xx, the last %w", b.run5xx, cause)
	}
	if now.Before(b.ejectedUntil) || b.removed {
		return // requests in flight when it was ejected fail too: one ejection
	}
	d := p.cfg.ejectFor
	for k := 0; k < b.ejections && d < p.cfg.ejectMax; k++ {
		if d > p.cfg.ejectMax/2 { // doubling would pass the cap, or overflow
			d = p.cfg.ejectMax
		} else {
			d *= 2
		}
	}
	b.ejections++
	b.totalEjects++
	b.run5xx = 0
	b.ejectedUntil = now.Add(d)
	b.ejectReason = cause.Error()
	p.sync(b, now)
	p.countOut(now)
}

// succeeded resets the passive counters after an answer below 500: the
// doubling only if the request was picked after the last ejection ended.
func (p *Proxy) succeeded(a *attempt) {
	p.mu.Lock()
	defer p.mu.Unlock()
	a.b.run5xx = 0
	if !a.start.Before(a.b.ejectedUntil) {
		a.b.ejections = 0
	}
}

// sync drains b from the strategy (weight 0) while it is out of service,
// and gives it its weight back when it serves again; the caller recounts
// (countOut) after its changes. A dead backend answers fastest, so without
// the drain it would attract every pick of a load-aware strategy. The
// strategy refuses to drain its last positive member; pick skips that one
// instead. Re-admission goes through Dynamic.SetWeight from 0 to the
// weight: the seam for a strategy's slow start. Called with mu held.
func (p *Proxy) sync(b *backend, now time.Time) {
	in := b.serving(now)
	switch {
	case !in && !b.drained && p.dyn != nil && b.weight > 0:
		if p.dyn.SetWeight(b.i, 0) == nil {
			b.drained = true
		}
	case in && b.drained:
		if p.dyn.SetWeight(b.i, b.weight) == nil {
			b.drained = false
		}
	}
}

// countOut recounts the members restore must look at. O(backends), only on
// a change of state. Called with mu held.
func (p *Proxy) countOut(now time.Time) {
	p.nOut = 0
	for _, b := range p.order {
		if !b.removed && (b.drained || !b.serving(now)) {
			p.nOut++
		}
	}
}

// restore re-admits the backends whose ejection is over, then drains the
// ones a lack of members kept in the strategy if it now can. O(backends),
// only while some backend is out. Called with mu held.
func (p *Proxy) restore(now time.Time) {
	if p.nOut == 0 {
		return
	}
	for _, b := range p.order {
		if b.drained && b.serving(now) {
			p.sync(b, now)
		}
	}
	for _, b := range p.order {
		if !b.removed && !b.drained && !b.serving(now) {
			p.sync(b, now)
		}
	}
	p.countOut(now)
}
