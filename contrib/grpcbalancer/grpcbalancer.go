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
// so least-pending, least-requests and latency see every RPC in flight.
//
// # Concurrency
//
// gRPC calls Pick concurrently, but strategies are single-owner. Each
// channel (not the process) has one mutex around its strategy, held only for
// one Strategy.Pick or Strategy.Done. Sharding the strategy would remove the
// lock but also the global view that least-pending needs (each shard would
// balance only its own share of the calls), so one short critical section
// per channel is the cheaper correct choice. BenchmarkPick measures it: a
// whole Pick+Done through the picker (two lock round trips, two clock reads
// and the Done closure, one 64-byte allocation) took 0.2-0.4 µs on a busy
// 2-core machine, against 5-70 ns for the bare strategy, next to the tens of
// µs of a loopback RPC.
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
