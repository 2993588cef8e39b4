package grpcbalancer

import (
	"context"

	"github.com/gobalancer/balancer/strategies"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/resolver"
)

// weightKey is the attributes key of a member's weight.
type weightKey struct{}

// AddressWithWeight returns addr with its weight set in BalancerAttributes,
// for resolvers that report resolver.State.Addresses (gRPC moves an
// address's BalancerAttributes onto the endpoint it makes from it).
// Weights follow the strategies package: 0 drains, at most strategies.MaxWeight.
func AddressWithWeight(addr resolver.Address, weight int) resolver.Address {
	//lint:ignore SA1019 resolvers that still report Addresses need it; Endpoints are handled below
	addr.BalancerAttributes = addr.BalancerAttributes.WithValue(weightKey{}, weight)
	return addr
}

// EndpointWithWeight returns ep with its weight set in its Attributes, for
// resolvers that report resolver.State.Endpoints.
func EndpointWithWeight(ep resolver.Endpoint, weight int) resolver.Endpoint {
	ep.Attributes = ep.Attributes.WithValue(weightKey{}, weight)
	return ep
}

// WeightOf returns the weight set on ep, or on its first address, or 1.
func WeightOf(ep resolver.Endpoint) int {
	if w, ok := ep.Attributes.Value(weightKey{}).(int); ok {
		return w
	}
	if len(ep.Addresses) > 0 {
		//lint:ignore SA1019 weights set by AddressWithWeight, for resolvers that still report Addresses
		if w, ok := ep.Addresses[0].BalancerAttributes.Value(weightKey{}).(int); ok {
			return w
		}
	}
	return 1
}

// keyKey is the context key of a call's routing key.
type keyKey struct{}

// WithKey returns a context whose calls carry key as their routing key, for
// the hashing strategies (consistent-hash, bounded-hash): calls with the
// same key go to the same backend while membership is stable.
func WithKey(ctx context.Context, key uint64) context.Context {
	return context.WithValue(ctx, keyKey{}, key)
}

// routingKey returns the key of a call: WithKey's, else the strategies.StringKey hash of
// the first value of the outgoing metadata header (when configured), else 0.
func routingKey(ctx context.Context, header string) uint64 {
	if ctx == nil {
		return 0
	}
	if k, ok := ctx.Value(keyKey{}).(uint64); ok {
		return k
	}
	if header == "" {
		return 0
	}
	if md, ok := metadata.FromOutgoingContext(ctx); ok {
		if v := md.Get(header); len(v) > 0 {
			return strategies.StringKey(v[0])
		}
	}
	return 0
}
