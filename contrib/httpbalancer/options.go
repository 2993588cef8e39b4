package httpbalancer

import (
	"net/http"
	"time"

	"github.com/gobalancer/balancer/strategies"
)

// Option configures a Proxy at construction.
type Option interface{ apply(*config) }

type config struct {
	key       func(*http.Request) uint64
	retry     bool
	ejectFor  time.Duration
	transport http.RoundTripper
	now       func() time.Time
}

func defaults() config {
	return config{retry: true, ejectFor: time.Second, now: time.Now}
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

// WithEjectFor sets how long a backend that failed is skipped (default 1 s;
// 0 disables ejection). After that, the next request that picks it probes it.
func WithEjectFor(d time.Duration) Option { return optionFunc(func(c *config) { c.ejectFor = d }) }

// WithTransport sets the RoundTripper that talks to the backends (default: a
// clone of http.DefaultTransport keeping up to 64 idle connections per
// backend, enough for a busy proxy not to churn connections).
func WithTransport(rt http.RoundTripper) Option {
	return optionFunc(func(c *config) { c.transport = rt })
}
