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
	p.done(first)
	if req.Context().Err() != nil {
		return nil, err // the client went away; the backend is not at fault
	}
	p.eject(first.i)
	err = fmt.Errorf("%w: %s: %w", ErrBackend, p.targets[first.i].Host, err)
	if !p.cfg.retry || !replayable(req, err) {
		return nil, err
	}
	a, perr := p.pick(c.key, 1, first.i)
	if perr != nil {
		return nil, fmt.Errorf("%w; not retried: %w", err, perr)
	}
	c.cur = a
	retry := req.Clone(req.Context())
	u := *c.in.URL
	retry.URL = &u
	(&httputil.ProxyRequest{In: c.in, Out: retry}).SetURL(p.targets[a.i])
	resp, rerr := p.tr.RoundTrip(retry)
	if rerr != nil {
		p.done(a)
		if req.Context().Err() == nil {
			p.eject(a.i)
		}
		return nil, fmt.Errorf("%w; retried: %w: %s: %w", err, ErrBackend, p.targets[a.i].Host, rerr)
	}
	return p.track(resp, a), nil
}

// track ends a when resp's body is read to its end or closed. A protocol
// switch (101) keeps its writable body; ServeHTTP ends the attempt when the
// tunnel closes.
func (p *Proxy) track(resp *http.Response, a *attempt) *http.Response {
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return resp
	}
	resp.Body = &body{ReadCloser: resp.Body, p: p, a: a}
	return resp
}

// body ends its attempt at EOF or Close, whichever comes first.
type body struct {
	io.ReadCloser
	p *Proxy
	a *attempt
}

func (b *body) Read(buf []byte) (int, error) {
	n, err := b.ReadCloser.Read(buf)
	if err == io.EOF {
		b.p.done(b.a)
	}
	return n, err
}

func (b *body) Close() error {
	b.p.done(b.a)
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
