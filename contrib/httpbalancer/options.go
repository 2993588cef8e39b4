package httpbalancer

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gobalancer/balancer/strategies"
)

// Option configures a Proxy at construction.
type Option interface{ apply(*config) }

type config struct {
	key       func(*http.Request) uint64
	retry     bool
	ejectFor  time.Duration
	ejectMax  time.Duration
	eject5xx  int
	health    *HealthCheck
	transport http.RoundTripper
	now       func() time.Time

	// Which options were given, so that one that would have no effect is
	// refused instead of silently ignored.
	setEjectMax, setEject5xx bool
	nHealth                  int
}

// Defaults of the passive ejection, from Envoy's outlier detection
// (consecutive_5xx 5) with a shorter cap than its 300 s: a proxy in front of
// a handful of backends cannot spare one for five minutes.
const (
	DefaultEjectFor = time.Second
	DefaultEjectMax = 30 * time.Second
	DefaultEject5xx = 5
)

func defaults() config {
	return config{retry: true, ejectFor: DefaultEjectFor, ejectMax: DefaultEjectMax,
		eject5xx: DefaultEject5xx, now: time.Now}
}

// validate refuses values out of range and options that could have no effect.
func (c *config) validate() error {
	switch {
	case c.ejectFor < 0:
		return fmt.Errorf("%w: negative ejection time %v", ErrConfig, c.ejectFor)
	case c.ejectFor == 0 && c.setEjectMax:
		return fmt.Errorf("%w: WithEjectMax with ejection off (WithEjectFor(0))", ErrConfig)
	case c.ejectFor == 0 && c.setEject5xx && c.eject5xx > 0:
		return fmt.Errorf("%w: WithEject5xx with ejection off (WithEjectFor(0))", ErrConfig)
	case c.ejectFor > 0 && c.ejectMax < c.ejectFor:
		return fmt.Errorf("%w: ejection cap %v below the ejection time %v", ErrConfig, c.ejectMax, c.ejectFor)
	case c.eject5xx < 0:
		return fmt.Errorf("%w: negative 5xx ejection count %d", ErrConfig, c.eject5xx)
	case c.nHealth > 1:
		return fmt.Errorf("%w: WithHealthCheck given %d times", ErrConfig, c.nHealth)
	}
	if c.health != nil {
		return c.health.fill()
	}
	return nil
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithKey sets how a request's routing key is computed, for the hashing
// strategies (consistent-hash, bounded-hash). The default key is 0 for every
// request. See KeyHeader and KeyPath.
func WithKey(key func(*http.Request) uint64) Option {
	return optionFunc(func(c *config) { c.key = key })
}

// KeyHeader keys a request by the strategies.StringKey hash of a header's value (for
// example a user or session id), so one client sticks to one backend.
func KeyHeader(name string) func(*http.Request) uint64 {
	name = http.CanonicalHeaderKey(name)
	return func(r *http.Request) uint64 {
		if v := r.Header[name]; len(v) > 0 {
			return strategies.StringKey(v[0])
		}
		return 0
	}
}

// KeyPath keys a request by the strategies.StringKey hash of its URL path, so one resource
// is served from one backend's cache.
func KeyPath(r *http.Request) uint64 { return strategies.StringKey(r.URL.Path) }

// WithRetry turns the single retry on another backend on or off (default
// on). A request is retried once when the backend fails before answering and
// replaying it is safe: it has no body, and either its method is idempotent
// or the connection was never established (see Proxy).
func WithRetry(on bool) Option { return optionFunc(func(c *config) { c.retry = on }) }

// WithEjectFor sets how long a backend is ejected the first time it fails
// (default 1 s; 0 turns passive ejection off). Each further ejection without
// a success in between doubles the time, up to WithEjectMax; when it is
// over, the backend is re-admitted and the next request that picks it probes
// it.
func WithEjectFor(d time.Duration) Option { return optionFunc(func(c *config) { c.ejectFor = d }) }

// WithEjectMax caps the doubling ejection time (default 30 s; at least the
// WithEjectFor time).
func WithEjectMax(d time.Duration) Option {
	return optionFunc(func(c *config) { c.ejectMax, c.setEjectMax = d, true })
}

// WithEject5xx sets how many consecutive 5xx responses eject a backend
// (default 5, as Envoy's consecutive_5xx; 0: a 5xx never ejects). A
// connection error (refused, reset, no answer) ejects at once. The 5xx
// response itself is passed to the client: the backend did answer.
func WithEject5xx(n int) Option {
	return optionFunc(func(c *config) { c.eject5xx, c.setEject5xx = n, true })
}

// WithTransport sets the RoundTripper that talks to the backends, for the
// proxied requests and the health checks (default: a clone of
// http.DefaultTransport keeping up to 64 idle connections per backend,
// enough for a busy proxy not to churn connections). The health checks run
// on a clone of an *http.Transport, with the same settings and connections
// of their own; any other RoundTripper carries both.
func WithTransport(rt http.RoundTripper) Option {
	return optionFunc(func(c *config) { c.transport = rt })
}

// HealthCheck configures active health checks: every Interval, each backend
// gets a GET of Path (on its host, whatever the target's own path), and a
// 2xx answer within Timeout passes. UnhealthyThreshold consecutive failures
// eject the backend; HealthyThreshold consecutive passes re-admit it. A zero
// field takes its default; a negative one is an error.
type HealthCheck struct {
	Path               string        // default "/"; must start with "/"
	Interval           time.Duration // default 5 s
	Timeout            time.Duration // default 1 s or Interval if shorter; at most Interval
	HealthyThreshold   int           // default 2
	UnhealthyThreshold int           // default 2
}

// fill gives zero fields their defaults and checks the result.
func (h *HealthCheck) fill() error {
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Interval == 0 {
		h.Interval = 5 * time.Second
	}
	if h.Timeout == 0 {
		h.Timeout = min(time.Second, h.Interval)
	}
	if h.HealthyThreshold == 0 {
		h.HealthyThreshold = 2
	}
	if h.UnhealthyThreshold == 0 {
		h.UnhealthyThreshold = 2
	}
	switch {
	case !strings.HasPrefix(h.Path, "/"):
		return fmt.Errorf("%w: path %q does not start with /", ErrHealthCheck, h.Path)
	case h.Interval < 0:
		return fmt.Errorf("%w: negative interval %v", ErrHealthCheck, h.Interval)
	case h.Timeout < 0:
		return fmt.Errorf("%w: negative timeout %v", ErrHealthCheck, h.Timeout)
	case h.Timeout > h.Interval:
		// Checks of one backend run one after the other, so a longer
		// timeout would silently stretch the interval.
		return fmt.Errorf("%w: timeout %v above the interval %v", ErrHealthCheck, h.Timeout, h.Interval)
	case h.HealthyThreshold < 0 || h.UnhealthyThreshold < 0:
		return fmt.Errorf("%w: negative threshold (healthy %d, unhealthy %d)", ErrHealthCheck, h.HealthyThreshold, h.UnhealthyThreshold)
	}
	return nil
}

// WithHealthCheck turns active health checks on. Their goroutines (one per
// backend) run from New until Close.
func WithHealthCheck(h HealthCheck) Option {
	return optionFunc(func(c *config) { c.health = &h; c.nHealth++ })
}
