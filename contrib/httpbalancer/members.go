package httpbalancer

import (
	"errors"
	"fmt"
	"net/url"

	"github.com/gobalancer/balancer/strategies"
)

// Backend is a target and its weight, for SetBackends.
type Backend struct {
	URL    *url.URL
	Weight int
}

// Add adds a backend with the given weight; it takes traffic at once (and
// its health checks start, if configured). The strategy must be
// strategies.Dynamic (else ErrNotDynamic); a URL already present is
// ErrDuplicateBackend; a bad weight is the strategy's error
// (strategies.ErrNegativeWeight, strategies.ErrTooLarge).
func (p *Proxy) Add(u *url.URL, weight int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, err := p.add(u, weight)
	if err != nil {
		return err
	}
	p.startCheck(b)
	return nil
}

// Remove takes the backend with that URL out: it gets no new request, and
// the requests in flight on it finish (its Stats stay until they have). The
// last backend cannot be removed (strategies.ErrLastMember).
func (p *Proxy) Remove(u *url.URL) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, err := p.find(u)
	if err != nil {
		return err
	}
	return p.remove(b)
}

// SetWeight changes the weight of the backend with that URL; 0 drains it
// (no new request). A backend out of service keeps the new weight for its
// re-admission.
func (p *Proxy) SetWeight(u *url.URL, weight int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, err := p.find(u)
	if err != nil {
		return err
	}
	return p.setWeight(b, weight)
}

// SetBackends makes the backends exactly bs, by URL: new ones are added,
// missing ones removed (their requests in flight finish), the others
// re-weighted. The whole list is checked first, so a bad entry changes
// nothing; pickers see the change at once (one lock). An empty list is
// ErrConfig: the proxy keeps at least one backend.
func (p *Proxy) SetBackends(bs []Backend) error {
	if len(bs) == 0 {
		return fmt.Errorf("%w: no backends", ErrConfig)
	}
	want := map[string]Backend{}
	weights := make([]int, len(bs))
	for i, b := range bs {
		if err := checkURL(b.URL); err != nil {
			return fmt.Errorf("backend %d: %w", i, err)
		}
		if _, dup := want[b.URL.String()]; dup {
			return fmt.Errorf("%w: backend %d: %s", ErrDuplicateBackend, i, b.URL)
		}
		want[b.URL.String()] = b
		weights[i] = b.Weight
	}
	if err := strategies.CheckWeights(weights); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.changeable(); err != nil {
		return err
	}
	// Add and re-weight before removing, so the strategy never runs out of
	// members on the way.
	var added []*backend
	defer func() {
		for _, b := range added {
			p.startCheck(b)
		}
	}()
	for _, nb := range bs {
		b, ok := p.byURL[nb.URL.String()]
		if !ok {
			b, err := p.add(nb.URL, nb.Weight)
			if err != nil {
				return err
			}
			added = append(added, b)
			continue
		}
		if err := p.setWeight(b, nb.Weight); err != nil {
			return err
		}
	}
	for key, b := range p.byURL {
		if _, keep := want[key]; !keep {
			if err := p.remove(b); err != nil {
				return err
			}
		}
	}
	return nil
}

// changeable refuses a change the proxy cannot make. Called with mu held.
func (p *Proxy) changeable() error {
	if p.closed {
		return ErrClosed
	}
	if p.dyn == nil {
		return fmt.Errorf("%w: %T", ErrNotDynamic, p.s)
	}
	return nil
}

func (p *Proxy) find(u *url.URL) (*backend, error) {
	if err := p.changeable(); err != nil {
		return nil, err
	}
	if u == nil {
		return nil, fmt.Errorf("%w: nil URL", ErrUnknownBackend)
	}
	b, ok := p.byURL[u.String()]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownBackend, u)
	}
	return b, nil
}

// add makes u a member. Called with mu held; the caller starts its check.
func (p *Proxy) add(u *url.URL, weight int) (*backend, error) {
	if err := p.changeable(); err != nil {
		return nil, err
	}
	if err := checkURL(u); err != nil {
		return nil, err
	}
	if _, dup := p.byURL[u.String()]; dup {
		return nil, fmt.Errorf("%w: %s", ErrDuplicateBackend, u)
	}
	i, err := p.dyn.Add(weight)
	if err != nil {
		return nil, fmt.Errorf("adding %s: %w", u, err)
	}
	b := &backend{i: i, url: u, weight: weight}
	p.insert(b)
	return b, nil
}

// remove takes b out of the strategy and of byURL; byIndex keeps it for
// its requests in flight (done drops it). Called with mu held.
func (p *Proxy) remove(b *backend) error {
	err := p.dyn.Remove(b.i)
	if errors.Is(err, strategies.ErrLastMember) && p.undrainOther(b) {
		err = p.dyn.Remove(b.i)
	}
	if err != nil {
		return fmt.Errorf("removing %s: %w", b.url, err)
	}
	b.removed = true
	b.stopCheck()
	delete(p.byURL, b.url.String())
	if b.inflight == 0 {
		p.byIndex[b.i] = nil
	}
	p.countOut(p.cfg.now())
	return nil
}

// setWeight records the user's weight and gives it to the strategy unless
// b is drained (out of service), in which case re-admission will. Called
// with mu held.
func (p *Proxy) setWeight(b *backend, weight int) error {
	if b.drained {
		// The strategy's own check, with a second positive weight so that
		// 0 (drain) passes as it does for SetWeight.
		if err := strategies.CheckWeights([]int{weight, 1}); err != nil {
			return fmt.Errorf("weighting %s: %w", b.url, err)
		}
		b.weight = weight
		return nil
	}
	err := p.dyn.SetWeight(b.i, weight)
	if errors.Is(err, strategies.ErrLastMember) && p.undrainOther(b) {
		err = p.dyn.SetWeight(b.i, weight)
	}
	if err != nil {
		return fmt.Errorf("weighting %s: %w", b.url, err)
	}
	b.weight = weight
	p.countOut(p.cfg.now())
	return nil
}

// undrainOther gives a drained backend other than b its weight back in the
// strategy (pick still skips it while it is out of service), so that the
// strategy, which refuses to lose its last positive member, lets b go.
// Called with mu held.
func (p *Proxy) undrainOther(b *backend) bool {
	for _, o := range p.byIndex {
		if o != nil && o != b && o.drained && o.weight > 0 && p.dyn.SetWeight(o.i, o.weight) == nil {
			o.drained = false
			return true
		}
	}
	return false
}
