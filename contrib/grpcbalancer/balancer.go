package grpcbalancer

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/gobalancer/balancer/strategies"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/balancer/base"
	"google.golang.org/grpc/balancer/endpointsharding"
	"google.golang.org/grpc/balancer/pickfirst"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/serviceconfig"
)

// builder builds the policy for one strategy, or for the generic policy when
// strategy is "".
type builder struct {
	name     string
	strategy string
}

var (
	_ balancer.Builder      = builder{}
	_ balancer.ConfigParser = builder{}
)

func (b builder) Name() string { return b.name }

func (b builder) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	return parseConfig(js, b.strategy)
}

// Build returns a balancer that, like grpc-go's least_request, keeps one
// pick_first child per endpoint (endpointsharding) and picks among the
// READY children with the strategy. endpointsharding works from
// resolver.State.Endpoints, which gRPC derives from Addresses when a
// resolver reports only those, so both kinds of resolver work.
func (b builder) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	lb := &lbBalancer{ClientConn: cc, strategy: b.strategy, index: resolver.NewEndpointMap[int]()}
	lb.child = endpointsharding.NewBalancer(lb, opts, balancer.Get(pickfirst.Name).Build, endpointsharding.Options{})
	return lb
}

// lbBalancer embeds the ClientConn to intercept the children's aggregated
// UpdateState and replace its round-robin picker with ours.
type lbBalancer struct {
	balancer.ClientConn
	child    balancer.Balancer
	strategy string // "" for the generic policy

	// mu serializes config changes (from gRPC) with child state updates
	// (from endpointsharding, on other goroutines). Lock order: mu, then
	// shared.mu. Never held while calling into the child.
	mu      sync.Mutex
	cfg     *Config
	cfgKey  string
	sh      *shared                    // strategy of the current picker; nil before the first READY child
	shKey   string                     // cfgKey sh was built with
	dyn     strategies.Dynamic         // sh.s when it supports membership changes
	index   *resolver.EndpointMap[int] // endpoint -> member index in sh.s
	weights []int                      // member index -> weight given to sh.s

	// The lock-free path (lockfree.go) keeps no strategy between updates:
	// sel is rebuilt when the weights or the config change, and cur (the
	// path the strategy declares, and its position or random state) when
	// the config does.
	sel    *selector
	selKey string // cfgKey and weights sel was built with
	cur    *cursor
	curKey string // cfgKey cur was built with
}

func (b *lbBalancer) UpdateClientConnState(s balancer.ClientConnState) error {
	cfg, ok := s.BalancerConfig.(*Config)
	if !ok {
		var err error
		if cfg, err = parseConfig(nil, b.strategy); err != nil {
			return err
		}
	}
	key, _ := json.Marshal(cfg) // cannot fail: plain fields
	b.mu.Lock()
	b.cfg, b.cfgKey = cfg, string(key)
	b.mu.Unlock()
	// The children get no config of their own (pick_first defaults), but
	// the health listener, as least_request enables it, so that client-side
	// health checks can take an endpoint out of READY.
	return b.child.UpdateClientConnState(balancer.ClientConnState{
		ResolverState: pickfirst.EnableHealthListener(s.ResolverState),
	})
}

func (b *lbBalancer) ResolverError(err error) { b.child.ResolverError(err) }

func (b *lbBalancer) UpdateSubConnState(balancer.SubConn, balancer.SubConnState) {
	// Deprecated by gRPC and never called for endpointsharding's children.
}

func (b *lbBalancer) ExitIdle() { b.child.ExitIdle() }

func (b *lbBalancer) Close() { b.child.Close() }

// UpdateState receives the children's aggregated state from endpointsharding.
func (b *lbBalancer) UpdateState(state balancer.State) {
	var ready []endpointsharding.ChildState
	for _, c := range endpointsharding.ChildStatesFromPicker(state.Picker) {
		if c.State.ConnectivityState == connectivity.Ready {
			ready = append(ready, c)
		}
	}
	b.mu.Lock()
	configured := b.cfg != nil
	b.mu.Unlock()
	if len(ready) == 0 || !configured {
		// Nothing to balance over (or, defensively, no config yet): endpointsharding's picker queues or fails
		// calls according to the children's state (CONNECTING, FAILURE).
		b.ClientConn.UpdateState(state)
		return
	}
	// Sorted so that a rebuild numbers members the same way on every
	// client that sees the same endpoints (the hashing strategies' rings
	// depend on member indices).
	slices.SortFunc(ready, func(x, y endpointsharding.ChildState) int {
		return compareEndpoints(x.Endpoint, y.Endpoint)
	})

	b.mu.Lock()
	defer b.mu.Unlock()
	p, err := b.lockFree(ready)
	if p == nil && err == nil {
		err = b.reconcile(ready)
		p = &picker{sh: b.sh, keyHeader: b.cfg.KeyHeader}
	}
	if err != nil {
		b.sh = nil
		b.ClientConn.UpdateState(balancer.State{
			ConnectivityState: connectivity.TransientFailure,
			Picker:            base.NewErrPicker(fmt.Errorf("grpcbalancer: %w", err)),
		})
		return
	}
	// A new picker value even when sh is unchanged: gRPC re-runs queued
	// picks only when it receives a new picker.
	b.ClientConn.UpdateState(balancer.State{ConnectivityState: connectivity.Ready, Picker: p})
}

