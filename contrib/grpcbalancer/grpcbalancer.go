// Package grpcbalancer registers the strategies of
// github.com/gobalancer/balancer/strategies as gRPC load-balancing policies,
// so a gRPC client picks a backend with the same algorithms the in-process
// dispatcher uses to pick a worker.
//
// Import it for its side effect and select a policy by service config:
//
//	import _ "github.com/gobalancer/balancer/contrib/grpcbalancer"
//
//	grpc.NewClient(target, grpc.WithDefaultServiceConfig(
//		`{"loadBalancingConfig":[{"gobalancer_least_pending":{}}]}`))
//
// Every registered strategy name gets a policy named "gobalancer_" followed
// by the name with '-' turned into '_' (gRPC policy names are snake_case):
// least-pending becomes gobalancer_least_pending, consistent-hash becomes
// gobalancer_consistent_hash. The generic policy "gobalancer" takes the
// strategy from its config: {"gobalancer":{"strategy":"swrr"}}. See Config
// for the options.
//
// Each address (or endpoint) is one member; its weight comes from the
// resolver, set with AddressWithWeight or EndpointWithWeight (default 1).
// Only READY endpoints are members; when none is ready the policy reports
// the aggregate state of its pick_first children, as grpc-go's
// least_request does.
//
// Pick counts the call pending on the chosen member (Strategy.Pick) and the
// call's Done callback reports its completion and latency (Strategy.Done),
// so the load-aware strategies (least-pending, least-requests, latency, ...)
// see every RPC in flight.
//
// # Concurrency
//
// gRPC calls Pick concurrently, but strategies are single-owner unless
// they declare otherwise. Each policy takes the path its strategy declares
// (strategies.TraitsOf, strategies.Cyclic, strategies.Sampler), so a new
// strategy gets the fastest path its declarations allow, and one that
// declares nothing the safe one:
//
//   - Lock-free, for a strategies.Cyclic strategy (its picks a fixed
//     cycle: the round-robins, swrr's and nginx's smooth WRR, iwrr) or a
//     strategies.Sampler (one random draw a pick: random, weighted-random).
//     Their Done is a no-op, so every state update builds a new picker over
//     an immutable snapshot, as grpc-go's pickers are: one cycle of the
//     strategy's own picks, replayed through an atomic counter, or the
//     strategy itself, only read, drawing from a strategies.AtomicRand,
//     whose state an atomic add advances. Pick takes no lock and the call's
//     Done is the child's. A cycle longer than 65 536 picks keeps the
//     mutex instead.
//   - Read-locked, for a strategy that declares Traits.Concurrent (its
//     Pick and Done safe at once: consistent-hash, whose Pick only reads
//     its ring). Picks and Dones share a read lock; only membership
//     changes take it exclusively.
//   - Mutex, for every other strategy (the load-aware ones, whose every
//     Pick and Done changes per-member state the next pick reads, and any
//     under slow start, whose ramps change on Pick). Each channel (not the
//     process) has one mutex around its strategy, held for one
//     Strategy.Pick or Strategy.Done. Only Pick waits for it: a Done that
//     finds it held is left for the next holder to report first, so no pick
//     misses a completion that returned before it started. The call's Done
//     is a pooled object, not a closure: no allocation per call.
//
// On the last two paths a call is timed only if the strategy reads the
// elapsed time (it does not declare Traits.IgnoresElapsed), and reported
// only if its Done does anything (Traits.IgnoresDone).
//
// Sharding a load-aware strategy would remove the lock but also the global
// view that least-pending needs. BenchmarkPickVsGRPC measures both paths
// against grpc-go's round_robin and least_request; docs/beyond.md has the
// figures.
//
// The gRPC balancer API is experimental; this module pins the grpc-go
// version it is tested with.
package grpcbalancer

import (
	"strings"

	"github.com/gobalancer/balancer/strategies"
	"google.golang.org/grpc/balancer"
)

// Name is the generic policy, whose config names the strategy (default
// strategies.Default).
const Name = "gobalancer"

// PolicyName returns the gRPC policy name registered for a strategy name:
// "gobalancer_" + name with '-' replaced by '_'.
func PolicyName(strategy string) string {
	return Name + "_" + strings.ReplaceAll(strategy, "-", "_")
}

// Policies returns the policy name of every strategy, in strategies.Names()
// order, plus the generic Name last.
func Policies() []string {
	var p []string
	for _, n := range strategies.Names() {
		p = append(p, PolicyName(n))
	}
	return append(p, Name)
}

// init registers one policy per strategy. The strategies registry is filled
// by that package's init functions, which run before this one because we
// import it, so the list is complete here.
func init() {
	for _, n := range strategies.Names() {
		balancer.Register(builder{name: PolicyName(n), strategy: n})
	}
	balancer.Register(builder{name: Name})
}
