package httpbalancer

import (
	"errors"
	"fmt"
	"net/url"
	"slices"

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
// re-admission; the strategy is asked about it at once, so a weight it
// refuses is refused here, not at the re-admission.
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
// re-weighted. The result does not depend on the order of bs. Pickers see
// the change at once (one lock).
//
// The whole list is checked first: an empty list is ErrConfig (the proxy
// keeps at least one backend), a nil or relative URL ErrConfig, a URL given
// twice ErrDuplicateBackend, a bad weight or a list without a positive
// weight the error of strategies.CheckWeights. Then the change is applied
// in an order that never leaves the strategy without a member of positive
// weight: new members first, then the weights that are positive, then the
// zeros, then the removals. A refused call changes nothing: if the strategy
// refuses an addition or a weight that the checks could not foresee (slow
// start's lower weight limit, a strategy's member limit), what was done
// before it is undone and its error returned. Removals come last, when the
// strategies package's strategies cannot refuse them; a strategy that does
// anyway keeps those backends, the rest of the list is applied, and the
// error names them.
//
// A backend out of service (drained from the strategy) keeps its new
// weight for its re-admission, as with SetWeight. When the list leaves a
// positive weight only to such backends, one of them (the first in bs whose
// time out is over, else the first) gets its weight back in the strategy at
// once, and pick skips it while it is out, as for Remove.
func (p *Proxy) SetBackends(bs []Backend) error {
	if len(bs) == 0 {
		return fmt.Errorf("%w: no backends", ErrConfig)
	}
	want := make(map[string]bool, len(bs))
	weights := make([]int, len(bs))
	for i, b := range bs {
		if err := checkURL(b.URL); err != nil {
			return fmt.Errorf("backend %d: %w", i, err)
		}
		if want[b.URL.String()] {
			return fmt.Errorf("%w: backend %d: %s", ErrDuplicateBackend, i, b.URL)
		}
		want[b.URL.String()] = true
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
	now := p.cfg.now()
	defer p.countOut(now)

	// The members bs keeps (nil: a new one), and the one that must get its
	// weight back if nothing else will be positive in the strategy.
	kept := make([]*backend, len(bs))
	positive := false
	for k, nb := range bs {
		b := p.byURL[nb.URL.String()]
		kept[k] = b
		if nb.Weight > 0 && (b == nil || !b.drained) {
			positive = true
		}
	}
	var anchor *backend
	for k, b := range kept {
		if !positive && b != nil && b.drained && bs[k].Weight > 0 &&
			(anchor == nil || !anchor.serving(now) && b.serving(now)) {
			anchor = b
		}
	}

	var done []step
	defer func() {
		for _, st := range done {
			if st.added && p.byURL[st.b.url.String()] == st.b {
				p.startCheck(st.b)
			}
		}
	}()
	refused := func(err error) error {
		if uerr := p.undo(done); uerr != nil {
			return errors.Join(err, fmt.Errorf("httpbalancer: undoing the change failed, it is partly applied: %w", uerr))
		}
		done = nil
		return err
	}
	for k, nb := range bs {
		if kept[k] != nil {
			continue
		}
		i, err := p.dyn.Add(nb.Weight)
		if err != nil {
			return refused(fmt.Errorf("adding %s: %w", nb.URL, err))
		}
		b := &backend{i: i, url: nb.URL, weight: nb.Weight}
		p.insert(b)
		done = append(done, step{b: b, added: true})
	}
	for _, zeros := range []bool{false, true} {
		for k, b := range kept {
			w := bs[k].Weight
			if b == nil || (w == 0) != zeros {
				continue
			}
			st := step{b: b, weight: b.weight, drained: b.drained, was: b.weight}
			if b.drained {
				st.was = 0
			}
			switch {
			case b.drained && b != anchor:
				if err := p.askDrained(b, w); err != nil {
					return refused(fmt.Errorf("weighting %s: %w", b.url, err))
				}
				st.set = !b.drained
			case w != st.was:
				if err := p.dyn.SetWeight(b.i, w); err != nil {
					return refused(fmt.Errorf("weighting %s: %w", b.url, err))
				}
				st.set = true
				b.drained = false // the anchor, if it is b
			}
			b.weight = w
			done = append(done, st)
		}
	}

	var errs []error
	for _, b := range slices.Clone(p.order) {
		if b.removed || want[b.url.String()] {
			continue
		}
		if err := p.dyn.Remove(b.i); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", b.url, err))
			continue
		}
		p.retire(b)
	}
	if len(errs) > 0 {
		return fmt.Errorf("httpbalancer: backends applied but for %d the strategy refused to remove: %w", len(errs), errors.Join(errs...))
	}
	return nil
}

// step is one change SetBackends made, for undo: b was added, or had
// weight and drained, and the strategy's weight was (-1: unknown) unless
// set is false (the strategy was not called).
type step struct {
	b            *backend
	added        bool
	weight, was  int
	drained, set bool
}

// undo reverts steps, the last first, so that each reverted step goes back
// to a state the strategy accepted before. Called with mu held.
func (p *Proxy) undo(steps []step) error {
	var errs []error
	for _, st := range slices.Backward(steps) {
		b := st.b
		switch {
		case st.added:
			if err := p.dyn.Remove(b.i); err != nil {
				errs = append(errs, fmt.Errorf("removing %s again: %w", b.url, err))
				continue // it stays a member
			}
			delete(p.byURL, b.url.String())
			p.drop(b)
			continue
		case st.set && st.was < 0:
			errs = append(errs, fmt.Errorf("weighting %s again: its weight before is unknown", b.url))
			continue // it keeps the new one
		case st.set:
			if err := p.dyn.SetWeight(b.i, st.was); err != nil {
				errs = append(errs, fmt.Errorf("weighting %s again: %w", b.url, err))
				continue
			}
		}
		b.weight, b.drained = st.weight, st.drained
	}
	return errors.Join(errs...)
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

// remove takes b out of the strategy, then retires it. Called with mu held.
func (p *Proxy) remove(b *backend) error {
	err := p.dyn.Remove(b.i)
	if errors.Is(err, strategies.ErrLastMember) {
		if o := p.undrainOther(b); o != nil {
			if err = p.dyn.Remove(b.i); err != nil {
				p.redrain(o)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("removing %s: %w", b.url, err)
	}
	p.retire(b)
	p.countOut(p.cfg.now())
	return nil
}

// retire takes b, removed from the strategy, out of byURL; it stays for
// its requests in flight (done drops it), or goes now if it has none.
// Called with mu held.
func (p *Proxy) retire(b *backend) {
	b.removed = true
	b.stopCheck()
	delete(p.byURL, b.url.String())
	if b.inflight == 0 {
		p.drop(b)
	}
}

// setWeight records the user's weight and gives it to the strategy unless
// b is drained (out of service), in which case re-admission will. Called
// with mu held.
func (p *Proxy) setWeight(b *backend, weight int) error {
	if b.drained {
		// The package's check, with a second positive weight so that 0
		// (drain) passes as it does for SetWeight; then the strategy's.
		err := strategies.CheckWeights([]int{weight, 1})
		if err == nil {
			err = p.askDrained(b, weight)
		}
		if err != nil {
			return fmt.Errorf("weighting %s: %w", b.url, err)
		}
		b.weight = weight
		p.countOut(p.cfg.now())
		return nil
	}
	err := p.dyn.SetWeight(b.i, weight)
	if errors.Is(err, strategies.ErrLastMember) {
		if o := p.undrainOther(b); o != nil {
			if err = p.dyn.SetWeight(b.i, weight); err != nil {
				p.redrain(o)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("weighting %s: %w", b.url, err)
	}
	b.weight = weight
	p.countOut(p.cfg.now())
	return nil
}

// askDrained asks the strategy whether b, drained (weight 0 in it) while
// it is out of service, may come back at weight w, by giving it w and
// draining it again: w is only recorded for the re-admission, which must
// not be refused then, or b would stay drained for good. Should the strategy
// refuse the drain (none of the strategies package's does: another member
// has a positive weight), b keeps w in it and pick skips b while it is out.
// Called with mu held.
func (p *Proxy) askDrained(b *backend, w int) error {
	if w == 0 || w == b.weight {
		return nil
	}
	if err := p.dyn.SetWeight(b.i, w); err != nil {
		return err
	}
	if p.dyn.SetWeight(b.i, 0) != nil {
		b.drained = false
	}
	return nil
}

// undrainOther gives a drained backend other than b its weight back in the
// strategy (pick still skips it while it is out of service), so that the
// strategy, which refuses to lose its last positive member, lets b go. It
// returns that backend, or nil if there is none. Called with mu held.
func (p *Proxy) undrainOther(b *backend) *backend {
	for _, o := range p.order {
		if o != b && !o.removed && o.drained && o.weight > 0 && p.dyn.SetWeight(o.i, o.weight) == nil {
			o.drained = false
			return o
		}
	}
	return nil
}

// redrain drains o again after undrainOther, when the change it was for
// was refused anyway. Called with mu held.
func (p *Proxy) redrain(o *backend) {
	if p.dyn.SetWeight(o.i, 0) == nil {
		o.drained = true
	}
}
