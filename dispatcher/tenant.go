package dispatcher

import (
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

// groupTenant is a new group's tenant.
func (d *Dispatcher) groupTenant(c *groupConfig, def string) *tenant {
	name := c.name
	if name == "" {
		name = def
	}
	return &tenant{share: max(c.share, 1), member: -1, stats: d.book.named(name)}
}
