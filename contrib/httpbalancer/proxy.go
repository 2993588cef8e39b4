// Package httpbalancer is an HTTP reverse proxy that picks a backend for each
// request with any strategy of github.com/gobalancer/balancer/strategies.
//
// The Proxy is an http.Handler built on httputil.ReverseProxy (with Rewrite,
// not the deprecated Director). Each request is counted in flight on its
// backend (Strategy.Pick) until the backend's response body is done (read to
// the end or closed), and then reported with its latency (Strategy.Done), so
// least-pending, least-requests and latency see every request in flight.
//
// Backends can be added, removed and re-weighted while the proxy serves
// (Add, Remove, SetWeight, SetBackends) when the strategy is
// strategies.Dynamic. A backend leaves traffic while it is ejected: passively
// after it failed (a connection error at once, or consecutive 5xx answers),
// for a time that doubles at each ejection, or actively when its health
// checks fail (WithHealthCheck). Stats reports each backend's counters and
// latency histogram.
//
// When a backend fails before answering, the proxy retries the request once
// on another backend when replaying is safe; otherwise the client gets 502
// Bad Gateway with a message that starts with "httpbalancer:". No request is
// dropped silently.
package httpbalancer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/gobalancer/balancer/strategies"
)

// Sentinel errors. Callers test them with errors.Is.
var (
	// ErrNoBackend: every backend is ejected, or the strategy picked an
	// index that is not a backend. The client gets 502 with the reasons.
	ErrNoBackend = errors.New("httpbalancer: no backend available")
	// ErrBackend wraps the transport error of a backend that failed.
	ErrBackend = errors.New("httpbalancer: backend failed")
	// ErrConfig: New was given no targets, a nil strategy or a bad option.
	ErrConfig = errors.New("httpbalancer: bad configuration")
	// ErrHealthCheck: a HealthCheck field is out of range. It matches
	// ErrConfig too.
	ErrHealthCheck = fmt.Errorf("%w: health check", ErrConfig)
	// ErrNotDynamic: membership and weight changes need a
	// strategies.Dynamic strategy.
	ErrNotDynamic = errors.New("httpbalancer: strategy is not dynamic")
	// ErrUnknownBackend: no backend has that URL.
	ErrUnknownBackend = errors.New("httpbalancer: unknown backend")
	// ErrDuplicateBackend: a backend with that URL is already a member.
	ErrDuplicateBackend = errors.New("httpbalancer: duplicate backend")
	// ErrClosed: the proxy was closed; requests get 502.
	ErrClosed = errors.New("httpbalancer: proxy closed")
)

// Proxy forwards each request to the backend its strategy picks.
//
// Safe for concurrent use: the strategy (not safe itself) and the backends'
// state are guarded by one mutex, held only for a Pick or a Done and their
// bookkeeping (well under a microsecond, against the tens of microseconds
// of a proxied round trip on loopback), or for a membership change. The
// Proxy owns the strategy; the caller must not use it after New.
type Proxy struct {
	cfg config
	rp  *httputil.ReverseProxy
	tr  http.RoundTripper
	// checkTr carries the health checks: a clone of tr (same settings, its
	// own connections) when tr is an *http.Transport, so a check's short
	// timeout never ends on a connection a proxied request reuses; tr
	// itself otherwise.
	checkTr http.RoundTripper

	mu      sync.Mutex
	s       strategies.Strategy
	dyn     strategies.Dynamic // s, when it can change membership; else nil
	weigher weigher            // s, when it tells a member's weight; else nil
	// The backends: the members and the removed ones whose requests are in
	// flight, never more (not every index the strategy ever handed out).
	byIndex map[int]*backend    // by strategy member index
	order   []*backend          // in the order they were added
	byURL   map[string]*backend // the members, by URL
	nOut    int                 // members not serving or drained: restore has work
	closed  bool
	checks  sync.WaitGroup // health-check goroutines
}

// weigher is implemented by the strategies package's weighted strategies.
type weigher interface{ Weight(i int) int }

var _ http.Handler = (*Proxy)(nil)

// New returns a proxy over targets, whose member i is targets[i] in s (build
// s with one weight per target, e.g. strategies.New(name, weights)). With
// WithHealthCheck, New starts the checks; Close stops them.
func New(targets []*url.URL, s strategies.Strategy, opts ...Option) (*Proxy, error) {
	if len(targets) == 0 {
		return nil, fmt.Errorf("%w: no targets", ErrConfig)
	}
	if s == nil {
		return nil, fmt.Errorf("%w: nil strategy", ErrConfig)
	}
	p := &Proxy{cfg: defaults(), s: s, byIndex: map[int]*backend{}, byURL: map[string]*backend{}}
	for _, o := range opts {
		if o != nil {
			o.apply(&p.cfg)
		}
	}
	if err := p.cfg.validate(); err != nil {
		return nil, err
	}
	p.dyn, _ = s.(strategies.Dynamic)
	p.weigher, _ = s.(weigher)
	for i, t := range targets {
		if err := checkURL(t); err != nil {
			return nil, fmt.Errorf("target %d: %w", i, err)
		}
		w := -1 // unknown: the strategy was built with it
		if p.weigher != nil {
			w = p.weigher.Weight(i)
		}
		if _, dup := p.byURL[t.String()]; dup {
			return nil, fmt.Errorf("%w: target %d: %s", ErrDuplicateBackend, i, t)
		}
		p.insert(&backend{i: i, url: t, weight: w})
	}
	p.tr = p.cfg.transport
	if p.tr == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64
		p.tr = t
	}
	p.checkTr = p.tr
	if t, ok := p.tr.(*http.Transport); ok && p.cfg.health != nil {
		p.checkTr = t.Clone()
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite:      p.rewrite,
		Transport:    transport{p},
		ErrorHandler: p.fail,
	}
	for _, b := range p.order {
		p.startCheck(b)
	}
	return p, nil
}