// lockFree returns a lock-free picker over the ready endpoints, or nil when
// the strategy needs the mutex (or its period is too long to replay). Each
// call returns a new picker, as grpc-go's pickers are one per state update;
// the schedule or table behind it is rebuilt only when the weights change.
func (b *lbBalancer) lockFree(ready []endpointsharding.ChildState) (balancer.Picker, error) {
	if b.cur == nil || b.curKey != b.cfgKey {
		b.cur, b.curKey = newCursor(b.cfg), b.cfgKey
	}
	if b.cur.kind == lfNone {
		return nil, nil
	}
	weights := make([]int, len(ready))
	pickers := make([]balancer.Picker, len(ready))
	for i, c := range ready {
		weights[i] = WeightOf(c.Endpoint)
		pickers[i] = c.State.Picker
	}
	key := fmt.Sprint(b.cfgKey, weights)
	if b.sel == nil || b.selKey != key {
		sel, ok, err := newSelector(b.cfg, weights, b.cur)
		if err != nil || !ok {
			b.sel = nil
			return nil, err
		}
		b.sel, b.selKey = sel, key
	}
	// The mutex path's strategy is stale now: if the weights later need it
	// again, reconcile rebuilds it from the endpoints of that moment.
	b.sh = nil
	return &lockFreePicker{sel: b.sel, pickers: pickers}, nil
}

// reconcile makes b.sh's members the ready endpoints. A Dynamic strategy is
// changed in place (Add, SetWeight, Remove, and Forget once a removed
// member's calls are all reported: see shared), keeping its pending counts
// and the hashing rings stable; any other strategy, a config change or a failed
// change rebuilds it. Calls picked from a replaced strategy still report
// Done to that one (their closure holds it), so nothing is miscounted.
func (b *lbBalancer) reconcile(ready []endpointsharding.ChildState) error {
	if b.sh != nil && b.dyn != nil && b.shKey == b.cfgKey && b.update(ready) == nil {
		return nil
	}
	return b.rebuild(ready)
}

func (b *lbBalancer) rebuild(ready []endpointsharding.ChildState) error {
	weights := make([]int, len(ready))
	pickers := make([]balancer.Picker, len(ready))
	index := resolver.NewEndpointMap[int]()
	for i, c := range ready {
		weights[i] = WeightOf(c.Endpoint)
		pickers[i] = c.State.Picker
		index.Set(c.Endpoint, i)
	}
	s, err := strategies.New(b.cfg.Strategy, weights, b.cfg.options()...)
	if err != nil {
		return err
	}
	b.sh = newShared(s, pickers)
	b.dyn, _ = s.(strategies.Dynamic)
	b.shKey, b.index, b.weights = b.cfgKey, index, weights
	return nil
}

// update applies the membership change in place. It adds and re-weights
// before it removes, so a strategy never passes through an empty set.
func (b *lbBalancer) update(ready []endpointsharding.ChildState) error {
	sh := b.sh
	sh.exclusive()
	defer sh.unlockAll()
	seen := resolver.NewEndpointMap[struct{}]()
	for _, c := range ready {
		seen.Set(c.Endpoint, struct{}{})
		w := WeightOf(c.Endpoint)
		i, ok := b.index.Get(c.Endpoint)
		if !ok {
			var err error
			if i, err = b.dyn.Add(w); err != nil {
				return err
			}
			b.index.Set(c.Endpoint, i) // a new index, or one the strategy forgot
			sh.grow(i)
			for len(b.weights) <= i {
				b.weights = append(b.weights, 0)
			}
			b.weights[i] = w
		} else if b.weights[i] != w {
			if err := b.dyn.SetWeight(i, w); err != nil {
				return err
			}
			b.weights[i] = w
		}
		sh.pickers[i] = c.State.Picker
	}
	for ep, i := range b.index.All() {
		if _, ok := seen.Get(ep); ok {
			continue
		}
		if err := b.dyn.Remove(i); err != nil {
			return err
		}
		b.index.Delete(ep)
		sh.retire(i)
	}
	return nil
}

// compareEndpoints orders endpoints by their addresses.
func compareEndpoints(x, y resolver.Endpoint) int {
	for i := 0; i < len(x.Addresses) && i < len(y.Addresses); i++ {
		if c := compareStrings(x.Addresses[i].Addr, y.Addresses[i].Addr); c != 0 {
			return c
		}
	}
	return len(x.Addresses) - len(y.Addresses)
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
