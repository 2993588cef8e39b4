package httpbalancer

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// startCheck starts b's health-check goroutine, if health checks are on.
// Called with mu held (or before the proxy is shared); Close waits for it.
func (p *Proxy) startCheck(b *backend) {
	h := p.cfg.health
	if h == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.stop = cancel
	u := *b.url
	u.Path, u.RawPath, u.RawQuery = h.Path, "", ""
	target := u.String()
	p.checks.Add(1)
	go func() {
		defer p.checks.Done()
		// The first check runs at once, so a backend that is down when
		// added leaves traffic within UnhealthyThreshold-1 intervals.
		t := time.NewTicker(h.Interval)
		defer t.Stop()
		for {
			err := p.probe(ctx, target, h.Timeout)
			if ctx.Err() != nil {
				return // stopped: the result says nothing about the backend
			}
			p.checked(b, err)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// stopCheck ends b's health checks; its goroutine returns within its
// current check (cancelled with it). Called with mu held.
func (b *backend) stopCheck() {
	if b.stop != nil {
		b.stop()
	}
}

// probe sends one health check: a GET that must answer 2xx within timeout.
// It uses the proxy's transport settings (TLS included) on connections of
// its own (checkTr): on shared ones, a check whose timeout ended just as
// its bodiless answer put the connection back could fail the proxied
// request that reused it with the check's "context deadline exceeded"
// (seen under load). It follows no redirect: a health endpoint that
// redirects (to a login page, say) is not healthy.
func (p *Proxy) probe(ctx context.Context, target string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	resp, err := p.checkTr.RoundTrip(req)
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return fmt.Errorf("no answer within %v", timeout)
		}
		return err
	}
	// Drain a little so the connection can be reused, not an unbounded body.
	_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// checked applies one check's result to b with the thresholds.
func (p *Proxy) checked(b *backend, err error) {
	h := p.cfg.health
	now := p.cfg.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if b.removed {
		return
	}
	was := b.unhealthy
	b.checks++
	if err != nil {
		b.failed++
		b.fails++
		b.passes = 0
		if !b.unhealthy && b.fails >= h.UnhealthyThreshold {
			b.unhealthy = true
		}
		b.checkReason = fmt.Sprintf("%d failed health checks in a row, the last: %v", b.fails, err)
	} else {
		b.passes++
		b.fails = 0
		if b.unhealthy && b.passes >= h.HealthyThreshold {
			b.unhealthy = false
		}
	}
	if b.unhealthy != was {
		p.sync(b, now)
		p.countOut(now)
	}
}