// checkURL refuses a target the ReverseProxy could not send to.
func checkURL(t *url.URL) error {
	if t == nil || t.Scheme == "" || t.Host == "" {
		return fmt.Errorf("%w: not an absolute URL: %v", ErrConfig, t)
	}
	return nil
}

// insert records b as the backend of its strategy index. Called with mu
// held (or before the proxy is shared).
func (p *Proxy) insert(b *backend) {
	p.byIndex[b.i] = b
	p.order = append(p.order, b)
	p.byURL[b.url.String()] = b
}

// drop forgets b, which is out of byURL and has no request in flight: it
// leaves Stats. Called with mu held.
func (p *Proxy) drop(b *backend) {
	if p.byIndex[b.i] != b {
		return
	}
	delete(p.byIndex, b.i)
	if k := slices.Index(p.order, b); k >= 0 {
		p.order = slices.Delete(p.order, k, k+1)
	}
}

// call is one proxied request: its routing key and the current attempt. It
// travels in the request's context from ServeHTTP to Rewrite and the
// transport, which ReverseProxy runs on ServeHTTP's goroutine.
type call struct {
	in  *http.Request
	key uint64
	cur *attempt
}

type callKey struct{}

// ServeHTTP picks a backend and proxies r to it, or answers 502.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := &call{in: r}
	if p.cfg.key != nil {
		c.key = p.cfg.key(r)
	}
	a, err := p.pick(c.key, 0, nil)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	c.cur = a
	// Safety net: the body wrapper normally ends the attempt; this catches
	// any path on which ReverseProxy returned without closing it.
	defer func() { p.done(c.cur, false) }()
	p.rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callKey{}, c)))
}

// rewrite routes the outbound request to the picked backend.
func (p *Proxy) rewrite(pr *httputil.ProxyRequest) {
	c := pr.In.Context().Value(callKey{}).(*call)
	pr.SetURL(c.cur.b.url)
	pr.SetXForwarded()
}

// fail answers 502 with the error's message, which names the cause.
func (p *Proxy) fail(w http.ResponseWriter, _ *http.Request, err error) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusBadGateway)
	fmt.Fprintln(w, err.Error())
}

// attempt is one backend's share of a call, pending in the strategy from
// pick until done.
type attempt struct {
	b     *backend
	start time.Time
	ended bool // guarded by Proxy.mu
}

// pick asks the strategy for a backend that serves. Backends out of
// service are normally drained from a Dynamic strategy (see sync) and not
// picked at all; otherwise (a static strategy, or the last backend) a pick
// of one is held pending while the strategy is asked again with a perturbed
// key, so that load-aware strategies see it busy and the hashing ones move
// on, and it is given back at the end. skip is a backend not to use (the one
// a retry is leaving), or nil.
func (p *Proxy) pick(key uint64, try int, skip *backend) (*attempt, error) {
	now := p.cfg.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	p.restore(now)
	var buf [8]int
	held := buf[:0]
	defer func() {
		for _, i := range held {
			p.s.Done(i, 0)
		}
	}()
	for n := 0; n <= 2*len(p.byURL); n++ {
		i := p.s.Pick(key + uint64(try+n)*0x9e3779b97f4a7c15)
		b, ok := p.byIndex[i]
		if !ok || b.removed {
			held = append(held, i)
			return nil, fmt.Errorf("%w: strategy picked %d, which is not a backend", ErrNoBackend, i)
		}
		if b != skip && b.serving(now) {
			b.started()
			return &attempt{b: b, start: now}, nil
		}
		held = append(held, i)
	}
	return nil, fmt.Errorf("%w: %s", ErrNoBackend, p.reasons(now))
}

// done ends an attempt once: the strategy stops counting it pending, and
// the backend's counters and histogram take it. failed: the backend did not
// answer, or answered 5xx.
func (p *Proxy) done(a *attempt, failed bool) {
	if a == nil {
		return
	}
	elapsed := p.cfg.now().Sub(a.start)
	p.mu.Lock()
	defer p.mu.Unlock()
	if a.ended {
		return
	}
	a.ended = true
	p.s.Done(a.b.i, elapsed) // a removed member's Done is ignored by the strategy
	a.b.ended(elapsed, failed)
	if a.b.removed && a.b.inflight == 0 {
		p.drop(a.b)
	}
}

// Close stops the health checks, waits for their goroutines and closes the
// idle connections. Requests after Close get 502 with ErrClosed; requests
// in flight finish. Membership changes after Close return ErrClosed. Close
// is idempotent.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for _, b := range p.order {
		b.stopCheck()
	}
	p.mu.Unlock()
	p.checks.Wait()
	p.CloseIdleConnections()
	return nil
}

// CloseIdleConnections closes the idle connections to the backends, when the
// transport supports it (the default one does). Call it when the proxy is
// no longer used (Close does).
func (p *Proxy) CloseIdleConnections() {
	for _, tr := range []http.RoundTripper{p.tr, p.checkTr} {
		if c, ok := tr.(interface{ CloseIdleConnections() }); ok {
			c.CloseIdleConnections()
		}
	}
}
