package dispatcher

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultTenant names the tenant of requests outside any group, in
// Stats.Tenants.
const DefaultTenant = "default"

// MaxShare bounds a group's Share.
const MaxShare = 1 << 16

// tenant is one flow of requests: a Group's, or the default one. Under
// Fair it is what the balancer shares hand-outs among; under every
// schedule it is one line of Stats.Tenants (tenants of one name add up).
type tenant struct {
	share  int
	member int // index in the fair queue's swrr, -1 when not in it; balancer only
	stats  *flowStats
	lane   lane // its part of the intake under Fair and ByDeadline (lanes.go)
}

// flowStats counts one tenant name's or one priority class's requests.
// queued and dispatched belong to the balancer goroutine; the rest is
// written by workers.
type flowStats struct {
	queued     int   // waiting in the balancer's schedule
	dispatched int64 // handed to a worker
	completed  atomic.Int64
	refused    atomic.Int64 // refused at admission (WithDeadlineAdmission)
	// wait holds the sampled waits, from the balancer taking a request to
	// its start; made at the first sample. Inline, the histograms of the
	// default tenant and the eight classes were 135 KB that every New
	// allocated and zeroed, most of it never used.
	wait atomic.Pointer[latency]
}

// recordWait adds one sampled wait. Worker goroutines.
func (f *flowStats) recordWait(w time.Duration) {
	h := f.wait.Load()
	if h == nil {
		h = new(latency)
		if !f.wait.CompareAndSwap(nil, h) {
			h = f.wait.Load()
		}
	}
	h.record(w)
}

// waitStats summarises the sampled waits (zero before the first).
func (f *flowStats) waitStats() LatencyStats {
	if h := f.wait.Load(); h != nil {
		return h.stats()
	}
	return LatencyStats{}
}

// tenantBook is a dispatcher's tenants: the default one, and the stats of
// every tenant name groups have used, which Stats reports.
type tenantBook struct {
	def     *tenant
	classes [MaxPriority + 1]flowStats
	// classLanes are the classes' parts of the intake under ByPriority
	// (lanes.go).
	classLanes [MaxPriority + 1]lane

	mu    sync.Mutex
	names map[string]*flowStats
	order []string // names in the order first seen
}

func newTenantBook() *tenantBook {
	b := &tenantBook{names: map[string]*flowStats{}}
	b.def = &tenant{share: 1, member: -1, stats: b.named(DefaultTenant)}
	return b
}

// named returns the stats of tenant name, made on first use.
func (b *tenantBook) named(name string) *flowStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.names[name]
	if !ok {
		s = new(flowStats)
		b.names[name] = s
		b.order = append(b.order, name)
	}
	return s
}

// Limit makes at most n of the group's tasks accepted and not yet
// answered at once (waiting in the dispatcher or running), as errgroup's
// SetLimit does: Go waits for one of them to finish (until the group's
// context ends, or Close begins: ErrClosed), and TryGo reports false. n
// must be at least 1.
func Limit(n int) GroupOption {
	return groupOptionFunc(func(c *groupConfig) {
		if n < 1 {
			c.fail(fmt.Errorf("%w: group limit must be at least 1, got %d", ErrBadOption, n))
			return
		}
		c.limit = n
	})
}

// Share is the group's weight among tenants under the Fair schedule
// (default 1; the default tenant of requests outside groups weighs 1).
// It is refused, with ErrWrongSchedule, under any other schedule.
func Share(w int) GroupOption {
	return groupOptionFunc(func(c *groupConfig) {
		if err := checkShare("group", w); err != nil {
			c.fail(err)
			return
		}
		c.share = w
	})
}

// checkShare refuses a share outside [1, MaxShare] (a group's or a
// stream's, as what says).
func checkShare(what string, w int) error {
	if w < 1 || w > MaxShare {
		return fmt.Errorf("%w: %s share must be in [1, %d], got %d", ErrBadOption, what, MaxShare, w)
	}
	return nil
}

// checkTenantName refuses an empty name and the default tenant's.
func checkTenantName(name string) error {
	if name == "" || name == DefaultTenant {
		return fmt.Errorf("%w: tenant name %q is empty or the default tenant's", ErrBadOption, name)
	}
	return nil
}

// Tenant names the group in Stats.Tenants: groups of one name add up to
// one line. Without it a group counts under "group". The name is not
// shown anywhere else.
//
// Tenant("") and Tenant(DefaultTenant) are refused with ErrBadOption, as
// a bad option is (every Go returns the error, TryGo reports false, Wait
// returns it): an empty name would read as no name, and the default
// tenant's line is kept for the requests outside any group or stream.
func Tenant(name string) GroupOption {
	return groupOptionFunc(func(c *groupConfig) {
		if err := checkTenantName(name); err != nil {
			c.fail(err)
			return
		}
		c.name = name
	})
}

// groupTenant is a new group's tenant.
func (d *Dispatcher[R]) groupTenant(c *groupConfig) *tenant {
	name := c.name
	if name == "" {
		name = "group"
	}
	return &tenant{share: max(c.share, 1), member: -1, stats: d.book.named(name)}
}
