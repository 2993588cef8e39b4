package httpbalancer

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
)

// transport is the ReverseProxy's RoundTripper: it sends the request to the
// picked backend and, when that fails, ejects the backend and retries once
// on another when replaying is safe. It ends the attempt when the response
// body is done, so the strategy counts the request in flight until then.
type transport struct{ p *Proxy }

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	p := t.p
	c, ok := req.Context().Value(callKey{}).(*call)
	if !ok {
		return p.tr.RoundTrip(req) // not a request ServeHTTP picked for
	}
	resp, err := p.tr.RoundTrip(req)
	if err == nil {
		return p.track(resp, c.cur), nil
	}
	first := c.cur
	if req.Context().Err() != nil {
		p.done(first, false)
		return nil, err // the client went away; the backend is not at fault
	}
	p.done(first, true)
	p.eject(first, err, false)
	err = fmt.Errorf("%w: %s: %w", ErrBackend, first.b.url.Host, err)
	if !p.cfg.retry || !replayable(req, err) {
		return nil, err
	}
	a, perr := p.pick(c.key, 1, first.b)
	if perr != nil {
		return nil, fmt.Errorf("%w; not retried: %w", err, perr)
	}
	c.cur = a
	retry := req.Clone(req.Context())
	u := *c.in.URL
	retry.URL = &u
	(&httputil.ProxyRequest{In: c.in, Out: retry}).SetURL(a.b.url)
	resp, rerr := p.tr.RoundTrip(retry)
	if rerr != nil {
		gone := req.Context().Err() != nil
		p.done(a, !gone)
		if !gone {
			p.eject(a, rerr, false)
		}
		rerr = fmt.Errorf("%w: %s: %w", ErrBackend, a.b.url.Host, rerr)
		return nil, fmt.Errorf("%w; retried: %w", err, rerr)
	}
	return p.track(resp, a), nil
}

// track ends a when resp's body is read to its end or closed, and feeds
// the status to the passive ejection. A protocol switch (101) keeps its
// writable body; ServeHTTP ends the attempt when the tunnel closes.
func (p *Proxy) track(resp *http.Response, a *attempt) *http.Response {
	is5xx := resp.StatusCode >= 500
	if is5xx {
		p.eject(a, fmt.Errorf("status %d", resp.StatusCode), true)
	} else {
		p.succeeded(a)
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return resp
	}
	resp.Body = &body{ReadCloser: resp.Body, p: p, a: a, failed: is5xx}
	return resp
}

// body ends its attempt at EOF or Close, whichever comes first.
type body struct {
	io.ReadCloser
	p      *Proxy
	a      *attempt
	failed bool
}

func (b *body) Read(buf []byte) (int, error) {
	n, err := b.ReadCloser.Read(buf)
	if err == io.EOF {
		b.p.done(b.a, b.failed)
	}
	return n, err
}

func (b *body) Close() error {
	b.p.done(b.a, b.failed)
	return b.ReadCloser.Close()
}

// replayable reports whether a failed request may be sent again: it must
// have no body (ReverseProxy sends none when the inbound one is empty) and
// either an idempotent method (as net/http's own retry rule, including an
// Idempotency-Key header) or a failure to connect, which means the backend
// never saw it.
func replayable(req *http.Request, err error) bool {
	if req.Body != nil && req.Body != http.NoBody {
		return false
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	if _, ok := req.Header["Idempotency-Key"]; ok {
		return true
	}
	if _, ok := req.Header["X-Idempotency-Key"]; ok {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
