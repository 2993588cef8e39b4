// Package httpbalancer is an HTTP reverse proxy that picks a backend for each
// request with any strategy of github.com/gobalancer/balancer/strategies.
//
// The Proxy is an http.Handler built on httputil.ReverseProxy (with Rewrite,
// not the deprecated Director). Each request is counted in flight on its
// backend (Strategy.Pick) until the backend's response body is done (read to
// the end or closed), and then reported with its latency (Strategy.Done), so
// least-pending, least-requests and latency see every request in flight.
//
// When a backend fails (connection refused, reset, no answer) the proxy
// ejects it for a while and, when replaying is safe, retries the request once
// on another backend; otherwise the client gets 502 Bad Gateway with a
// message that starts with "httpbalancer:". No request is dropped silently.
package httpbalancer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"

	"github.com/gobalancer/balancer/strategies"
)

// Sentinel errors. Callers test them with errors.Is.
var (
	// ErrNoBackend: every backend is ejected, or the strategy picked an
	// index that is not a backend. The client gets 502.
	ErrNoBackend = errors.New("httpbalancer: no backend available")
	// ErrBackend wraps the transport error of a backend that failed.
	ErrBackend = errors.New("httpbalancer: backend failed")
	// ErrConfig: New was given no targets, a nil strategy or a bad option.
	ErrConfig = errors.New("httpbalancer: bad configuration")
)

// Proxy forwards each request to the backend its strategy picks.
//
// Safe for concurrent use: the strategy (not safe itself) is guarded by one
// mutex, held only for a Pick or a Done (tens of nanoseconds for the
// strategies package's, against the tens of microseconds of a proxied round
// trip on loopback). The Proxy owns the strategy; the caller must not use
// it after New.
type Proxy struct {
	targets []*url.URL
	cfg     config
	rp      *httputil.ReverseProxy
	tr      http.RoundTripper

	mu       sync.Mutex
	s        strategies.Strategy
	dyn      strategies.Dynamic // s, when it can drain a member; else nil
	weigher  weigher            // s, when it tells a member's weight; else nil
	ejected  []time.Time        // backend i is skipped until ejected[i]
	drained  []int              // weight to restore on backend i drained by eject; 0: not drained
	nDrained int
}

// weigher is implemented by the strategies package's weighted strategies.
type weigher interface{ Weight(i int) int }

var _ http.Handler = (*Proxy)(nil)

// New returns a proxy over targets, whose member i is targets[i] in s (build
// s with one weight per target, e.g. strategies.New(name, weights)).
func New(targets []*url.URL, s strategies.Strategy, opts ...Option) (*Proxy, error) {
	if len(targets) == 0 {
		return nil, fmt.Errorf("%w: no targets", ErrConfig)
	}
	if s == nil {
		return nil, fmt.Errorf("%w: nil strategy", ErrConfig)
	}
	for i, t := range targets {
		if t == nil || t.Scheme == "" || t.Host == "" {
			return nil, fmt.Errorf("%w: target %d is not an absolute URL: %v", ErrConfig, i, t)
		}
	}
	p := &Proxy{targets: targets, cfg: defaults(), s: s,
		ejected: make([]time.Time, len(targets)), drained: make([]int, len(targets))}
	p.dyn, _ = s.(strategies.Dynamic)
	p.weigher, _ = s.(weigher)
	if p.weigher == nil {
		p.dyn = nil // cannot restore the weight it would drain
	}
	for _, o := range opts {
		if o != nil {
			o.apply(&p.cfg)
		}
	}
	if p.cfg.ejectFor < 0 {
		return nil, fmt.Errorf("%w: negative ejection time %v", ErrConfig, p.cfg.ejectFor)
	}
	p.tr = p.cfg.transport
	if p.tr == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64
		p.tr = t
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite:      p.rewrite,
		Transport:    transport{p},
		ErrorHandler: p.fail,
	}
	return p, nil
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
	a, err := p.pick(c.key, 0, -1)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	c.cur = a
	// Safety net: the body wrapper normally ends the attempt; this catches
	// any path on which ReverseProxy returned without closing it.
	defer func() { p.done(c.cur) }()
	p.rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callKey{}, c)))
}

// rewrite routes the outbound request to the picked backend.
func (p *Proxy) rewrite(pr *httputil.ProxyRequest) {
	c := pr.In.Context().Value(callKey{}).(*call)
	pr.SetURL(p.targets[c.cur.i])
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
	i     int
	start time.Time
	ended bool // guarded by Proxy.mu
}

// pick asks the strategy for a backend that is not ejected. Ejected
// backends are normally drained from a Dynamic strategy (see eject) and not
// picked at all; otherwise (a static strategy, or the last backend) an
// ejected pick is held pending while the strategy is asked again with a
// perturbed key, so that load-aware strategies see it busy and the hashing
// ones move on, and it is given back at the end. skip is a backend not to use
// (the one a retry is leaving), or -1.
func (p *Proxy) pick(key uint64, try int, skip int) (*attempt, error) {
	now := p.cfg.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.restore(now)
	var buf [8]int
	held := buf[:0]
	defer func() {
		for _, i := range held {
			p.s.Done(i, 0)
		}
	}()
	for n := 0; n <= 2*len(p.targets); n++ {
		i := p.s.Pick(key + uint64(try+n)*0x9e3779b97f4a7c15)
		if i < 0 || i >= len(p.targets) {
			return nil, fmt.Errorf("%w: strategy picked %d of %d backends", ErrNoBackend, i, len(p.targets))
		}
		if i != skip && !now.Before(p.ejected[i]) {
			return &attempt{i: i, start: now}, nil
		}
		held = append(held, i)
	}
	return nil, ErrNoBackend
}

// done ends an attempt once: the strategy stops counting it pending.
func (p *Proxy) done(a *attempt) {
	if a == nil {
		return
	}
	elapsed := p.cfg.now().Sub(a.start)
	p.mu.Lock()
	if !a.ended {
		a.ended = true
		p.s.Done(a.i, elapsed)
	}
	p.mu.Unlock()
}

// eject skips backend i for the configured time. A Dynamic strategy drains
// it (weight 0) so that it is not even picked: a dead backend answers fastest
// and would otherwise attract every pick of a load-aware strategy. The
// strategy refuses to drain its last backend; pick then skips it.
func (p *Proxy) eject(i int) {
	if p.cfg.ejectFor == 0 {
		return
	}
	until := p.cfg.now().Add(p.cfg.ejectFor)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ejected[i] = until
	if p.dyn == nil || p.drained[i] != 0 {
		return
	}
	if w := p.weigher.Weight(i); w > 0 && p.dyn.SetWeight(i, 0) == nil {
		p.drained[i] = w
		p.nDrained++
	}
}

// restore gives drained backends whose ejection is over their weight back;
// the next request that picks one probes it. O(backends), only while some
// backend is drained. Called with mu held.
func (p *Proxy) restore(now time.Time) {
	if p.nDrained == 0 {
		return
	}
	for i, w := range p.drained {
		if w != 0 && !now.Before(p.ejected[i]) && p.dyn.SetWeight(i, w) == nil {
			p.drained[i] = 0
			p.nDrained--
		}
	}
}

// CloseIdleConnections closes the idle connections to the backends, when the
// transport supports it (the default one does). Call it when the proxy is
// no longer used.
func (p *Proxy) CloseIdleConnections() {
	if c, ok := p.tr.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
